package devpanel_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserMigratedJournal drives the page in headless Chromium on the
// journal of TestMigratedJournal: the rows of version 1 carry a "v1" badge
// (the row of version 2 none), the dropped ping is struck through with the
// reason beside it, its detail says it changed nothing, and time travel to
// it shows the migrated state. The screenshot is saved in
// $DEVPANEL_ARTIFACTS when it is set, to look at.
func TestBrowserMigratedJournal(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("chromium is not installed (apt-get install chromium); CI installs it and runs this test")
		}
		t.Fatal("CI is set but chromium is not installed: .ci/run installs it")
	}
	_, _, f := migratedPanel(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:0:0],
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.WindowSize(1300, 800),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	poll := func(expr string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(20*time.Millisecond))
	}
	row := func(seq int) string { return fmt.Sprintf(`document.querySelector('#rows tr.row[data-seq="%d"]')`, seq) }
	badge := func(seq int) string {
		return fmt.Sprintf(`(() => { const b = %s.querySelector('.version'); return b && getComputedStyle(b).display !== 'none' ? b.textContent : '' })()`, row(seq))
	}
	err = chromedp.Do(ctx,
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

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("DEVPANEL_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "migrated.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)
}
