package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/moora-go/moora/internal/browsertest"

	"github.com/chromedp/chromedp"
)

// The browser tests drive the devpanel in a real, headless Chromium
// (Debian's chromium, which .ci/run installs) against the command running
// as a real process on loopback. Screenshots go to $REACT_ARTIFACTS when
// set (look at them), else to the test's temporary directory.

func (s *service) url() string {
	return fmt.Sprintf("http://%s/devpanel/?token=%s", s.addr, s.token)
}

// open opens the panel and waits until its stream is live.
func open(t *testing.T, ctx context.Context, s *service) {
	t.Helper()
	browsertest.Do(t, ctx, "opening the panel", chromedp.Navigate(s.url()))
	browsertest.WaitText(t, ctx, "#conn", "live")
	browsertest.WaitText(t, ctx, "#react-phase", "")
}

// runTaskInPage types a task into the ReAct view and runs it, as a person
// does.
func runTaskInPage(t *testing.T, ctx context.Context, goal string) {
	t.Helper()
	browsertest.Do(t, ctx, "running "+goal,
		chromedp.SendKeys(chromedp.ID("react-goal"), goal),
		chromedp.Click(chromedp.ID("react-run-task")),
	)
	browsertest.WaitText(t, ctx, "#react-msg", "queued")
}

// rows counts the timeline's rows.
func rows(t *testing.T, ctx context.Context) int {
	return browsertest.Eval[int](t, ctx, "counting rows", `document.querySelectorAll("#rows tr.row").length`)
}

// TestBrowserDevpanelShowsALiveRun: a task run from the page shows as it
// runs: the phase, the tool call running in the monitor, then the answer,
// the task tree and the seed's events in the timeline.
func TestBrowserDevpanelShowsALiveRun(t *testing.T) {
	s := startService(t)
	ctx := browsertest.New(t, 1400, 1000)
	open(t, ctx, s)
	runTaskInPage(t, ctx, "compute 6*7 and wait 1500ms then find restart")
	browsertest.WaitText(t, ctx, "#react-phase", "act")
	browsertest.WaitText(t, ctx, "#react-tools tr", "running…")
	browsertest.WaitText(t, ctx, "#react-tree li", "wait 1500ms")
	browsertest.Screenshot(t, ctx, "REACT_ARTIFACTS", "live-run")
	browsertest.WaitText(t, ctx, "#react-phase", "finished")
	browsertest.WaitText(t, ctx, "#react-answer", "compute 6*7: 42")
	browsertest.WaitText(t, ctx, "#react-answer", "waited 1500 ms")
	browsertest.WaitText(t, ctx, "#react-tree .st-done", "done")
	for _, note := range []string{"user.input", "tool.request", "tool.result", "agent.transition", "agent.log", "agent.finished"} {
		browsertest.WaitText(t, ctx, "#rows .note", note)
	}
	if n := browsertest.Eval[int](t, ctx, "counting the tree", `document.querySelectorAll("#react-tree li").length`); n != 4 {
		t.Errorf("the task tree has %d nodes, want the root and 3 subtasks", n)
	}
	browsertest.Screenshot(t, ctx, "REACT_ARTIFACTS", "run-finished")
}

