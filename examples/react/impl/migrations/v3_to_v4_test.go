package migrations

import (
	"testing"

	"github.com/moora-go/moora/examples/react/decl"
	"github.com/moora-go/moora/examples/react/decl/v3"
)

// TestAgentStateFromV3: a snapshot of version 3 keeps its run, its alerts
// and its usage, which count against a budget from now on, and has not
// stopped for a budget.
func TestAgentStateFromV3(t *testing.T) {
	calls, cost := int64(4), 0.25
	old := v3.AgentState{RunID: "r1", Phase: v3.PhaseError,
		Alerts: []v3.Alert{{Guard: v3.AlertGuardMaxFailures, Message: "3 failures", At: 7}},
		Usage:  v3.Usage{InputTokens: 900, OutputTokens: 40, Calls: &calls, Cost: &cost}}
	s := AgentStateFromV3(old)
	if s.RunID != "r1" || s.Phase != decl.PhaseError || len(s.Alerts) != 1 || s.Alerts[0].Guard != decl.AlertGuardMaxFailures {
		t.Fatalf("the run and its alerts: %+v", s)
	}
	if u := s.Usage; u.InputTokens != 900 || u.OutputTokens != 40 || u.Calls == nil || *u.Calls != 4 || u.Cost == nil || *u.Cost != 0.25 {
		t.Errorf("the usage: %+v", u)
	}
	if s.BudgetExhausted != (decl.BudgetExhausted{}) {
		t.Errorf("budgetExhausted %+v, want none", s.BudgetExhausted)
	}
}
