package migrations

import (
	"encoding/json"
	"fmt"

	"github.com/moora-go/moora/examples/react/decl"
	"github.com/moora-go/moora/examples/react/decl/v3"
)

// AgentStateFromV3 brings the state of a snapshot taken under version 3 of
// the spec up to version 4, which added the agent's budgetExhausted (and
// the budget guard among the alerts'): a state of version 3 is one of
// version 4 whose agent has not stopped for a budget, so it goes through
// JSON as it is. Its usage carries over: the calls it counted count
// against a budget from now on.
func AgentStateFromV3(old v3.AgentState) decl.AgentState {
	b, err := json.Marshal(old)
	if err != nil {
		panic(fmt.Sprintf("migrations: encoding a state of version 3: %v", err))
	}
	var s decl.AgentState
	if err := json.Unmarshal(b, &s); err != nil {
		panic(fmt.Sprintf("migrations: a state of version 3 is not one of version 4: %v", err))
	}
	return s
}
