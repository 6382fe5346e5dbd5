package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/examples/react/decl"
)

// builtin returns the built-in configuration, the runs' in the tests below.
func builtin() decl.Config { return builtinConfig() }

// taskStatus returns the status of each task of s, and its result.
func taskStatus(s decl.AgentState) map[string]string {
	m := map[string]string{}
	for _, t := range s.Tasks {
		m[t.TaskID] = string(t.Status)
		if r := t.Metadata["result"]; r != "" && len(t.Children) > 0 {
			m[t.TaskID] += " (" + r + ")"
		}
	}
	return m
}

// TestThreeLevelPlanRollsBackToTheMiddleTask: the rule planner splits a
// goal into a tree of three levels (a part written LABEL (GOAL) is split in
// turn); the file that is not there makes the reflector roll the subtask
// back to its parent, the middle task, whose next subtask then runs; the
// answer has a line for each task without subtasks, in the tree's order.
func TestThreeLevelPlanRollsBackToTheMiddleTask(t *testing.T) {
	r, a := runTask(t, testRunsWith(t, testWork(t, never), 0, builtin), decl.UserRunTask{RunID: "tree",
		Goal: "compute 2*21 and notes (read missing.txt and count words in notes.txt) then wait 1 ms"})
	if r.Outcome != decl.RunRecordOutcomeFinished {
		t.Fatalf("run %+v", r)
	}
	s := a.Current()
	want := map[string]string{
		"root": "done", "t1": "done", "t2": "failed (1 of 2 subtasks done)", "t2.1": "failed", "t2.2": "done", "t3": "done",
	}
	got := taskStatus(s)
	for id, w := range want {
		if got[id] != w {
			t.Errorf("task %s is %q, want %q", id, got[id], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("tasks %v", got)
	}
	if i := taskIndex(s, "t2.1"); s.Tasks[i].ParentID != "t2" || s.Tasks[taskIndex(s, "t2")].ParentID != "root" {
		t.Errorf("parents: t2.1's %q, t2's %q", s.Tasks[i].ParentID, s.Tasks[taskIndex(s, "t2")].ParentID)
	}
	rolled := false
	for _, c := range s.Transitions {
		if strings.HasPrefix(c.Reason, "rollback t2.1:") && strings.HasSuffix(c.Reason, "(back to t2)") {
			rolled = true
		}
	}
	if !rolled {
		t.Errorf("no rollback to t2 among the transitions: %+v", s.Transitions)
	}
	if got := strategies(s); got != "calculator:advance read_file:rollback word_count:advance wait:advance" {
		t.Errorf("strategies %s", got)
	}
	lines := strings.Split(r.Answer, "\n")
	if len(lines) != 4 || lines[0] != "compute 2*21: 42" || !strings.HasPrefix(lines[1], "read missing.txt: not done (") || lines[2] != "count words in notes.txt: 26" || lines[3] != "wait 1 ms: waited 1 ms" {
		t.Errorf("answer:\n%s", r.Answer)
	}
}

// TestMaxDepthAsksTheUser: a task at maxDepth (3) may not be split: the
// rule planner, which can plan it only by splitting it, gives up; the
// reflector recovers by asking the user (replanning would give up again),
// and the reply is planned in its place.
func TestMaxDepthAsksTheUser(t *testing.T) {
	rs := testRunsWith(t, testWork(t, never), 0, builtin)
	a := testRun(t, rs, "deep")
	if err := a.Dispatch(context.Background(), decl.UserRunTask{RunID: "deep", Goal: "a (b (c (compute 1+1 and compute 2+2)))"}); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, a, "a question", func(s decl.AgentState) bool { return s.Phase == decl.PhaseWaiting })
	if len(s.Recoveries) != 1 || s.Recoveries[0].Strategy != decl.RecoveryStrategyAskUser {
		t.Fatalf("recoveries %+v", s.Recoveries)
	}
	if want := `The run stopped: the planner gave up: planning t1.1.1: "c (compute 1+1 and compute 2+2)": no rule plans it.`; !strings.HasPrefix(s.Question, want) {
		t.Errorf("question %q, want %q...", s.Question, want)
	}
	if err := a.Dispatch(context.Background(), decl.UserReply{RunID: "deep", Content: "compute 1+1"}); err != nil {
		t.Fatal(err)
	}
	s = waitFor(t, a, "the run to end", func(s decl.AgentState) bool { return ended(s, "deep") })
	if r := record(s, "deep"); r.Outcome != decl.RunRecordOutcomeFinished || r.Answer != "c (compute 1+1 and compute 2+2): 2" || taskStatus(s)["t1"] != "done (1 of 1 subtasks done)" {
		t.Errorf("run %+v, tasks %v", r, taskStatus(s))
	}
}

// flaky is the grep tool failing its first n calls, and counting them.
func flaky(n int64, calls *atomic.Int64) toolkit.Tool {
	return toolkit.Func("grep", "Finds lines, once it works.", func(ctx context.Context, a termArgs) (string, error) {
		if calls.Add(1) <= n {
			return "", errors.New("grep is broken")
		}
		return "notes.txt:3: " + a.Term, nil
	})
}

// TestRecoveryOutOfError: search_index always fails and grep fails once,
// so that the run fails maxFailures (3) calls in a row and enters error;
// the reflector recovers by replanning the task, and the run finishes. The
// recovery is in the run's state, and the error it answered.
func TestRecoveryOutOfError(t *testing.T) {
	var calls atomic.Int64
	r, a := runTask(t, testRunsWith(t, testWork(t, always, flaky(1, &calls)), 0, builtin), decl.UserRunTask{RunID: "heal", Goal: "find restart"})
	s := a.Current()
	if r.Outcome != decl.RunRecordOutcomeFinished || len(s.Recoveries) != 1 {
		t.Fatalf("run %+v, recoveries %+v", r, s.Recoveries)
	}
	rec := s.Recoveries[0]
	if rec.Strategy != decl.RecoveryStrategyReplan || !strings.Contains(rec.Error, "3 tool calls in a row failed, maxFailures") || !strings.HasPrefix(rec.Reason, "plan t1 again after:") {
		t.Errorf("recovery %+v", rec)
	}
	if got := strategies(s); got != "search_index:retry search_index:substitute grep: search_index:retry search_index:substitute grep:advance" {
		t.Errorf("strategies %s", got)
	}
	if len(s.Alerts) != 1 || s.Alerts[0].Guard != decl.AlertGuardMaxFailures {
		t.Errorf("alerts %+v", s.Alerts)
	}
}

// TestRecoveriesAreBounded: when every call fails, each recovery meets the
// error again; after maxRecoveries (2) the run is over in error, with the
// maxRecoveries alert.
func TestRecoveriesAreBounded(t *testing.T) {
	var calls atomic.Int64
	r, a := runTask(t, testRunsWith(t, testWork(t, always, flaky(1_000, &calls)), 0, builtin), decl.UserRunTask{RunID: "loop", Goal: "find restart"})
	s := a.Current()
	if r.Outcome != decl.RunRecordOutcomeError || len(s.Recoveries) != 2 || r.Iterations != 9 {
		t.Fatalf("run %+v, recoveries %+v", r, s.Recoveries)
	}
	last := s.Alerts[len(s.Alerts)-1]
	if last.Guard != decl.AlertGuardMaxRecoveries || !strings.Contains(last.Message, "recovered 2 times") {
		t.Errorf("alerts %+v", s.Alerts)
	}
	if s.Tasks[taskIndex(s, "t1")].Status != decl.TaskNodeStatusFailed {
		t.Errorf("t1 is %s", s.Tasks[taskIndex(s, "t1")].Status)
	}
}

// TestRecoveryAsksTheUser: a task no rule plans makes the planner give the
// run up; replanning would give it up again, so the reflector asks the user
// (the recover template), whose reply the planner plans.
func TestRecoveryAsksTheUser(t *testing.T) {
	rs := testRunsWith(t, testWork(t, never), 0, builtin)
	a := testRun(t, rs, "sing")
	ctx := context.Background()
	if err := a.Dispatch(ctx, decl.UserRunTask{RunID: "sing", Goal: "sing a song"}); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, a, "a question", func(s decl.AgentState) bool { return s.Phase == decl.PhaseWaiting })
	if !strings.HasPrefix(s.Question, `The run stopped: the planner gave up: planning t1: "sing a song": no rule plans it. Reply with another way to do "sing a song"`) {
		t.Errorf("question %q", s.Question)
	}
	if err := a.Dispatch(ctx, decl.UserReply{RunID: "sing", Content: "compute 1+2"}); err != nil {
		t.Fatal(err)
	}
	s = waitFor(t, a, "the run to end", func(s decl.AgentState) bool { return ended(s, "sing") })
	if r := record(s, "sing"); r.Outcome != decl.RunRecordOutcomeFinished || r.Answer != "sing a song: 3" {
		t.Errorf("run %+v", r)
	}
}

