package transitions

import "github.com/moora-go/moora/examples/react/decl"

// AgentConfigure puts the operator's configuration in force. The run in
// progress (in error too, while it may recover) has its limits resolved
// again under the new guards (Resolve, with what its request asked for):
// they apply from its next input on, as the rest of the configuration
// (the tools, their limits, the strategies, the prompts) applies from the
// next step its jobs plan.
func AgentConfigure(state decl.StateOfAgent, input decl.AgentConfigure) decl.StateOfAgent {
	if stale(input.Timestamp, state.AgentUpdatedAt) {
		return state
	}
	state.AgentUpdatedAt = input.Timestamp
	state.Config = input.Config
	if state.RunID == "" || !running(state.Phase) && !Recovering(state.Phase, state.RunID, state.Runs) {
		return state
	}
	state.Limits = Resolve(state.Asked, state.Config.Guards)
	return state
}
