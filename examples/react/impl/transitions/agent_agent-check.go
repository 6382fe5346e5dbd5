package transitions

import "github.com/moora-go/moora/examples/react/decl"

// AgentCheck is the watchdog: it trips maxDurationMs when the run in
// progress has run out of time at the input's timestamp.
func AgentCheck(state decl.StateOfAgent, input decl.AgentCheck) decl.StateOfAgent {
	if stale(input.Timestamp, state.AgentUpdatedAt) {
		return state
	}
	state.AgentUpdatedAt = input.Timestamp
	if input.RunID != state.RunID {
		return state
	}
	state, _ = overtime(state, input.Timestamp)
	return state
}
