package transitions

import (
	"slices"

	"github.com/moora-go/moora/examples/react/decl"
)

// The guards of a run whose request leaves them out.
const (
	DefaultMaxIterations = 12
	DefaultMaxDurationMs = 60_000
	DefaultMaxFailures   = 3
)

// UserRunTask queues the user's task, with its guards (the defaults for
// those it leaves out). A runId asked for before is not queued again.
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
			MaxIterations: orDefault(input.MaxIterations, DefaultMaxIterations),
			MaxDurationMs: orDefault(input.MaxDurationMs, DefaultMaxDurationMs),
			MaxFailures:   orDefault(input.MaxFailures, DefaultMaxFailures),
		},
	})
	return state
}

func orDefault(v *int64, d int64) int64 {
	if v == nil {
		return d
	}
	return *v
}
