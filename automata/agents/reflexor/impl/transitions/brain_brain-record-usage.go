package transitions

import "github.com/moora-go/moora/automata/agents/reflexor/decl"

// BrainRecordUsage adds the tokens and the cost of one call of the model to
// the conversation's usage, and counts the call. A call was made, so the
// budget allowed it: a budgetExhausted the brain stopped at before (a budget
// since raised) is cleared. It does not move calledBrainAt: the inputs of the
// call's answer do.
func BrainRecordUsage(state decl.StateOfBrain, input decl.BrainRecordUsage) decl.StateOfBrain {
	_, _ = input.CalledBrainAt, input.Model // for the journal only: which ask it was, and the model priced
	if stale(input.Timestamp, state.BrainUpdatedAt) {
		return state
	}
	state.Usage = addUsage(state.Usage, input.Usage)
	state.BudgetExhausted = decl.BudgetExhausted{}
	state.BrainUpdatedAt = input.Timestamp
	return state
}

// addUsage returns the totals with one call's usage u added: its tokens, its
// cost and one call. An absent property of the totals stays absent while it
// is zero, so that a usage without cache tokens or cost reads as one.
func addUsage(totals, u decl.Usage) decl.Usage {
	totals.InputTokens += u.InputTokens
	totals.OutputTokens += u.OutputTokens
	totals.Calls = added(totals.Calls, 1)
	totals.CacheReadInputTokens = added(totals.CacheReadInputTokens, deref(u.CacheReadInputTokens))
	totals.CacheCreationInputTokens = added(totals.CacheCreationInputTokens, deref(u.CacheCreationInputTokens))
	totals.Cost = added(totals.Cost, deref(u.Cost))
	return totals
}

// added returns a new pointer to *p + n; p itself when n is 0 (nil stays
// nil). The state given to a transition is never written into.
func added[N int64 | float64](p *N, n N) *N {
	if n == 0 {
		return p
	}
	sum := deref(p) + n
	return &sum
}

func deref[N int64 | float64](p *N) N {
	if p == nil {
		return 0
	}
	return *p
}