// TestBrowserTimelineDiffAndFilters: a chosen input shows the state diff
// it caused and the jobs it started; the filters narrow the rows.
func TestBrowserTimelineDiffAndFilters(t *testing.T) {
	s := startService(t)
	ctx := browsertest.New(t, 1400, 1000)
	open(t, ctx, s)
	runTaskInPage(t, ctx, "compute 1+2")
	browsertest.WaitText(t, ctx, "#react-phase", "finished")
	browsertest.Do(t, ctx, "choosing input 1", chromedp.Click(chromedp.CSS(`#rows tr.row[data-seq="1"]`)))
	browsertest.WaitText(t, ctx, "#d-seq", "1 (user-run-task)")
	browsertest.WaitText(t, ctx, "#diff li.op-add", "add /requests/-")
	browsertest.WaitText(t, ctx, "#d-jobs li", "started agent/start-")
	browsertest.Screenshot(t, ctx, "REACT_ARTIFACTS", "timeline-diff")

	seqOfObserve := browsertest.Eval[string](t, ctx, "finding the tool's result", `[...document.querySelectorAll("#rows tr.row")].find(r => r.children[3].textContent === "toolkit-observe").dataset.seq`)
	browsertest.Do(t, ctx, "choosing the tool's result", chromedp.Click(chromedp.CSS(`#rows tr.row[data-seq="`+seqOfObserve+`"]`)))
	browsertest.WaitText(t, ctx, "#diff li", "add /observations/-")

	all := rows(t, ctx)
	browsertest.Eval[bool](t, ctx, "filtering by actor", `(() => { const f = document.getElementById("f-actor"); f.value = "toolkit"; f.dispatchEvent(new Event("change")); return true })()`)
	visible := browsertest.Eval[[]string](t, ctx, "reading the visible rows", `[...document.querySelectorAll("#rows tr.row:not([hidden])")].map(r => r.children[2].textContent)`)
	if len(visible) != 1 || visible[0] != "toolkit" || all < 5 {
		t.Errorf("filtered by toolkit: %v of %d rows", visible, all)
	}
	browsertest.Eval[bool](t, ctx, "clearing the filter", `(() => { const f = document.getElementById("f-actor"); f.value = ""; f.dispatchEvent(new Event("change")); return true })()`)
	browsertest.Do(t, ctx, "searching", chromedp.SendKeys(chromedp.ID("f-search"), "agent.finished"))
	visible = browsertest.Eval[[]string](t, ctx, "reading the visible rows", `[...document.querySelectorAll("#rows tr.row:not([hidden])")].map(r => r.children[3].textContent)`)
	if len(visible) != 1 || visible[0] != "agent-plan" {
		t.Errorf("searching agent.finished shows %v", visible)
	}
}

