package transitions

import "github.com/moora-go/moora/automata/agents/reflexor/decl"

// answered records that the brain has answered the signals up to
// calledBrainAt (the seed's rule: every input of the brain moves
// calledBrainAt forward, never back), and the time of the input.
func answered(state decl.StateOfBrain, ts, calledBrainAt int64) decl.StateOfBrain {
	state.CalledBrainAt = max(state.CalledBrainAt, calledBrainAt)
	state.BrainUpdatedAt = ts
	return state
}