func taskIndex(s decl.AgentState, id string) int {
	for i, t := range s.Tasks {
		if t.TaskID == id {
			return i
		}
	}
	return -1
}

// writeConfig writes the built-in configuration file with each of edits
// (old, new) made into path.
func writeConfig(t *testing.T, path string, edits ...string) {
	t.Helper()
	text := string(builtinConfigFile)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(text, edits[i]) {
			t.Fatalf("the built-in configuration has no %q", edits[i])
		}
		text = strings.Replace(text, edits[i], edits[i+1], 1)
	}
	// Written whole at once, as an editor that saves by renaming does: a
	// file read while it is half-written would be refused.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// lines collects what is written to it, and hands each write on while
// there is room.
type lines struct {
	mu   sync.Mutex
	buf  strings.Builder
	each chan string
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	select {
	case l.each <- string(p):
	default: // nobody reads: the watcher must not block
	}
	return len(p), nil
}

// watchedRuns are runs under a configuration file that is watched (every
// 10 ms), with the wait tool blocking until release is closed; what the
// watcher says goes to log.
type watchedRuns struct {
	file    string
	release chan struct{}
	configs *configs
	runs    *runs
	log     *lines
}

func watched(t *testing.T) watchedRuns {
	t.Helper()
	w := watchedRuns{file: filepath.Join(t.TempDir(), "react.yaml"), release: make(chan struct{}), log: &lines{each: make(chan string, 16)}}
	writeConfig(t, w.file)
	work := testWork(t, never, blockingWait(w.release))
	var err error
	if w.configs, err = loadConfigs(w.file, toolNames(work)); err != nil {
		t.Fatal(err)
	}
	w.configs.every = 10 * time.Millisecond
	w.runs = testRunsWith(t, work, 0, w.configs.current)
	ctx, cancel := context.WithCancel(context.Background())
	watching := make(chan struct{})
	go func() { defer close(watching); w.configs.watch(ctx, w.runs, w.log) }()
	t.Cleanup(func() { cancel(); <-watching })
	return w
}

