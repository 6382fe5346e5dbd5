package transitions

import "github.com/moora-go/moora/automata/agents/reflexor/decl"

// BrainCompressHistory replaces the summary with one that covers the
// conversation up to cutAt. A cut older than the current one changes
// nothing: the summary only moves forward.
//
// Unlike the brain's other inputs it leaves calledBrainAt alone: the ask
// that compressed the history goes on to answer the signals it was asked
// for, and records that when it answers.
func BrainCompressHistory(state decl.StateOfBrain, input decl.BrainCompressHistory) decl.StateOfBrain {
	_ = input.CalledBrainAt // for the journal only: which ask it was
	if stale(input.Timestamp, state.BrainUpdatedAt) {
		return state
	}
	if input.CutAt > state.SummaryCutAt {
		state.ContextSummary, state.SummaryCutAt = input.Summary, input.CutAt
	}
	state.BrainUpdatedAt = input.Timestamp
	return state
}
