package transitions

import "github.com/moora-go/moora/automata/agents/reflexor/decl"

// BrainStopForBudget records that the brain stopped asking the model, the
// usage having reached the budget, with the budget's limits: the user sees
// budgetExhausted. The brain has answered the signals up to calledBrainAt
// (with no reply), so that no ask waits for them: a restarted agent does not
// ask again, and the next signal is checked against the budget again.
func BrainStopForBudget(state decl.StateOfBrain, input decl.BrainStopForBudget) decl.StateOfBrain {
	if stale(input.Timestamp, state.BrainUpdatedAt) {
		return state
	}
	state.BudgetExhausted = decl.BudgetExhausted{MaxTokens: input.MaxTokens, MaxCost: input.MaxCost, Timestamp: input.Timestamp}
	return answered(state, input.Timestamp, input.CalledBrainAt)
}