// TestReloadMidRun: the configuration file changes while a run's first
// call is in flight: a lower maxIterations and another question template.
// The run's journal has the new configuration as an input (agent-configure)
// between two steps, and time travel sees each step's configuration; the
// next step asks its question by the new template, and the guard stops the
// run at the new limit. Then a file that is not valid is refused with its
// file:line, and the configuration in force stays.
func TestReloadMidRun(t *testing.T) {
	w := watched(t)
	file, release, cs, log, ctx := w.file, w.release, w.configs, w.log, context.Background()
	a := testRun(t, w.runs, "reload")
	if err := a.Dispatch(ctx, decl.UserRunTask{RunID: "reload", Goal: "wait 5 ms and read ../outside.txt"}); err != nil {
		t.Fatal(err)
	}
	first := waitFor(t, a, "the wait", func(s decl.AgentState) bool { return s.Phase == decl.PhaseAct })
	if first.Limits.MaxIterations != 12 || first.Config.Source != file {
		t.Fatalf("limits %+v, configuration %s", first.Limits, first.Config.Source)
	}
	writeConfig(t, file, "maxIterations: 12", "maxIterations: 2",
		`question: '{{.Tool}} was refused`, `question: 'Reloaded: {{.Tool}} was refused`)
	s := waitFor(t, a, "the new configuration", func(s decl.AgentState) bool { return s.Config.Digest != first.Config.Digest })
	if s.Limits.MaxIterations != 2 || s.Phase != decl.PhaseAct {
		t.Fatalf("after the reload: limits %+v, phase %s", s.Limits, s.Phase)
	}
	close(release)
	s = waitFor(t, a, "a question", func(s decl.AgentState) bool { return s.Phase == decl.PhaseWaiting })
	if !strings.HasPrefix(s.Question, "Reloaded: read_file was refused") {
		t.Errorf("question %q: not by the new template", s.Question)
	}

	// The journal: the configuration between the two steps.
	entries, err := a.Inputs(1, a.Seq())
	if err != nil {
		t.Fatal(err)
	}
	var configured []uint64
	for _, e := range entries {
		if _, ok := e.Input.(decl.AgentConfigure); ok {
			configured = append(configured, e.Seq)
		}
	}
	if len(configured) != 2 {
		t.Fatalf("%d agent-configure inputs in the journal, want 2 (the first, then the reload)", len(configured))
	}
	before, err := a.StateAt(configured[1] - 1)
	if err != nil {
		t.Fatal(err)
	}
	after, err := a.StateAt(configured[1])
	if err != nil {
		t.Fatal(err)
	}
	if before.Limits.MaxIterations != 12 || after.Limits.MaxIterations != 2 || before.Config.Digest != first.Config.Digest || after.Config.Digest != s.Config.Digest {
		t.Errorf("time travel: before the reload %d (%.8s), after %d (%.8s)", before.Limits.MaxIterations, before.Config.Digest, after.Limits.MaxIterations, after.Config.Digest)
	}

	// A file that is not valid is refused; the run goes on under the
	// configuration in force, which ends it at its maxIterations.
	writeConfig(t, file, "maxIterations: 12", "maxIterations: 0")
	for msg := range log.each {
		if strings.Contains(msg, "refused") {
			if !strings.Contains(msg, file+":") || !strings.Contains(msg, "maxIterations") {
				t.Errorf("the refusal does not say where: %s", msg)
			}
			break
		}
	}
	if _, refused := cs.status(); !strings.HasPrefix(refused, file+":") {
		t.Errorf("status: refused %q", refused)
	}
	if err := a.Dispatch(ctx, decl.UserReply{RunID: "reload", Content: "compute 1+2"}); err != nil {
		t.Fatal(err)
	}
	s = waitFor(t, a, "the run to end", func(s decl.AgentState) bool { return ended(s, "reload") })
	r := record(s, "reload")
	if r.Outcome != decl.RunRecordOutcomeError || len(s.Alerts) == 0 || s.Alerts[0].Guard != decl.AlertGuardMaxIterations || s.Config.Digest != after.Config.Digest {
		t.Errorf("run %+v, alerts %+v, configuration %.8s", r, s.Alerts, s.Config.Digest)
	}
}

