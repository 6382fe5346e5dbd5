package main

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/internal/browsertest"
)

// artifacts names the directory the browser tests save their screenshots
// in, to look at them (else the test's temporary directory).
const artifacts = "SUPERVISOR_ARTIFACTS"

// TestBrowserPlannerPanel drives the planner's devpanel as a person would:
// a request typed in its form; its Jobs monitor links the research to the
// researcher's panel and the writing to the writer's; the timeline notes the
// findings and the answer, and time travel to the last input shows the
// answer in the planner's state; a click on the writing job opens the
// writer's panel, whose header says whose sub-agent it is and for which
// job, and links back to the planner's.
func TestBrowserPlannerPanel(t *testing.T) {
	offline(t)
	const token = "supervisor-test-token"
	team, err := OpenTeam(t.TempDir(), token, Offline(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := team.Planners.Create(PlannerID, httpbridge.OperatorName); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(team.Handler())
	t.Cleanup(func() {
		srv.Close()
		if err := team.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(browsertest.New(t, 1300, 900), 2*time.Minute)
	t.Cleanup(cancel)
	hash := "#token=" + url.QueryEscape(token)
	planner := "/planner/agents/" + PlannerID + "/"
	researcher, writer := ResearcherOf(PlannerID, 1), WriterOf(PlannerID, 1)

	browsertest.Do(t, ctx, "opening the planner's panel", chromedp.Navigate(srv.URL+planner+hash))
	browsertest.WaitText(t, ctx, "#conn", "live")
	browsertest.WaitJS(t, ctx, "the form's inputs", `[...document.querySelectorAll('#in-type option')].some(o => o.value === 'user-ask')`)
	browsertest.Do(t, ctx, "sending the request",
		chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('in-type'); s.value = 'user-ask'; s.dispatchEvent(new Event('change')) })()`),
		chromedp.SendKeys(chromedp.CSS(`#in-fields [name=request]`), "why is the sky blue?"),
		chromedp.Click(chromedp.ID("in-send")),
	)
	browsertest.WaitText(t, ctx, "#in-msg.ok", "Sent: input 1")

	link := func(key string) string {
		return `document.querySelector('#jobs tr[data-key="` + key + `"] a.subagent')`
	}
	browsertest.WaitJS(t, ctx, "the research job's link", link("planner/research-1")+` !== null`)
	browsertest.WaitJS(t, ctx, "the writing job's link", link("planner/write-1")+` !== null`)
	for key, want := range map[string]string{
		"planner/research-1": srv.URL + "/researcher/agents/" + researcher + "/" + hash,
		"planner/write-1":    srv.URL + "/writer/agents/" + writer + "/" + hash,
	} {
		if got := browsertest.Eval[string](t, ctx, "the link of "+key, link(key)+`.href`); got != want {
			t.Errorf("the job %s links to %q, want %q", key, got, want)
		}
	}
	if n := browsertest.Eval[int](t, ctx, "the split's link", `document.querySelectorAll('#jobs tr[data-key="planner/split-1"] a.subagent').length`); n != 0 {
		t.Errorf("the split, which delegates to nobody, has %d links", n)
	}
	answer := `The writer's answer to \"why is the sky blue?\", written from the researcher's findings`
	// The timeline's notes (Notes) say the findings and the answer.
	note := func(seq, has string) string {
		return `(document.querySelector('#rows tr[data-seq="` + seq + `"] .note')?.title || '').includes(` + "`" + has + "`" + `)`
	}
	browsertest.WaitJS(t, ctx, "the findings' note", note("3", "the researcher's findings on"))
	browsertest.WaitJS(t, ctx, "the answer's note", note("4", "The writer's answer to"))
	browsertest.Do(t, ctx, "travelling to the last input",
		chromedp.SetValue(chromedp.ID("tt-seq"), "4"),
		chromedp.Click(chromedp.ID("tt-go")),
	)
	browsertest.WaitText(t, ctx, "#tt-state", `"answer": "`+answer)
	state := browsertest.Eval[string](t, ctx, "the state shown", `document.getElementById('tt-state').textContent`)
	if !strings.Contains(state, `"phase": "done"`) || !strings.Contains(state, `"working": 1`) {
		t.Errorf("the planner's state after input 4:\n%s", state)
	}
	browsertest.Screenshot(t, ctx, artifacts, "planner")

	browsertest.Do(t, ctx, "following the writing job", chromedp.Click(chromedp.CSS(`#jobs tr[data-key="planner/write-1"] a.subagent`)))
	landOn(t, ctx, `location.pathname === '/writer/agents/`+writer+`/'`)
	browsertest.WaitText(t, ctx, "#conn", "live")
	browsertest.WaitText(t, ctx, "#delegated", "sub-agent of "+PlannerID+" for its job planner/write-1")
	browsertest.WaitJS(t, ctx, "the writer's text", note("2", "The writer's answer to"))
	browsertest.Screenshot(t, ctx, artifacts, "writer")
	browsertest.Do(t, ctx, "following the header back", chromedp.Click(chromedp.ID("delegated-link")))
	landOn(t, ctx, `location.pathname === '`+planner+`'`)
	browsertest.WaitText(t, ctx, "#conn", "live")

	browsertest.Do(t, ctx, "opening the researcher's panel", chromedp.Navigate(srv.URL+"/researcher/agents/"+researcher+"/"+hash))
	browsertest.WaitText(t, ctx, "#conn", "live")
	browsertest.WaitText(t, ctx, "#delegated", "sub-agent of "+PlannerID+" for its job planner/research-1")
	browsertest.WaitJS(t, ctx, "the researcher's findings", note("2", "the researcher's findings on"))
	browsertest.Screenshot(t, ctx, artifacts, "researcher")
}

// landOn waits, across the navigation a click started, until cond holds
// of the page it lands on: a wait that the navigation cuts off is waited
// again.
func landOn(t *testing.T, ctx context.Context, cond string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, browsertest.HangGuard)
	defer cancel()
	for {
		err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`document.readyState === 'complete' && (`+cond+`)`, chromedp.WithPollingInterval(20*time.Millisecond)))
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("landing on a page where %s: %v", cond, err)
		}
	}
}
