package transitions_test

// Hostile tests of the transitions: each failed on the code before its fix
// (1136f54), and its comment says, in parentheses, what was wrong.

import (
	"testing"

	"github.com/moora-go/moora/examples/react/decl"
	"github.com/moora-go/moora/examples/react/decl/v1"
	"github.com/moora-go/moora/examples/react/impl/agent"
	"github.com/moora-go/moora/examples/react/impl/migrations"
	"github.com/moora-go/moora/examples/react/impl/transitions"
)

func deref(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

func nonGiveUp(rs []decl.Recovery) int64 {
	n := int64(0)
	for _, r := range rs {
		if r.Strategy != decl.RecoveryStrategyGiveUp {
			n++
		}
	}
	return n
}

// TestHostileV1RunInProgressKeepsItsLimits: a run of version 1 in progress
// (here: in act, its request having asked for maxIterations 2 and
// maxFailures 1), given a configuration once migrated, keeps the limits its
// request asked for, and does not recover, as a run of version 1 never
// did. (AgentStateFromV1 left Asked empty: the run took the
// configuration's 12 tool calls, 3 failures and 2 recoveries.)
func TestHostileV1RunInProgressKeepsItsLimits(t *testing.T) {
	asked := v1.Limits{MaxIterations: 2, MaxDurationMs: 10_000, MaxFailures: 1}
	old := v1.AgentState{
		Phase: v1.PhaseAct, RunID: "r1", Goal: "g", StartedAt: 110, AgentUpdatedAt: 110, Iteration: 1,
		Limits:   asked,
		Requests: []v1.TaskRequest{{RunID: "r1", Goal: "g", Timestamp: 100, Limits: asked}},
		Tasks: []v1.TaskNode{
			{TaskID: "root", Description: "g", Status: "running", Children: []string{"t1"}},
			{TaskID: "t1", Description: "g", Status: "running", ParentID: "root"},
		},
		Calls: []v1.ToolCall{{CallID: "r1-c1", TaskID: "t1", Tool: "calc", Attempt: 1, ErrorKind: v1.ErrorKindNone}},
	}
	s := migrations.AgentStateFromV2(migrations.AgentStateFromV1(old)) // up to the current version
	two, three := int64(2), int64(3)
	cfg := decl.Config{Source: "react.yaml", Digest: "d", Guards: decl.Limits{MaxIterations: 12, MaxDurationMs: 60_000, MaxFailures: 3, MaxRecoveries: &two, MaxDepth: &three}}
	s = agent.Transition(s, decl.AgentConfigure{Timestamp: 200, Config: cfg})
	if s.Limits.MaxIterations != 2 || s.Limits.MaxFailures != 1 || s.Limits.MaxRecoveries == nil || *s.Limits.MaxRecoveries != 0 {
		t.Errorf("the run of version 1 asked for maxIterations 2, maxFailures 1 and could not recover; configured, its limits are maxIterations %d, maxFailures %d, maxRecoveries %d",
			s.Limits.MaxIterations, s.Limits.MaxFailures, deref(s.Limits.MaxRecoveries))
	}
}

// TestHostileRecoveryPastALoweredMaxRecoveries: a run in error that may
// recover (maxRecoveries 1) is given a configuration with maxRecoveries 0:
// the reflector's replan that comes next ends the run instead. (fail
// checked the limit only as the run entered error: the run recovered past
// its maxRecoveries.)
func TestHostileRecoveryPastALoweredMaxRecoveries(t *testing.T) {
	zero, three := int64(0), int64(3)
	lowered := decl.Config{Source: "react.yaml", Digest: "d2", Guards: decl.Limits{MaxIterations: 10, MaxDurationMs: 10_000, MaxFailures: 1, MaxRecoveries: &zero, MaxDepth: &three}}
	in := append(recoverable(1), decl.AgentConfigure{Timestamp: 125, Config: lowered},
		decl.AgentRecover{Timestamp: 130, RunID: "r1", Strategy: decl.RecoveryStrategyReplan, Reason: "again"})
	s := apply(in...)
	if n := nonGiveUp(s.Recoveries); n > *s.Limits.MaxRecoveries {
		t.Errorf("the run recovered %d times under maxRecoveries %d: phase %s, recovering %v", n, *s.Limits.MaxRecoveries, s.Phase, transitions.Recovering(s.Phase, s.RunID, s.Runs))
	}
}