// TestPromptsAreBounded: a template that would write more than
// maxPromptBytes renders as its error, at once, whatever the width it asks
// printf for.
func TestPromptsAreBounded(t *testing.T) {
	cfg := builtinConfig()
	cfg.Prompts = map[string]string{PromptQuestion: `{{printf "%0999999d" 0}}`, PromptAnswer: `{{.Task}}`}
	got := render(cfg, PromptQuestion, QuestionPrompt{})
	if !strings.HasPrefix(got, "prompt question: ") || !strings.Contains(got, "more than 65536 bytes") {
		t.Errorf("rendered %.100q", got)
	}
	if got := render(cfg, PromptAnswer, AnswerPrompt{Task: strings.Repeat("x", maxPromptBytes+1)}); !strings.Contains(got, "more than") {
		t.Errorf("a task longer than the cap rendered %d bytes", len(got))
	}
	if got := render(decl.Config{}, PromptAnswer, AnswerPrompt{Task: "t", Done: true, Result: "r"}); got != "t: r" {
		t.Errorf("without a configuration, the built-in template: %q", got)
	}
}

// TestPromptsAreBoundedInSteps: ranges nested over the data's own field,
// which write nothing (so maxPromptBytes would never stop them), render as
// their error once they have done maxPromptSteps of work, rather than run
// 6^14 times; templates within the bound render as ever.
func TestPromptsAreBoundedInSteps(t *testing.T) {
	tools := sampleTools(demoToolNames())
	if len(tools) != 6 {
		t.Fatalf("%d demo tools", len(tools))
	}
	nested := func(n int, body string) string {
		return strings.Repeat("{{range .Tools}}{{with $}}", n) + body + strings.Repeat("{{end}}{{end}}", n)
	}
	cfg := builtinConfig()
	cfg.Prompts = map[string]string{PromptPlan: nested(14, "")}
	got := render(cfg, PromptPlan, PlanPrompt{Tools: tools})
	if got != "prompt plan: "+errPromptTooCostly.Error() {
		t.Errorf("fourteen nested ranges rendered %.200q", got)
	}
	cfg.Prompts[PromptPlan] = nested(3, "{{len .Tools}}") // 6^3 ranges of 6
	if got := render(cfg, PromptPlan, PlanPrompt{Tools: tools}); got != strings.Repeat("6", 216) {
		t.Errorf("three nested ranges rendered %.200q", got)
	}
	cfg.Prompts[PromptPlan] = `{{range .Tools}}{{range .Parameters}}{{with $}}{{range .Tools}}{{range .Parameters}}{{end}}{{end}}{{end}}{{end}}{{end}}`
	if got := render(cfg, PromptPlan, PlanPrompt{Tools: []llm.Tool{{Parameters: json.RawMessage(strings.Repeat(" ", 1000))}}}); !strings.Contains(got, "steps of work") {
		t.Errorf("a range over bytes within a range over bytes, 1000×1000, rendered %.200q", got)
	}
	if got := render(builtinConfig(), PromptPlan, PlanPrompt{Tools: tools, MaySplit: true}); !strings.Contains(got, "- wait: ") {
		t.Errorf("the built-in plan template rendered %.300q", got)
	}
}

