package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// open opens the page at path with the token in a fragment, as the
// command prints its addresses, and, for a run's panel, waits until its
// stream is live; the page has taken the token out of its address.
func open(t *testing.T, ctx context.Context, s *service, path string) {
	t.Helper()
	browsertest.Do(t, ctx, "opening "+path, chromedp.Navigate(fmt.Sprintf("http://%s%s#token=%s", s.addr, path, s.token)))
	if strings.HasPrefix(path, "/devpanel/agents/") {
		live(t, ctx)
	}
	if href := browsertest.Eval[string](t, ctx, "reading the address", `location.href`); strings.Contains(href, "token") {
		t.Errorf("the page's address still has the token: %s", href)
	}
}

// live waits until the run's panel shown has its stream live and the ReAct
// views mounted.
func live(t *testing.T, ctx context.Context) {
	t.Helper()
	browsertest.WaitText(t, ctx, "#conn", "live")
	browsertest.WaitText(t, ctx, "#react-phase", "")
}

// follow runs actions that make the page open another, and waits until
// that one has loaded.
func follow(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, hangGuard)
	defer cancel()
	if _, err := chromedp.RunResponse(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// runTaskInPage types a task into the start page and runs it, as a person
// does; the run's panel opens. It returns the run's id, which names its
// agent too.
func runTaskInPage(t *testing.T, ctx context.Context, s *service, goal string) string {
	t.Helper()
	typeTask(t, ctx, s, goal)
	return runTyped(t, ctx, goal)
}

// typeTask opens the start page and types a task.
func typeTask(t *testing.T, ctx context.Context, s *service, goal string) {
	t.Helper()
	open(t, ctx, s, "/")
	browsertest.Do(t, ctx, "typing "+goal, chromedp.SendKeys(chromedp.ID("goal"), goal))
}

// runTyped runs the task typed in the start page, and returns its run's
// id once its panel is live.
func runTyped(t *testing.T, ctx context.Context, goal string) string {
	t.Helper()
	follow(t, ctx, "running "+goal, chromedp.Click(chromedp.ID("run")))
	live(t, ctx)
	return browsertest.Eval[string](t, ctx, "reading the run's agent", `decodeURIComponent(location.pathname.split("/")[3])`)
}

// runAsking asks, over HTTP, for a task whose tool call is refused, and
// waits until its agent asks the user.
func runAsking(t *testing.T, s *service, runID string) {
	t.Helper()
	code, res := s.do("POST", "/run", `{"runId":"`+runID+`","goal":"read ../secret"}`, map[string]string{"Authorization": "Bearer " + s.token, "Prefer": "respond-async"})
	if code != 202 {
		t.Fatalf("POST /run = %d %v", code, res)
	}
	s.waitState(runID, "the question", waiting)
}

// rows counts the timeline's rows.
func rows(t *testing.T, ctx context.Context) int {
	return browsertest.Eval[int](t, ctx, "counting rows", `document.querySelectorAll("#rows tr.row").length`)
}

// TestBrowserDevpanelShowsALiveRun: a task run from the start page opens
// its run's panel, where it shows as it runs: the phase, the tool call
// running in the monitor, then the answer, the task tree and the seed's
// events in the timeline.
func TestBrowserDevpanelShowsALiveRun(t *testing.T) {
	s := startService(t)
	ctx := browsertest.New(t, 1400, 1000)
	goal := "compute 6*7 and wait 1500ms then find restart"
	typeTask(t, ctx, s, goal)
	browsertest.Screenshot(t, ctx, "REACT_ARTIFACTS", "start")
	runTyped(t, ctx, goal)
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
	runTaskInPage(t, ctx, s, "compute 1+2")
	browsertest.WaitText(t, ctx, "#react-phase", "finished")
	// Input 1 is the run's configuration (agent-configure), 2 its request.
	browsertest.Do(t, ctx, "choosing input 2", chromedp.Click(chromedp.CSS(`#rows tr.row[data-seq="2"]`)))
	browsertest.WaitText(t, ctx, "#d-seq", "2 (user-run-task)")
	browsertest.WaitText(t, ctx, "#diff li.op-add", "add /requests/-")
	browsertest.WaitText(t, ctx, "#d-jobs li", "started agent/start-")
	browsertest.Screenshot(t, ctx, "REACT_ARTIFACTS", "timeline-diff")

	seqOfObserve := browsertest.Eval[string](t, ctx, "finding the tool's result", `[...document.querySelectorAll("#rows tr.row")].find(r => r.dataset.type === "toolkit-observe").dataset.seq`)
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
	visible = browsertest.Eval[[]string](t, ctx, "reading the visible rows", `[...document.querySelectorAll("#rows tr.row:not([hidden])")].map(r => r.dataset.type)`)
	if len(visible) != 1 || visible[0] != "agent-plan" {
		t.Errorf("searching agent.finished shows %v", visible)
	}
}

// TestBrowserTimeTravelRunsNoJob: the state after input 2 (the request;
// input 1 is the run's configuration) is shown with the jobs it calls for,
// and none of them runs.
func TestBrowserTimeTravelRunsNoJob(t *testing.T) {
	s := startService(t)
	ctx := browsertest.New(t, 1400, 1000)
	run := runTaskInPage(t, ctx, s, "compute 3*3")
	browsertest.WaitText(t, ctx, "#react-phase", "finished")
	started := `document.querySelectorAll("#jobs tr").length + ":" + [...document.querySelectorAll("#jobs tr")].map(r => r.children[1].textContent).join(",")`
	before := browsertest.Eval[string](t, ctx, "reading the job monitor", started)
	seq := s.seq(run)
	browsertest.Do(t, ctx, "travelling to input 2",
		chromedp.SetValue(chromedp.ID("tt-seq"), "2"),
		chromedp.Click(chromedp.ID("tt-go")),
	)
	browsertest.WaitText(t, ctx, "#tt-shown", "2")
	browsertest.WaitText(t, ctx, "#tt-jobs li", "agent/start-")
	browsertest.WaitText(t, ctx, "#tt-state", `"phase": "idle"`)
	browsertest.Screenshot(t, ctx, "REACT_ARTIFACTS", "time-travel")
	// Nothing ran: no job event came, and the journal did not move.
	if after := browsertest.Eval[string](t, ctx, "reading the job monitor", started); after != before {
		t.Errorf("the job monitor changed: %s, then %s", before, after)
	}
	if got := s.seq(run); got != seq {
		t.Errorf("the journal moved from %d to %d", seq, got)
	}
}

// TestBrowserFormSendsValidRefusesInvalid: the form made from the input
// schemas refuses an invalid input before sending it; the agent refuses a
// valid one of another run (each run is an agent of its own); a valid
// reply is sent, and finishes the run.
func TestBrowserFormSendsValidRefusesInvalid(t *testing.T) {
	s := startService(t)
	ctx := browsertest.New(t, 1400, 1000)
	runAsking(t, s, "form")
	seq := s.seq("form")
	open(t, ctx, s, panel("form")+"/")
	choose := func(typ string) {
		browsertest.Eval[bool](t, ctx, "choosing "+typ, `(() => { const f = document.getElementById("in-type"); f.value = "`+typ+`"; f.dispatchEvent(new Event("change")); return true })()`)
	}
	choose("user-run-task")
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
	if n := s.seq("form"); n != seq {
		t.Fatalf("an invalid input reached the journal: seq %d, was %d", n, seq)
	}
	choose("user-run-task")
	browsertest.Do(t, ctx, "filling another run's task",
		chromedp.SendKeys(chromedp.CSS(`#in-fields [name=runId]`), "form-1"),
		chromedp.SendKeys(chromedp.CSS(`#in-fields [name=goal]`), "compute 5*5"),
		chromedp.Click(chromedp.ID("in-send")),
	)
	browsertest.WaitText(t, ctx, "#in-msg.error", "Refused")
	browsertest.WaitText(t, ctx, "#in-msg.error", `run "form-1" has an agent of its own`)
	if n := s.seq("form"); n != seq {
		t.Fatalf("another run's task reached the journal: seq %d, was %d", n, seq)
	}
	choose("user-reply")
	browsertest.Do(t, ctx, "filling a reply",
		chromedp.SendKeys(chromedp.CSS(`#in-fields [name=runId]`), "form"),
		chromedp.SendKeys(chromedp.CSS(`#in-fields [name=content]`), "todo.txt"),
		chromedp.Click(chromedp.ID("in-send")),
	)
	browsertest.WaitText(t, ctx, "#in-msg.ok", fmt.Sprintf("Sent: input %d", seq+1))
	browsertest.WaitText(t, ctx, "#react-phase", "finished")
	browsertest.WaitText(t, ctx, "#react-answer", "review the plan")
	browsertest.Screenshot(t, ctx, "REACT_ARTIFACTS", "form-sent")
}

// TestBrowserHoldStepRelease: held, the user's reply is admitted but the
// jobs it calls for wait; each step applies exactly one input, shown in the
// timeline; release lets the run finish.
func TestBrowserHoldStepRelease(t *testing.T) {
	s := startService(t)
	ctx := browsertest.New(t, 1400, 1000)
	runAsking(t, s, "held")
	open(t, ctx, s, panel("held")+"/")
	browsertest.WaitText(t, ctx, "#react-phase", "waiting")
	browsertest.Do(t, ctx, "holding", chromedp.Click(chromedp.ID("hold")))
	browsertest.WaitText(t, ctx, "#held", "held: 0 jobs, 0 inputs waiting")
	seq := s.seq("held")
	browsertest.Do(t, ctx, "replying in the page",
		chromedp.SendKeys(chromedp.ID("react-goal"), "todo.txt"),
		chromedp.Click(chromedp.ID("react-run-task")),
	)
	browsertest.WaitText(t, ctx, "#react-msg", "replied")
	browsertest.WaitText(t, ctx, "#held", "held: 1 jobs, 0 inputs waiting")
	browsertest.WaitText(t, ctx, "#jobs .status-held", "held")
	browsertest.WaitText(t, ctx, fmt.Sprintf(`#rows tr.row[data-seq="%d"] td`, seq+1), "user-reply")
	if got := browsertest.Eval[string](t, ctx, "reading the phase", `document.getElementById("react-phase").textContent`); got != "waiting" {
		t.Fatalf("held, the phase is %s", got)
	}
	browsertest.Screenshot(t, ctx, "REACT_ARTIFACTS", "held")
	watchdog := func(key string) bool { return strings.HasPrefix(key, "agent/deadline-") }
	// Step until the tool's result is in: each step applies one input,
	// which the page shows; after it, once the jobs have stopped at the
	// hold again, the journal has moved by exactly one.
	seq++
	for steps := 1; ; steps++ {
		if steps > 6 {
			t.Fatalf("no tool result after %d steps", steps-1)
		}
		browsertest.Do(t, ctx, "stepping", chromedp.Click(chromedp.ID("step")))
		browsertest.WaitText(t, ctx, "#stepped", fmt.Sprintf("stepped: input %d", seq+1))
		s.quiet("held", watchdog)
		if got := s.seq("held"); got != seq+1 {
			t.Fatalf("step %d moved the journal from %d to %d", steps, seq, got)
		}
		seq++
		browsertest.WaitText(t, ctx, fmt.Sprintf(`#rows tr.row[data-seq="%d"]`, seq), "")
		if n := rows(t, ctx); n != seq {
			t.Fatalf("after step %d the timeline has %d rows, want %d", steps, n, seq)
		}
		typ := browsertest.Eval[string](t, ctx, "reading the last row", fmt.Sprintf(`document.querySelector('#rows tr.row[data-seq="%d"]').dataset.type`, seq))
		if typ == "toolkit-observe" {
			break
		}
		if n := browsertest.Eval[int](t, ctx, "counting tool results", `document.querySelectorAll("#react-tools td.ok").length`); n != 0 {
			t.Fatalf("a tool result showed before its input was applied")
		}
	}
	browsertest.WaitText(t, ctx, "#react-tools td.ok", "review the plan")
	browsertest.Screenshot(t, ctx, "REACT_ARTIFACTS", "stepped")
	browsertest.Do(t, ctx, "releasing", chromedp.Click(chromedp.ID("release")))
	browsertest.WaitText(t, ctx, "#react-phase", "finished")
	browsertest.WaitText(t, ctx, "#react-answer", "review the plan")
	browsertest.WaitText(t, ctx, "#held", "jobs run")
}

// TestBrowserDevpanelListsRuns: two runs are two agents: the devpanel's
// root lists both, and each opens its own panel, whose timeline has its
// run's inputs only; a task run from a run's panel is a new run, whose
// panel opens.
func TestBrowserDevpanelListsRuns(t *testing.T) {
	s := startService(t)
	ctx := browsertest.New(t, 1400, 1000)
	for _, body := range []string{`{"runId":"first","goal":"compute 6*7"}`, `{"runId":"second","goal":"count words in notes.txt"}`} {
		if code, res := s.do("POST", "/run", body, s.authed()); code != 200 || res["status"] != "finished" {
			t.Fatalf("POST /run %s = %d %v", body, code, res)
		}
	}
	open(t, ctx, s, "/devpanel/")
	browsertest.WaitText(t, ctx, "#agents tr:nth-child(2) a", "second")
	listed := browsertest.Eval[[]string](t, ctx, "reading the list", `[...document.querySelectorAll("#agents tr")].map(r => r.children[0].textContent + " " + r.children[1].textContent)`)
	if want := []string{"first operator", "second operator"}; !slices.Equal(listed, want) {
		t.Errorf("the devpanel lists %q, want %q", listed, want)
	}
	browsertest.Screenshot(t, ctx, "REACT_ARTIFACTS", "runs")
	follow(t, ctx, "opening second", chromedp.Click(chromedp.CSS(`#agents tr:nth-child(2) a`)))
	live(t, ctx)
	browsertest.WaitText(t, ctx, "#react-run", "run second: count words in notes.txt")
	browsertest.WaitText(t, ctx, "#react-phase", "finished")
	if n, seq := rows(t, ctx), s.seq("second"); n != seq {
		t.Errorf("second's timeline has %d rows, its journal %d inputs", n, seq)
	}
	inputs := browsertest.Eval[string](t, ctx, "reading the timeline", `[...document.querySelectorAll("#rows tr.row")].map(r => r.textContent).join("\n")`)
	if !strings.Contains(inputs, "second") || strings.Contains(inputs, "first") || strings.Contains(inputs, "6*7") {
		t.Errorf("second's timeline:\n%s", inputs)
	}
	browsertest.Screenshot(t, ctx, "REACT_ARTIFACTS", "second")
	follow(t, ctx, "running a new task from second's panel",
		chromedp.SendKeys(chromedp.ID("react-goal"), "compute 2+3"),
		chromedp.Click(chromedp.ID("react-run-task")),
	)
	browsertest.WaitText(t, ctx, "#react-answer", "compute 2+3: 5")
	third := browsertest.Eval[string](t, ctx, "reading the run's agent", `decodeURIComponent(location.pathname.split("/")[3])`)
	if third == "second" || !strings.HasPrefix(third, "run-") {
		t.Errorf("the new task ran in agent %q", third)
	}
	follow(t, ctx, "going back to all runs", chromedp.Click(chromedp.ID("react-runs")))
	browsertest.WaitText(t, ctx, "#agents tr:nth-child(3) a", "second")
}

// TestBrowserTreeOfThreeLevelsAndAReload: a task planned into a tree of
// three levels shows on the panel at every level, each task with its
// status and latest observation (a task with subtasks, its subtree's); the
// configuration file, changed while the run waits, is in force from the
// next step: the panel shows the new configuration, the timeline its
// agent.config, and the answer is written by the new template.
func TestBrowserTreeOfThreeLevelsAndAReload(t *testing.T) {
	file := filepath.Join(t.TempDir(), "react.yaml")
	writeConfig(t, file)
	s := startService(t, "-config", file)
	ctx := browsertest.New(t, 1500, 1000)
	goal := "compute 2*21 and notes (read missing.txt and count words in notes.txt) then wait 3000ms"
	typeTask(t, ctx, s, goal)
	runTyped(t, ctx, goal)
	browsertest.WaitText(t, ctx, "#react-config", "configuration "+file)
	browsertest.WaitText(t, ctx, `#react-tree li[data-task="t3"] > .st`, "running")

	writeConfig(t, file, `answer: '{{.Task}}: `, `answer: '{{.Task}} => `, "maxIterations: 12", "maxIterations: 10")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(b)
	browsertest.WaitText(t, ctx, "#react-config", hex.EncodeToString(digest[:])[:12])
	browsertest.WaitText(t, ctx, "#react-iteration", "of 10")
	browsertest.WaitText(t, ctx, "#rows .note", "agent.config")

	browsertest.WaitText(t, ctx, "#react-phase", "finished")
	browsertest.WaitText(t, ctx, "#react-answer", "compute 2*21 => 42")
	browsertest.WaitText(t, ctx, "#react-answer", "read missing.txt => not done")
	// Three levels: t2.1 under t2 under the root, each shown with its
	// status and latest observation.
	path := browsertest.Eval[string](t, ctx, "reading t2.1's ancestors", `(() => {
		const ids = [];
		for (let li = document.querySelector('#react-tree li[data-task="t2.1"]'); li; li = li.parentElement.closest('li')) ids.push(li.dataset.task);
		return ids.join(' < ');
	})()`)
	if path != "t2.1 < t2 < root" {
		t.Errorf("t2.1's ancestors on the panel: %s", path)
	}
	for task, want := range map[string]string{
		"root": "done", "t1": "done", "t2": "failed", "t2.1": "failed", "t2.2": "done", "t3": "done",
	} {
		browsertest.WaitText(t, ctx, fmt.Sprintf(`#react-tree li[data-task=%q] > .st`, task), want)
	}
	for task, want := range map[string]string{
		"t1": "calculator ok", "t2.1": "read_file invalid", "t2.2": "word_count ok", "t2": "word_count (t2.2) ok",
		"t3": "wait ok", "root": "wait (t3) ok",
	} {
		browsertest.WaitText(t, ctx, fmt.Sprintf(`#react-tree li[data-task=%q] > .obs`, task), want)
	}
	browsertest.Screenshot(t, ctx, "REACT_ARTIFACTS", "tree-three-levels")
}

// TestBrowserRecoveryOnThePanel: a task no rule plans sends the run to
// error, and the reflector recovers it by asking the user: the panel shows
// the recovery with the error it answered, and the question; the reply,
// typed in the panel, finishes the run.
func TestBrowserRecoveryOnThePanel(t *testing.T) {
	s := startService(t)
	ctx := browsertest.New(t, 1400, 1000)
	runTaskInPage(t, ctx, s, "sing a song")
	browsertest.WaitText(t, ctx, "#react-phase", "waiting")
	browsertest.WaitText(t, ctx, `#react-recoveries li[data-recovery="ask-user"]`, "ask the user after: the planner gave up")
	browsertest.WaitText(t, ctx, "#react-question", `Reply with another way to do "sing a song"`)
	browsertest.WaitText(t, ctx, "#react-iteration", "recoveries 1 of 2")
	browsertest.WaitText(t, ctx, "#rows .note", "agent.recover")
	browsertest.Screenshot(t, ctx, "REACT_ARTIFACTS", "recovery")
	browsertest.Do(t, ctx, "replying", chromedp.SendKeys(chromedp.ID("react-goal"), "compute 1+2"), chromedp.Click(chromedp.ID("react-run-task")))
	browsertest.WaitText(t, ctx, "#react-phase", "finished")
	browsertest.WaitText(t, ctx, "#react-answer", "sing a song: 3")
}

// planningServer is a server of OpenAI's chat completions API that plans as
// the rule planner would for goals of calculations ("compute 6*7 and
// compute 2*3"): plan_subtasks splits the goal at " and ", plan_task calls
// the calculator with the task's expression. Each reply streams one tool
// call and counts 90 prompt tokens and 5 completion tokens.
func planningServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string }
			Tools    []struct{ Function struct{ Name string } }
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Tools) != 1 || len(req.Messages) == 0 {
			http.Error(w, `{"error":{"message":"not a planner's request"}}`, http.StatusBadRequest)
			return
		}
		text, tool := req.Messages[len(req.Messages)-1].Content, req.Tools[0].Function.Name
		var args any = map[string]any{"subtasks": strings.Split(text, " and ")}
		if tool == planTaskTool {
			args = map[string]any{"tools": []string{"calculator"}, "parameters": map[string]string{"expression": strings.TrimPrefix(text, "compute ")}, "criteria": "number"}
		}
		a, _ := json.Marshal(args)
		arguments, _ := json.Marshal(string(a))
		const id = `"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"planner"`
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":%q,\"arguments\":%s}}]},\"finish_reason\":null}]}\n\n", id, tool, arguments)
		fmt.Fprintf(w, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n", id)
		fmt.Fprintf(w, "data: {%s,\"choices\":[],\"usage\":{\"prompt_tokens\":90,\"completion_tokens\":5,\"total_tokens\":95}}\n\ndata: [DONE]\n\n", id)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestBrowserBudgetOnThePanel: a run planned by a model, under a budget of
// 200 tokens, makes two calls (190 tokens, 95%), then the one that crosses
// it, and stops: the page shows the model's usage and that the budget is
// exhausted, the run in error with a budget alert, and the timeline the
// agent.budget note.
func TestBrowserBudgetOnThePanel(t *testing.T) {
	planner := planningServer(t)
	s := startServiceEnv(t, []string{"OPENAI_MODEL=planner", "OPENAI_BASE_URL=" + planner.URL + "/v1", "OPENAI_API_KEY=sk-test"}, "-budget-tokens", "200")
	ctx := browsertest.New(t, 1400, 1000)
	runTaskInPage(t, ctx, s, "compute 6*7 and compute 2*3 and compute 1+1")
	browsertest.WaitText(t, ctx, "#react-phase", "error")
	browsertest.WaitText(t, ctx, "#react-budget", "budget exhausted: the agent asks the planner no more (budget 200 tokens)")
	browsertest.WaitText(t, ctx, "#react-usage", "model: 3 calls · 285 tokens · $0.0000")
	browsertest.WaitText(t, ctx, "#react-alerts .alert", "budget")
	browsertest.WaitText(t, ctx, "#react-answer", "error: the budget of the planner's model is spent: 285 tokens, budget 200")
	browsertest.WaitText(t, ctx, "#rows .note", "agent.budget")
	if n := browsertest.Eval[int](t, ctx, "counting the calls", `document.querySelectorAll("#react-tools tr").length`); n != 2 {
		t.Errorf("%d tool calls, want 2: the third task was not planned", n)
	}
	browsertest.Screenshot(t, ctx, "REACT_ARTIFACTS", "budget")
}
