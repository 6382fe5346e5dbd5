package transitions

import (
	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/examples/supervisor/planner/decl"
)

// UserAsk queues the request after those asked before it.
func UserAsk(state decl.StateOfUser, input decl.UserAsk) decl.StateOfUser {
	state.Requests = automata.Append(state.Requests, input.Request)
	return state
}
