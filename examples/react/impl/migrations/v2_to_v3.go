package migrations

import (
	"encoding/json"
	"fmt"

	"github.com/moora-go/moora/examples/react/decl"
	"github.com/moora-go/moora/examples/react/decl/v2"
)

// AgentStateFromV2 brings the state of a snapshot taken under version 2 of
// the spec up to version 3, which added the agent's usage of the model: a
// state of version 2 is one of version 3 with no usage recorded (its
// planner's calls were not counted), so it goes through JSON as it is.
func AgentStateFromV2(old v2.AgentState) decl.AgentState {
	b, err := json.Marshal(old)
	if err != nil {
		panic(fmt.Sprintf("migrations: encoding a state of version 2: %v", err))
	}
	var s decl.AgentState
	if err := json.Unmarshal(b, &s); err != nil {
		panic(fmt.Sprintf("migrations: a state of version 2 is not one of version 3: %v", err))
	}
	return s
}