// TestSpinningTemplateInForce: a configuration whose plan template would
// spin, put in force without the load check (as an agent-configure input
// from elsewhere may be), costs each plan its bounded rendering and
// nothing more: the runs, one turn between them, plan and finish, and
// give the turn back.
func TestSpinningTemplateInForce(t *testing.T) {
	cfg := builtinConfig()
	cfg.Prompts = maps.Clone(cfg.Prompts)
	cfg.Prompts[PromptPlan] = strings.Repeat("{{range .Tools}}{{with $}}", 14) + strings.Repeat("{{end}}{{end}}", 14)
	cfg.Digest = "spinning"
	rs := testRunsWith(t, testWork(t, nil), 1, func() decl.Config { return cfg })
	for _, id := range []string{"one", "two"} {
		r, _ := runTask(t, rs, decl.UserRunTask{RunID: id, Goal: "compute 6*7"})
		if r.Outcome != decl.RunRecordOutcomeFinished || !strings.Contains(r.Answer, "compute 6*7: 42") {
			t.Errorf("run %s: %+v", id, r)
		}
	}
	if n := rs.turns.inUse(); n != 0 {
		t.Errorf("%d turns in use once both runs are over", n)
	}
}

// TestInvalidReloadLeavesTheRunAlone: a configuration file saved with a
// mistake while a run is in progress is refused with its file:line, and
// nothing reaches the run: its journal has the configuration it started
// with only, and it finishes as it would have.
func TestInvalidReloadLeavesTheRunAlone(t *testing.T) {
	w := watched(t)
	file, release, cs, log, ctx := w.file, w.release, w.configs, w.log, context.Background()
	a := testRun(t, w.runs, "steady")
	if err := a.Dispatch(ctx, decl.UserRunTask{RunID: "steady", Goal: "wait 5 ms and compute 6*7"}); err != nil {
		t.Fatal(err)
	}
	first := waitFor(t, a, "the wait", func(s decl.AgentState) bool { return s.Phase == decl.PhaseAct })
	writeConfig(t, file, "strategies: [retry, substitute, rollback]", "strategies: [retry, subsitute, rollback]")
	msg := <-log.each
	if !strings.Contains(msg, "configuration refused") || !strings.Contains(msg, file+":") || !strings.Contains(msg, "strategies") {
		t.Fatalf("the refusal: %s", msg)
	}
	close(release)
	s := waitFor(t, a, "the run to end", func(s decl.AgentState) bool { return ended(s, "steady") })
	if r := record(s, "steady"); r.Outcome != decl.RunRecordOutcomeFinished || r.Answer != "wait 5 ms: waited\ncompute 6*7: 42" {
		t.Errorf("run %+v", r)
	}
	entries, err := a.Inputs(1, a.Seq())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if _, ok := e.Input.(decl.AgentConfigure); ok {
			n++
		}
	}
	if n != 1 || s.Config.Digest != first.Config.Digest || cs.current().Digest != first.Config.Digest {
		t.Errorf("%d agent-configure inputs; the run's configuration %.12s, in force %.12s, the first %.12s", n, s.Config.Digest, cs.current().Digest, first.Config.Digest)
	}
}

