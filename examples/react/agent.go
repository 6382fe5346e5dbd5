package main

import (
	"fmt"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/examples/react/decl"
	"github.com/moora-go/moora/examples/react/impl/agent"
	"github.com/moora-go/moora/examples/react/impl/transitions"
)

// Stamp is the server's admission step: each input is stamped with the time
// it arrives in Unix milliseconds, and never earlier than the newest input
// the state has applied, so that time never runs backwards and the guards
// measure the run's duration on the server's clock.
func Stamp(now func() time.Time) func(decl.AgentState, decl.AgentInput) (decl.AgentInput, error) {
	return func(s decl.AgentState, in decl.AgentInput) (decl.AgentInput, error) {
		ts := max(now().UnixMilli(), s.UserUpdatedAt, s.AgentUpdatedAt, s.ToolkitUpdatedAt)
		t, ok := in.(decl.Timestamped)
		if !ok {
			return in, fmt.Errorf("react: no timestamp to stamp on %T", in)
		}
		return t.WithTimestamp(ts), nil
	}
}

// agentOptions are what a run's agent is opened with (see openRuns, which
// adds the admission step of one run, oneRun): the journal's codec and
// snapshots, the server's admission step and work's jobs.
func agentOptions(work Work, now func() time.Time) (journal.Options[decl.AgentState, decl.AgentInput], []automata.Option[decl.AgentState, decl.AgentInput]) {
	return journal.Options[decl.AgentState, decl.AgentInput]{
			Codec:         journal.JSONGob[decl.AgentState](decl.DecodeInput),
			SnapshotEvery: 1_000,
			// The model's and the tools' answers carry their job's key:
			// a fork from the devpanel re-runs them from the record.
			JobKeys: true,
		}, []automata.Option[decl.AgentState, decl.AgentInput]{
			automata.WithAdmission(Stamp(now)),
			agent.WithJobs(work.JobFns()),
		}
}

// Idle reports whether the agent has nothing to do: no run in progress and
// no task waiting to run.
func Idle(s decl.AgentState) bool {
	switch s.Phase {
	case decl.PhaseIdle, decl.PhaseFinished, decl.PhaseError:
		if transitions.Recovering(s.Phase, s.RunID, s.Runs) {
			return false // in error, waiting for the reflector
		}
		// Only now: looking for a task waiting goes over the history.
		_, queued := NextRequest(s.ContextOfAgent())
		return !queued
	}
	return false // a run in progress
}
