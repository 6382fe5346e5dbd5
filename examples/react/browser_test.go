package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser tests drive the devpanel in a real, headless Chromium
// (Debian's chromium, which .ci/run installs) against the command running
// as a real process on loopback. Screenshots go to $REACT_ARTIFACTS when
// set (look at them), else to the test's temporary directory.

const chromium = "/usr/bin/chromium"

func (s *service) url() string {
	return fmt.Sprintf("http://%s/devpanel/?token=%s", s.addr, s.token)
}

// newBrowser starts a headless Chromium and returns a context for its first
// tab.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must run the browser tests, and %s is missing (.ci/run installs Debian's chromium)", chromium)
		}
		t.Skipf("no %s: install Debian's chromium to run the browser tests", chromium)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// screenshot saves the page as name.png among the artefacts.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("REACT_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// do runs actions in the tab, failing the test on an error or a hang.
func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, hangGuard)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// jsEval evaluates a JavaScript expression in the tab.
func jsEval[T any](t *testing.T, ctx context.Context, what, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, hangGuard)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// waitJS waits until the expression is true.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	do(t, ctx, "waiting for "+what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(20*time.Millisecond)))
}

// waitText waits until an element sel shows text containing want.
func waitText(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	waitJS(t, ctx, fmt.Sprintf("%s to show %q", sel, want),
		fmt.Sprintf(`[...document.querySelectorAll(%q)].some(e => !e.closest("[hidden]") && e.textContent.includes(%q))`, sel, want))
}

// open opens the panel and waits until its stream is live.
func open(t *testing.T, ctx context.Context, s *service) {
	t.Helper()
	do(t, ctx, "opening the panel", chromedp.Navigate(s.url()))
	waitText(t, ctx, "#conn", "live")
	waitText(t, ctx, "#react-phase", "")
}

// runTaskInPage types a task into the ReAct view and runs it, as a person
// does.
func runTaskInPage(t *testing.T, ctx context.Context, goal string) {
	t.Helper()
	do(t, ctx, "running "+goal,
		chromedp.SendKeys(chromedp.ID("react-goal"), goal),
		chromedp.Click(chromedp.ID("react-run-task")),
	)
	waitText(t, ctx, "#react-msg", "queued")
}

// rows counts the timeline's rows.
func rows(t *testing.T, ctx context.Context) int {
	return jsEval[int](t, ctx, "counting rows", `document.querySelectorAll("#rows tr.row").length`)
}

// TestBrowserDevpanelShowsALiveRun: a task run from the page shows as it
// runs: the phase, the tool call running in the monitor, then the answer,
// the task tree and the seed's events in the timeline.
func TestBrowserDevpanelShowsALiveRun(t *testing.T) {
	s := startService(t)
	ctx := newBrowser(t)
	open(t, ctx, s)
	runTaskInPage(t, ctx, "compute 6*7 and wait 1500ms then find restart")
	waitText(t, ctx, "#react-phase", "act")
	waitText(t, ctx, "#react-tools tr", "running…")
	waitText(t, ctx, "#react-tree li", "wait 1500ms")
	screenshot(t, ctx, "live-run")
	waitText(t, ctx, "#react-phase", "finished")
	waitText(t, ctx, "#react-answer", "compute 6*7: 42")
	waitText(t, ctx, "#react-answer", "waited 1500 ms")
	waitText(t, ctx, "#react-tree .st-done", "done")
	for _, note := range []string{"user.input", "tool.request", "tool.result", "agent.transition", "agent.log", "agent.finished"} {
		waitText(t, ctx, "#rows .note", note)
	}
	if n := jsEval[int](t, ctx, "counting the tree", `document.querySelectorAll("#react-tree li").length`); n != 4 {
		t.Errorf("the task tree has %d nodes, want the root and 3 subtasks", n)
	}
	screenshot(t, ctx, "run-finished")
}