// TestAbortEndsTheRun: the user's reply "abort" gives the run up at once:
// the reflector does not recover a run the user aborted (it asked again,
// maxRecoveries times).
func TestAbortEndsTheRun(t *testing.T) {
	rs := testRunsWith(t, testWork(t, never), 0, builtin)
	a := testRun(t, rs, "quit")
	ctx := context.Background()
	if err := a.Dispatch(ctx, decl.UserRunTask{RunID: "quit", Goal: "read ../outside.txt"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, a, "a question", func(s decl.AgentState) bool { return s.Phase == decl.PhaseWaiting })
	if err := a.Dispatch(ctx, decl.UserReply{RunID: "quit", Content: "abort"}); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, a, "the run to end", func(s decl.AgentState) bool { return ended(s, "quit") })
	if r := record(s, "quit"); r.Outcome != decl.RunRecordOutcomeError || !strings.Contains(r.Error, "the user aborted the run") ||
		len(s.Recoveries) != 1 || s.Recoveries[0].Strategy != decl.RecoveryStrategyGiveUp {
		t.Errorf("run %+v, recoveries %+v", r, s.Recoveries)
	}
}

// TestSearchIndexFailsRetriesToo: the demo's search_index fails about half
// of its calls, and a run's retry (its next call) fails about as often
// whether the first did or not, so that both a retry and a substitution by
// grep show when `find` is run a few times. (Bit 0 of FNV-1a depends only
// on the parity of the key's bytes: a retry never failed after a failure.)
func TestSearchIndexFailsRetriesToo(t *testing.T) {
	var fails, both int
	rebuilding := func(key string) bool {
		h := fnv.New32a()
		h.Write([]byte(key))
		return h.Sum32()>>16&1 == 0
	}
	for i := range 400 {
		run := fmt.Sprintf("run-%08x", i*2654435761)
		first, retry := rebuilding("toolkit/call-"+run+"-c1"), rebuilding("toolkit/call-"+run+"-c2")
		if first {
			fails++
			if retry {
				both++
			}
		}
	}
	if fails < 120 || fails > 280 || both < fails/4 {
		t.Errorf("of 400 runs' first calls %d failed, %d of them failed again on retry", fails, both)
	}
	// The tool decides so by default.
	ws, err := Workspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	kit, err := NewKit(SearchIndex(ws, nil))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		key := fmt.Sprintf("toolkit/call-run-%d-c1", i)
		r := kit.Run(context.Background(), toolkit.Call{ID: "c", Name: "search_index", Arguments: []byte(`{"term":"plans"}`), Key: key})
		if failed := r.Kind != toolkit.KindNone; failed != rebuilding(key) {
			t.Errorf("key %s: failed %v (%v)", key, failed, r.Err)
		}
	}
}
