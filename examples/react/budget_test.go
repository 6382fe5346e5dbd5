package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/examples/react/decl"
)

// TestBudget: an agent at 95% of its budget asks the planner for one more
// plan, the one that crosses it, and then stops in the budget-exhausted
// state: budgetExhausted, which the user sees, with the budget's limits; the
// run over in error with a budget alert, although the configuration would
// let it recover (a recovery would ask the planner again); the usage the
// sum of the calls. After a restart the agent is in the same state and asks
// nothing.
func TestBudget(t *testing.T) {
	p := &countingPlanner{each: llm.Usage{InputTokens: 90, OutputTokens: 5}} // 95 tokens a call
	p.model = Metered(llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return llm.Response{Text: "ok", Usage: p.calls[len(p.calls)-1]}, nil
	}}, nil)
	w := testWork(t, never)
	w.Planner = p
	// The first plan splits the goal into three tasks and plans the first:
	// two calls, 190 tokens, 95% of the budget. The second plan is allowed,
	// and crosses it; the third is not.
	w.Budget = llm.Budget{Tokens: 200}
	path := filepath.Join(t.TempDir(), "agents.db")
	ctx := context.Background()
	open := func() (*runs, func()) {
		fleet, err := bolt.OpenFleet(path)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := openRuns(runsConfig{Fleet: fleet, Work: w, Options: purityCheck, Config: builtin})
		if err != nil {
			t.Fatal(err)
		}
		return rs, func() {
			if err := errors.Join(rs.close(ctx), fleet.Close()); err != nil {
				t.Fatal(err)
			}
		}
	}
	rs, closeRuns := open()
	a, release, err := rs.open(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Machine().Dispatch(ctx, decl.UserRunTask{RunID: "b", Goal: "compute 6*7 and count words in todo.txt then read config.txt"}); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, a.Machine(), "run b to end", func(s decl.AgentState) bool { return ended(s, "b") })
	if deref(builtin().Guards.MaxRecoveries) == 0 {
		t.Fatal("the built-in configuration lets no run recover: the test would not show that a budget stop does not")
	}
	check := func(when string, s decl.AgentState) {
		t.Helper()
		p.mu.Lock()
		defer p.mu.Unlock()
		if len(p.calls) != 3 {
			t.Fatalf("%s: the planner's model was called %d times, want 3 (2 at 95%% of the budget, then the one that crossed it)", when, len(p.calls))
		}
		want := decl.BudgetExhausted{MaxTokens: 200, MaxCost: 0, Timestamp: s.BudgetExhausted.Timestamp}
		if s.BudgetExhausted != want || want.Timestamp == 0 || s.ContextOfUser().BudgetExhausted != want {
			t.Errorf("%s: budgetExhausted %+v, the user sees %+v; want the limits and a time", when, s.BudgetExhausted, s.ContextOfUser().BudgetExhausted)
		}
		r := record(s, "b")
		last := s.Alerts[len(s.Alerts)-1]
		if r.Outcome != decl.RunRecordOutcomeError || !strings.Contains(r.Error, "285 tokens, budget 200") || s.Phase != decl.PhaseError ||
			last.Guard != decl.AlertGuardBudget || len(s.Recoveries) != 0 || r.Iterations != 2 {
			t.Errorf("%s: run %+v, phase %s, alerts %+v, recoveries %+v", when, r, s.Phase, s.Alerts, s.Recoveries)
		}
		var in, out int64
		for _, u := range p.calls {
			in, out = in+u.InputTokens, out+u.OutputTokens
		}
		if u := s.ContextOfUser().Usage; u.InputTokens != in || u.OutputTokens != out || u.Calls == nil || *u.Calls != 3 || in+out != 285 {
			t.Errorf("%s: usage %+v, want the sum of the calls: %d in, %d out, 3 calls", when, u, in, out)
		}
		if keys := jobKeys(w, s); len(keys) != 0 {
			t.Errorf("%s: jobs %v", when, keys)
		}
	}
	check("stopped", s)
	release()
	closeRuns()

	rs, closeRuns = open()
	defer closeRuns()
	a, release, err = rs.open(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	check("after a restart", a.Machine().Current())
}

// TestBudgetJobs: the jobs of phase plan are the stop instead of a plan
// that would ask the planner once the usage has reached the budget, in
// tokens or in dollars, and the plan under it; the plan that writes the
// answer asks nothing, and is made whatever the budget; so is a reply's
// replan, but for an abort.
func TestBudgetJobs(t *testing.T) {
	w := testWork(t, never)
	w.Budget = llm.Budget{Tokens: 1000, Cost: 0.5}
	pending := []decl.TaskNode{{TaskID: "root", Status: decl.TaskNodeStatusRunning, Children: []string{"t1"}},
		{TaskID: "t1", ParentID: "root", Status: decl.TaskNodeStatusPending, Children: []string{}}}
	done := []decl.TaskNode{{TaskID: "root", Status: decl.TaskNodeStatusRunning, Children: []string{"t1"}},
		{TaskID: "t1", ParentID: "root", Status: decl.TaskNodeStatusDone, Children: []string{}}}
	cost := func(c float64) *float64 { return &c }
	tests := []struct {
		name  string
		state decl.AgentState
		want  string // the key's prefix
	}{
		{"under", decl.AgentState{Phase: decl.PhasePlan, RunID: "r", Tasks: pending, Usage: decl.Usage{InputTokens: 900, OutputTokens: 99, Cost: cost(0.49)}}, "agent/plan-r-"},
		{"tokens", decl.AgentState{Phase: decl.PhasePlan, RunID: "r", Tasks: pending, Usage: decl.Usage{InputTokens: 900, OutputTokens: 100}}, "agent/stop-for-budget-r-"},
		{"dollars", decl.AgentState{Phase: decl.PhasePlan, RunID: "r", Tasks: pending, Usage: decl.Usage{Cost: cost(0.5)}}, "agent/stop-for-budget-r-"},
		{"the answer", decl.AgentState{Phase: decl.PhasePlan, RunID: "r", Tasks: done, Usage: decl.Usage{InputTokens: 5000}}, "agent/plan-r-"},
		{"a reply", decl.AgentState{Phase: decl.PhaseWaiting, RunID: "r", Tasks: pending, Usage: decl.Usage{InputTokens: 5000},
			Replies: []decl.Reply{{RunID: "r", Content: "todo.txt", Timestamp: 5}}, AskedAt: 4}, "agent/stop-for-budget-r-"},
		{"an abort", decl.AgentState{Phase: decl.PhaseWaiting, RunID: "r", Tasks: pending, Usage: decl.Usage{InputTokens: 5000},
			Replies: []decl.Reply{{RunID: "r", Content: "abort", Timestamp: 5}}, AskedAt: 4}, "agent/replan-r-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, k := range jobKeys(w, tt.state) {
				if !strings.HasPrefix(k, "agent/deadline-") {
					got = append(got, k)
				}
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], tt.want) {
				t.Errorf("jobs %v, want one %s…", got, tt.want)
			}
		})
	}
}