// TestBrowserTimelineDiffAndFilters: a chosen input shows the state diff
// it caused and the jobs it started; the filters narrow the rows.
func TestBrowserTimelineDiffAndFilters(t *testing.T) {
	s := startService(t)
	ctx := newBrowser(t)
	open(t, ctx, s)
	runTaskInPage(t, ctx, "compute 1+2")
	waitText(t, ctx, "#react-phase", "finished")
	do(t, ctx, "choosing input 1", chromedp.Click(chromedp.CSS(`#rows tr.row[data-seq="1"]`)))
	waitText(t, ctx, "#d-seq", "1 (user-run-task)")
	waitText(t, ctx, "#diff li.op-add", "add /requests/-")
	waitText(t, ctx, "#d-jobs li", "started agent/start-")
	screenshot(t, ctx, "timeline-diff")

	seqOfObserve := jsEval[string](t, ctx, "finding the tool's result", `[...document.querySelectorAll("#rows tr.row")].find(r => r.children[3].textContent === "toolkit-observe").dataset.seq`)
	do(t, ctx, "choosing the tool's result", chromedp.Click(chromedp.CSS(`#rows tr.row[data-seq="`+seqOfObserve+`"]`)))
	waitText(t, ctx, "#diff li", "add /observations/-")

	all := rows(t, ctx)
	jsEval[bool](t, ctx, "filtering by actor", `(() => { const f = document.getElementById("f-actor"); f.value = "toolkit"; f.dispatchEvent(new Event("change")); return true })()`)
	visible := jsEval[[]string](t, ctx, "reading the visible rows", `[...document.querySelectorAll("#rows tr.row:not([hidden])")].map(r => r.children[2].textContent)`)
	if len(visible) != 1 || visible[0] != "toolkit" || all < 5 {
		t.Errorf("filtered by toolkit: %v of %d rows", visible, all)
	}
	jsEval[bool](t, ctx, "clearing the filter", `(() => { const f = document.getElementById("f-actor"); f.value = ""; f.dispatchEvent(new Event("change")); return true })()`)
	do(t, ctx, "searching", chromedp.SendKeys(chromedp.ID("f-search"), "agent.finished"))
	visible = jsEval[[]string](t, ctx, "reading the visible rows", `[...document.querySelectorAll("#rows tr.row:not([hidden])")].map(r => r.children[3].textContent)`)
	if len(visible) != 1 || visible[0] != "agent-plan" {
		t.Errorf("searching agent.finished shows %v", visible)
	}
}

// TestBrowserTimeTravelRunsNoJob: the state after input 1 is shown with
// the jobs it calls for, and none of them runs.
func TestBrowserTimeTravelRunsNoJob(t *testing.T) {
	s := startService(t)
	ctx := newBrowser(t)
	open(t, ctx, s)
	runTaskInPage(t, ctx, "compute 3*3")
	waitText(t, ctx, "#react-phase", "finished")
	started := `document.querySelectorAll("#jobs tr").length + ":" + [...document.querySelectorAll("#jobs tr")].map(r => r.children[1].textContent).join(",")`
	before := jsEval[string](t, ctx, "reading the job monitor", started)
	seq := s.seq()
	do(t, ctx, "travelling to input 1",
		chromedp.SetValue(chromedp.ID("tt-seq"), "1"),
		chromedp.Click(chromedp.ID("tt-go")),
	)
	waitText(t, ctx, "#tt-shown", "1")
	waitText(t, ctx, "#tt-jobs li", "agent/start-")
	waitText(t, ctx, "#tt-state", `"phase": "idle"`)
	screenshot(t, ctx, "time-travel")
	// Nothing ran: no job event came, and the journal did not move.
	if after := jsEval[string](t, ctx, "reading the job monitor", started); after != before {
		t.Errorf("the job monitor changed: %s, then %s", before, after)
	}
	if got := s.seq(); got != seq {
		t.Errorf("the journal moved from %d to %d", seq, got)
	}
}