// TestBrowserTimeTravelRunsNoJob: the state after input 1 is shown with
// the jobs it calls for, and none of them runs.
func TestBrowserTimeTravelRunsNoJob(t *testing.T) {
	s := startService(t)
	ctx := browsertest.New(t, 1400, 1000)
	open(t, ctx, s)
	runTaskInPage(t, ctx, "compute 3*3")
	browsertest.WaitText(t, ctx, "#react-phase", "finished")
	started := `document.querySelectorAll("#jobs tr").length + ":" + [...document.querySelectorAll("#jobs tr")].map(r => r.children[1].textContent).join(",")`
	before := browsertest.Eval[string](t, ctx, "reading the job monitor", started)
	seq := s.seq()
	browsertest.Do(t, ctx, "travelling to input 1",
		chromedp.SetValue(chromedp.ID("tt-seq"), "1"),
		chromedp.Click(chromedp.ID("tt-go")),
	)
	browsertest.WaitText(t, ctx, "#tt-shown", "1")
	browsertest.WaitText(t, ctx, "#tt-jobs li", "agent/start-")
	browsertest.WaitText(t, ctx, "#tt-state", `"phase": "idle"`)
	browsertest.Screenshot(t, ctx, "REACT_ARTIFACTS", "time-travel")
	// Nothing ran: no job event came, and the journal did not move.
	if after := browsertest.Eval[string](t, ctx, "reading the job monitor", started); after != before {
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
	ctx := browsertest.New(t, 1400, 1000)
	open(t, ctx, s)
	choose := `(() => { const f = document.getElementById("in-type"); f.value = "user-run-task"; f.dispatchEvent(new Event("change")); return true })()`
	browsertest.Eval[bool](t, ctx, "choosing user-run-task", choose)
	// The fields come in the order of agent.yaml.
	names := browsertest.Eval[[]string](t, ctx, "reading the fields", `[...document.querySelectorAll("#in-fields [name]")].map(e => e.name)`)
	if want := []string{"timestamp", "runId", "goal", "maxIterations", "maxDurationMs", "maxFailures"}; !slices.Equal(names, want) {
		t.Errorf("the form's fields are %q, want the spec's order %q", names, want)
	}
	browsertest.Do(t, ctx, "filling an invalid input",
		chromedp.SendKeys(chromedp.CSS(`#in-fields [name=runId]`), "not valid!"),
		chromedp.SendKeys(chromedp.CSS(`#in-fields [name=goal]`), "compute 5*5"),
		chromedp.SendKeys(chromedp.CSS(`#in-fields [name=maxIterations]`), "0"),
		chromedp.Click(chromedp.ID("in-send")),
	)
	browsertest.WaitText(t, ctx, "#in-msg.error", "Not sent")
	browsertest.WaitText(t, ctx, "#in-msg.error", "/runId: does not match")
	browsertest.WaitText(t, ctx, "#in-msg.error", "/maxIterations: less than 1")
	browsertest.Screenshot(t, ctx, "REACT_ARTIFACTS", "form-refused")
	if n := s.seq(); n != 0 {
		t.Fatalf("an invalid input reached the journal: seq %d", n)
	}
	browsertest.Eval[bool](t, ctx, "choosing user-run-task again", choose)
	browsertest.Do(t, ctx, "filling a valid input",
		chromedp.SendKeys(chromedp.CSS(`#in-fields [name=runId]`), "form-1"),
		chromedp.SendKeys(chromedp.CSS(`#in-fields [name=goal]`), "compute 5*5"),
		chromedp.Click(chromedp.ID("in-send")),
	)
	browsertest.WaitText(t, ctx, "#in-msg.ok", "Sent: input 1")
	browsertest.WaitText(t, ctx, "#react-answer", "compute 5*5: 25")
	browsertest.Screenshot(t, ctx, "REACT_ARTIFACTS", "form-sent")
}

// TestBrowserHoldStepRelease: held, a task is admitted but its jobs wait;
// each step applies exactly one input, shown in the timeline; release lets
// the run finish.
func TestBrowserHoldStepRelease(t *testing.T) {
	s := startService(t)
	ctx := browsertest.New(t, 1400, 1000)
	open(t, ctx, s)
	browsertest.Do(t, ctx, "holding", chromedp.Click(chromedp.ID("hold")))
	browsertest.WaitText(t, ctx, "#held", "held: 0 jobs, 0 inputs waiting")
	runTaskInPage(t, ctx, "compute 2+2 and compute 3+3")
	browsertest.WaitText(t, ctx, "#held", "held: 1 jobs, 0 inputs waiting")
	browsertest.WaitText(t, ctx, "#jobs .status-held", "held")
	browsertest.WaitText(t, ctx, "#rows tr.row td", "user-run-task")
	if got := browsertest.Eval[string](t, ctx, "reading the phase", `document.getElementById("react-phase").textContent`); got != "idle" {
		t.Fatalf("held, the phase is %s", got)
	}
	browsertest.Screenshot(t, ctx, "REACT_ARTIFACTS", "held")
	watchdog := func(key string) bool { return strings.HasPrefix(key, "agent/deadline-") }
	// Step until the tool's result is in: each step applies one input,
	// which the page shows; after it, once the jobs have stopped at the
	// hold again, the journal has moved by exactly one.
	seq := s.seq()
	for steps := 1; ; steps++ {
		if steps > 6 {
			t.Fatalf("no tool result after %d steps", steps-1)
		}
		browsertest.Do(t, ctx, "stepping", chromedp.Click(chromedp.ID("step")))
		browsertest.WaitText(t, ctx, "#stepped", fmt.Sprintf("stepped: input %d", seq+1))
		s.quiet(watchdog)
		if got := s.seq(); got != seq+1 {
			t.Fatalf("step %d moved the journal from %d to %d", steps, seq, got)
		}
		seq++
		browsertest.WaitText(t, ctx, fmt.Sprintf(`#rows tr.row[data-seq="%d"]`, seq), "")
		if n := rows(t, ctx); n != seq {
			t.Fatalf("after step %d the timeline has %d rows, want %d", steps, n, seq)
		}
		typ := browsertest.Eval[string](t, ctx, "reading the last row", fmt.Sprintf(`document.querySelector('#rows tr.row[data-seq="%d"]').children[3].textContent`, seq))
		if typ == "toolkit-observe" {
			break
		}
		if n := browsertest.Eval[int](t, ctx, "counting tool results", `document.querySelectorAll("#react-tools td.ok").length`); n != 0 {
			t.Fatalf("a tool result showed before its input was applied")
		}
	}
	browsertest.WaitText(t, ctx, "#react-tools td.ok", "4")
	browsertest.Screenshot(t, ctx, "REACT_ARTIFACTS", "stepped")
	browsertest.Do(t, ctx, "releasing", chromedp.Click(chromedp.ID("release")))
	browsertest.WaitText(t, ctx, "#react-phase", "finished")
	browsertest.WaitText(t, ctx, "#react-answer", "compute 3+3: 6")
	browsertest.WaitText(t, ctx, "#held", "jobs run")
}
