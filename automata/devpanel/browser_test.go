package devpanel_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/devpanel"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
	"github.com/moora-go/moora/automata/internal/readonlytest"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/internal/browsertest"
)

// TestBrowserMigratedJournal drives the page in headless Chromium on the
// journal of TestMigratedJournal: the rows of version 1 carry a "v1" badge
// (the row of version 2 none), the dropped ping is struck through with the
// reason beside it, its detail says it changed nothing, and time travel to
// it shows the migrated state. The screenshot is saved in
// $DEVPANEL_ARTIFACTS when it is set, to look at.
func TestBrowserMigratedJournal(t *testing.T) {
	ctx := newBrowser(t)
	_, _, f := migratedPanel(t)
	row := func(seq int) string { return fmt.Sprintf(`document.querySelector('#rows tr.row[data-seq="%d"]')`, seq) }
	badge := func(seq int) string {
		return fmt.Sprintf(`(() => { const b = %s.querySelector('.version'); return b && getComputedStyle(b).display !== 'none' ? b.textContent : '' })()`, row(seq))
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/?token="+token),
		poll(`document.querySelectorAll('#rows tr.row').length === 5`),
		poll(`document.getElementById('conn').textContent === 'live'`),
	)
	if err != nil {
		t.Fatal(err)
	}
	for seq, want := range []string{1: "v1", 2: "v1", 3: "v1", 4: "v1", 5: ""} {
		if seq == 0 {
			continue
		}
		if got, err := chromedp.Run(ctx, chromedp.Evaluate[string](badge(seq))); err != nil || got != want {
			t.Errorf("row %d's version badge: %q %v, want %q", seq, got, err, want)
		}
	}
	dropped, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(() => { const r = `+row(3)+`;
		return { dropped: r.classList.contains('dropped'), struck: getComputedStyle(r.children[3]).textDecorationLine,
			why: r.children[4].textContent, others: document.querySelectorAll('#rows tr.dropped').length } })()`))
	if err != nil {
		t.Fatal(err)
	}
	if dropped["dropped"] != true || dropped["struck"] != "line-through" || dropped["others"] != float64(1) ||
		dropped["why"] != `input "ping" dropped by the migration from version 1 to 2` {
		t.Errorf("the dropped row: %v", dropped)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#rows tr.row[data-seq="3"]`)),
		poll(`document.getElementById('d-seq').textContent === '3 (ping), dropped, spec version 1'`),
		poll(`document.getElementById('diff').textContent === 'no change'`),
		poll(`document.getElementById('d-input').textContent.includes('kept in the journal, not applied')`),
		chromedp.Click(chromedp.CSS(`#tt-go`)),
		poll(`document.getElementById('tt-shown').textContent === '3'`),
	)
	if err != nil {
		t.Fatal(err)
	}
	state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(JSON.parse(document.getElementById('tt-state').textContent))`))
	if want := `{"entries":[{"id":"n1","text":"a","by":"user"},{"id":"n2","text":"b","by":"user"}]}`; err != nil || state != want {
		t.Errorf("time travel to 3 shows %s %v, want %s", state, err, want)
	}

	screenshot(t, ctx, "migrated")
}

// TestBrowserFormLeavesOutReadOnly drives the input form of a panel on an
// agent whose spec marks the user message's timestamp readOnly: the form
// has no field for it and says the server assigns it, a message sent
// without it is accepted (the panel decodes with DecodeClientInput), and
// the journal holds the admission step's stamp. The llm's input, whose
// timestamp is not readOnly, keeps its field.
func TestBrowserFormLeavesOutReadOnly(t *testing.T) {
	ctx := newBrowser(t)
	store, err := bolt.Open(filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	stamp := func(_ decl.AgentState, in decl.AgentInput) (decl.AgentInput, error) {
		if s, ok := in.(decl.Timestamped); ok {
			return s.WithTimestamp(1_000_042), nil
		}
		return in, nil
	}
	m, panel, err := devpanel.Open(store, devpanel.Config[decl.AgentState, decl.AgentInput]{
		Definition:  agent.Definition(),
		Decode:      readonlytest.DecodeClientInput,
		InputSchema: readonlytest.InputSchema(),
		Auth:        httpbridge.Bearer(token),
	}, journal.Options[decl.AgentState, decl.AgentInput]{
		Codec: journal.JSON[decl.AgentState](decl.DecodeInput),
	}, automata.WithAdmission(stamp))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(panel)
	t.Cleanup(func() {
		panel.Close()
		srv.Close()
		if err := m.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})

	choose := func(typ string) chromedp.Action[chromedp.Void] {
		return chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('in-type'); s.value = '` + typ + `'; s.dispatchEvent(new Event('change')) })()`)
	}
	fields := `[...document.querySelectorAll('#in-fields [name]')].map((e) => e.name)`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/?token="+token),
		poll(`document.querySelectorAll('#in-type option').length === 2`),
		choose("send-assi-message"),
	); err != nil {
		t.Fatal(err)
	}
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](fields)); err != nil || !slices.Equal(got, []string{"id", "content", "timestamp"}) {
		t.Errorf("the fields of send-assi-message: %q %v, want id, content and timestamp", got, err)
	}
	if err := chromedp.Do(ctx, choose("send-user-message")); err != nil {
		t.Fatal(err)
	}
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](fields)); err != nil || !slices.Equal(got, []string{"id", "content"}) {
		t.Errorf("the fields of send-user-message: %q %v, want id and content", got, err)
	}
	if err := chromedp.Do(ctx,
		poll(`document.querySelector('#in-fields p.assigned').textContent === 'Assigned by the server (readOnly): timestamp'`),
		chromedp.SendKeys(chromedp.CSS(`#in-fields [name=id]`), "f1"),
		chromedp.SendKeys(chromedp.CSS(`#in-fields [name=content]`), "from the form"),
		chromedp.Click(chromedp.ID("in-send")),
		poll(`(() => { const m = document.querySelector('#in-msg.ok'); return m !== null && m.textContent === 'Sent: input 1' })()`),
	); err != nil {
		msg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('in-msg').textContent`))
		t.Fatalf("%v (the form says %q)", err, msg)
	}
	// The page's copy of the state is null where the agent's slices are
	// nil, and the first message's diff adds to the slice: the page's
	// stream restarts once (from its last id) before it is live again.
	if err := chromedp.Do(ctx, poll(`document.getElementById('conn').textContent === 'live'`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "form-readonly")
	entries, err := m.Inputs(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := decl.SendUserMessage{ID: "f1", Content: "from the form", Timestamp: 1_000_042}
	if len(entries) != 1 || entries[0].Input != want {
		t.Errorf("the journal holds %+v, want %+v", entries, want)
	}
}

// newBrowser starts headless Chromium for a test, with a window of
// 1300×800, and returns its first tab's context, bounded by two minutes.
// Without chromium the test is skipped, unless CI is set.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(browsertest.New(t, 1300, 800), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// poll waits until the JavaScript expression expr is truthy.
func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(20*time.Millisecond))
}

// screenshot saves the page as name.png in $DEVPANEL_ARTIFACTS when it is
// set, to look at, else in the test's temporary directory.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	browsertest.Screenshot(t, ctx, "DEVPANEL_ARTIFACTS", name)
}
