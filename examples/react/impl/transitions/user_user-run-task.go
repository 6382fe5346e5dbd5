package transitions

import (
	"slices"

	"github.com/moora-go/moora/examples/react/decl"
)

// UserRunTask queues the user's task, with the limits it asks for (0 for
// those it leaves out: the configuration's guards apply, see Resolve). A
// runId asked for before is not queued again.
func UserRunTask(state decl.StateOfUser, input decl.UserRunTask) decl.StateOfUser {
	if stale(input.Timestamp, state.UserUpdatedAt) {
		return state
	}
	state.UserUpdatedAt = input.Timestamp
	if slices.ContainsFunc(state.Requests, func(r decl.TaskRequest) bool { return r.RunID == input.RunID }) {
		return state
	}
	state.Requests = appended(state.Requests, decl.TaskRequest{
		RunID:     input.RunID,
		Goal:      input.Goal,
		Timestamp: input.Timestamp,
		Limits: decl.Limits{
			MaxIterations: deref(input.MaxIterations),
			MaxDurationMs: deref(input.MaxDurationMs),
			MaxFailures:   deref(input.MaxFailures),
		},
	})
	return state
}
