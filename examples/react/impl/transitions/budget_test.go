package transitions_test

import (
	"strings"
	"testing"

	"github.com/moora-go/moora/examples/react/decl"
	"github.com/moora-go/moora/examples/react/impl/agent"
)

// TestStopForBudget: agent-stop-for-budget ends the run in plan in error
// with a budget alert, over at once though it might recover, and records
// budgetExhausted; a stale one, or one of another run, changes nothing but
// what it must; a plan that called the planner clears budgetExhausted.
func TestStopForBudget(t *testing.T) {
	recoverable := roomy
	recoverable.MaxRecoveries = ptr(int64(2))
	in := append(started(recoverable), observed("r1-c1", 120, true)...)
	in = append(in, reflectOn("r1-c1", 130, decl.StrategyAdvance))
	s := apply(in...)
	if s.Phase != decl.PhasePlan {
		t.Fatalf("phase %s, want plan", s.Phase)
	}
	s.Usage = decl.Usage{InputTokens: 1900, OutputTokens: 100}

	stale := agent.Transition(s, decl.AgentStopForBudget{Timestamp: 10, RunID: "r1", MaxTokens: 2000})
	if stale.Phase != decl.PhasePlan || stale.BudgetExhausted != (decl.BudgetExhausted{}) {
		t.Errorf("a stale stop: phase %s, %+v", stale.Phase, stale.BudgetExhausted)
	}
	other := agent.Transition(s, decl.AgentStopForBudget{Timestamp: 140, RunID: "r0", MaxTokens: 2000})
	if other.Phase != decl.PhasePlan || other.BudgetExhausted.Timestamp != 140 {
		t.Errorf("another run's stop: phase %s, %+v", other.Phase, other.BudgetExhausted)
	}

	stopped := agent.Transition(s, decl.AgentStopForBudget{Timestamp: 140, RunID: "r1", MaxTokens: 2000, MaxCost: 1.5})
	if want := (decl.BudgetExhausted{MaxTokens: 2000, MaxCost: 1.5, Timestamp: 140}); stopped.BudgetExhausted != want {
		t.Errorf("budgetExhausted %+v, want %+v", stopped.BudgetExhausted, want)
	}
	last := stopped.Alerts[len(stopped.Alerts)-1]
	if stopped.Phase != decl.PhaseError || len(stopped.Runs) != 1 || stopped.Runs[0].Outcome != decl.RunRecordOutcomeError ||
		last.Guard != decl.AlertGuardBudget || !strings.Contains(last.Message, "2000 tokens, budget 2000") || !strings.Contains(stopped.Error, "budget") {
		t.Fatalf("stopped: phase %s, runs %+v, alerts %+v, error %q", stopped.Phase, stopped.Runs, stopped.Alerts, stopped.Error)
	}
	if s.BudgetExhausted != (decl.BudgetExhausted{}) || s.Phase != decl.PhasePlan {
		t.Error("the transition wrote into the state it was given")
	}

	// A plan that called the planner (a budget raised) clears it; one
	// that did not leaves it.
	calls := int64(1)
	noCall := agent.Transition(other, decl.AgentPlan{Timestamp: 150, RunID: "r1", Step: step("t2", "calc")})
	if noCall.BudgetExhausted.Timestamp != 140 {
		t.Errorf("a plan without a call cleared budgetExhausted")
	}
	called := agent.Transition(other, decl.AgentPlan{Timestamp: 150, RunID: "r1", Step: step("t2", "calc"), Usage: &decl.Usage{InputTokens: 10, OutputTokens: 2, Calls: &calls}})
	if called.BudgetExhausted != (decl.BudgetExhausted{}) || called.Usage.InputTokens != 1910 {
		t.Errorf("a plan that called the planner: %+v, usage %+v", called.BudgetExhausted, called.Usage)
	}
}
