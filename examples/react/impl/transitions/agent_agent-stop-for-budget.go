package transitions

import (
	"fmt"
	"strings"

	"github.com/moora-go/moora/examples/react/decl"
)

// AgentStopForBudget records that the agent stopped asking the planner, its
// usage having reached the budget, with the budget's limits: the user sees
// budgetExhausted. The run in progress that the input names (in phase plan,
// or waiting for the planner after the user's reply) ends in error with a
// budget alert, and is over at once: a recovery would ask the planner
// again. The state keeps budgetExhausted until a plan that called the
// planner (a budget since raised) clears it.
func AgentStopForBudget(state decl.StateOfAgent, input decl.AgentStopForBudget) decl.StateOfAgent {
	if stale(input.Timestamp, state.AgentUpdatedAt) {
		return state
	}
	at := input.Timestamp
	state.AgentUpdatedAt = at
	state.BudgetExhausted = decl.BudgetExhausted{MaxTokens: input.MaxTokens, MaxCost: input.MaxCost, Timestamp: at}
	if input.RunID != state.RunID || !running(state.Phase) {
		return state
	}
	why := budgetMessage(state.Usage, input.MaxTokens, input.MaxCost)
	state.Alerts = appended(state.Alerts, decl.Alert{Guard: decl.AlertGuardBudget, Message: why, At: at})
	state.Error, state.Question = why, ""
	state = move(state, decl.PhaseError, at, why)
	return over(state, at)
}

// budgetMessage says what of the budget the usage reached.
func budgetMessage(u decl.Usage, maxTokens int64, maxCost float64) string {
	var parts []string
	if tokens := u.InputTokens + u.OutputTokens; maxTokens > 0 && tokens >= maxTokens {
		parts = append(parts, fmt.Sprintf("%d tokens, budget %d", tokens, maxTokens))
	}
	if cost := num(u.Cost); maxCost > 0 && cost >= maxCost {
		parts = append(parts, fmt.Sprintf("$%.4f, budget $%.4f", cost, maxCost))
	}
	if len(parts) == 0 { // a budget lowered to the usage, as the job saw it
		parts = append(parts, fmt.Sprintf("%d tokens and $%.4f, budget %d tokens and $%.4f", u.InputTokens+u.OutputTokens, num(u.Cost), maxTokens, maxCost))
	}
	return "the budget of the planner's model is spent: " + strings.Join(parts, "; ")
}