// TestBrowserFormSendsValidRefusesInvalid: the form made from the input
// schemas sends a valid input, which runs, and refuses an invalid one
// before sending it.
func TestBrowserFormSendsValidRefusesInvalid(t *testing.T) {
	s := startService(t)
	ctx := newBrowser(t)
	open(t, ctx, s)
	choose := `(() => { const f = document.getElementById("in-type"); f.value = "user-run-task"; f.dispatchEvent(new Event("change")); return true })()`
	jsEval[bool](t, ctx, "choosing user-run-task", choose)
	do(t, ctx, "filling an invalid input",
		chromedp.SendKeys(chromedp.CSS(`#in-fields [name=runId]`), "not valid!"),
		chromedp.SendKeys(chromedp.CSS(`#in-fields [name=goal]`), "compute 5*5"),
		chromedp.SendKeys(chromedp.CSS(`#in-fields [name=maxIterations]`), "0"),
		chromedp.Click(chromedp.ID("in-send")),
	)
	waitText(t, ctx, "#in-msg.error", "Not sent")
	waitText(t, ctx, "#in-msg.error", "/runId: does not match")
	waitText(t, ctx, "#in-msg.error", "/maxIterations: less than 1")
	screenshot(t, ctx, "form-refused")
	if n := s.seq(); n != 0 {
		t.Fatalf("an invalid input reached the journal: seq %d", n)
	}
	jsEval[bool](t, ctx, "choosing user-run-task again", choose)
	do(t, ctx, "filling a valid input",
		chromedp.SendKeys(chromedp.CSS(`#in-fields [name=runId]`), "form-1"),
		chromedp.SendKeys(chromedp.CSS(`#in-fields [name=goal]`), "compute 5*5"),
		chromedp.Click(chromedp.ID("in-send")),
	)
	waitText(t, ctx, "#in-msg.ok", "Sent: input 1")
	waitText(t, ctx, "#react-answer", "compute 5*5: 25")
	screenshot(t, ctx, "form-sent")
}

// TestBrowserHoldStepRelease: held, a task is admitted but its jobs wait;
// each step lets one job run; release lets the run finish.
func TestBrowserHoldStepRelease(t *testing.T) {
	s := startService(t)
	ctx := newBrowser(t)
	open(t, ctx, s)
	do(t, ctx, "holding", chromedp.Click(chromedp.ID("hold")))
	waitText(t, ctx, "#held", "held: 0 waiting")
	runTaskInPage(t, ctx, "compute 2+2 and compute 3+3")
	waitText(t, ctx, "#held", "held: 1 waiting")
	waitText(t, ctx, "#jobs .status-held", "held")
	waitText(t, ctx, "#rows tr.row td", "user-run-task")
	if got := jsEval[string](t, ctx, "reading the phase", `document.getElementById("react-phase").textContent`); got != "idle" {
		t.Fatalf("held, the phase is %s", got)
	}
	screenshot(t, ctx, "held")
	do(t, ctx, "stepping", chromedp.Click(chromedp.ID("step")))
	// The planner ran; now the tool call and the run's watchdog are held.
	waitText(t, ctx, "#react-phase", "act")
	waitText(t, ctx, "#held", "held: 2 waiting")
	if n := jsEval[int](t, ctx, "counting tool results", `document.querySelectorAll("#react-tools td.ok").length`); n != 0 {
		t.Fatalf("a held tool call ran")
	}
	// Which of the two came to the gate first is up to the scheduler:
	// step until the tool call has run, twice at most.
	do(t, ctx, "stepping", chromedp.Click(chromedp.ID("step")))
	waitText(t, ctx, "#held", "held: 1 waiting")
	if jsEval[bool](t, ctx, "is the call held", `[...document.querySelectorAll("#jobs tr")].some(r => r.children[0].textContent.startsWith("toolkit/") && r.children[1].textContent === "held")`) {
		do(t, ctx, "stepping", chromedp.Click(chromedp.ID("step")))
	}
	waitText(t, ctx, "#react-tools td.ok", "4")
	screenshot(t, ctx, "stepped")
	do(t, ctx, "releasing", chromedp.Click(chromedp.ID("release")))
	waitText(t, ctx, "#react-phase", "finished")
	waitText(t, ctx, "#react-answer", "compute 3+3: 6")
	waitText(t, ctx, "#held", "jobs run")
}
