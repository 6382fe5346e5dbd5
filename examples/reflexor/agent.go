package main

import (
	"fmt"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/agents/reflexor/impl/agent"
	"github.com/moora-go/moora/automata/devpanel"
	"github.com/moora-go/moora/automata/journal"
)

// Stamp is the server's admission step (seed 000: the backend overwrites
// every input's timestamp): each input is stamped with the time it arrives
// in Unix milliseconds, and always after the newest input the state has
// applied, so that time never runs backwards, whatever a browser's clock or
// a slow job says, and no input is ever rejected as stale. No two inputs
// share a time: two messages sent in the same millisecond are two signals,
// and answering the first is not answering the second (the brain answers
// the signals newer than calledBrainAt). Under a burst of inputs the stamps
// run ahead of the clock by at most one millisecond per input.
func Stamp(now func() time.Time) func(decl.AgentState, decl.AgentInput) (decl.AgentInput, error) {
	return func(s decl.AgentState, in decl.AgentInput) (decl.AgentInput, error) {
		ts := max(now().UnixMilli(), max(s.UserUpdatedAt, s.BrainUpdatedAt, s.ToolkitUpdatedAt)+1)
		t, ok := in.(decl.Timestamped)
		if !ok {
			return in, fmt.Errorf("reflexor: no timestamp to stamp on %T", in)
		}
		return t.WithTimestamp(ts), nil
	}
}

// Open recovers the agent from store (an embedded journal) and starts the
// work its state calls for, with the server's admission step and work's
// jobs; opts come after (events, the purity check).
func Open(store journal.Store, work Work, now func() time.Time, opts ...automata.Option[decl.AgentState, decl.AgentInput]) (*journal.Machine[decl.AgentState, decl.AgentInput], error) {
	return journal.Open(store, agent.Definition(), journalOptions(), append(agentOptions(work, now), opts...)...)
}

// journalOptions are the agent's journal settings.
func journalOptions() journal.Options[decl.AgentState, decl.AgentInput] {
	return journal.Options[decl.AgentState, decl.AgentInput]{
		Codec:         journal.JSONGob[decl.AgentState](decl.DecodeInput),
		SnapshotEvery: 1_000,
	}
}

// agentOptions are the server's admission step and work's jobs.
func agentOptions(work Work, now func() time.Time) []automata.Option[decl.AgentState, decl.AgentInput] {
	return []automata.Option[decl.AgentState, decl.AgentInput]{
		automata.WithAdmission(Stamp(now)),
		agent.WithJobs(work.JobFns()),
	}
}

// panelConfig is the devpanel's view of the agent.
func panelConfig(work Work) devpanel.Config[decl.AgentState, decl.AgentInput] {
	return devpanel.Config[decl.AgentState, decl.AgentInput]{
		Definition:  agent.Definition(),
		Decode:      decl.DecodeClientInput,
		InputSchema: decl.InputSchema(),
		Actor:       decl.AgentInput.InputActor,
	}
}

// Idle reports whether the state calls for no work.
func (w Work) Idle(s decl.AgentState) bool {
	return len(w.brainJobs(s.ContextOfBrain())) == 0 && len(w.toolkitJobs(s.ContextOfToolkit())) == 0
}
