// Package migrations brings the records an agent journaled under earlier
// versions of its spec up to the current version: one function per input type
// whose shape changed in a breaking way, or that was removed, and one for the
// state when its shape did. agentgen generate writes a stub for each, once,
// and agentgen check fails until it is written. The journal runs them as it
// opens (package automata/migrate); like transitions, they are pure.
package migrations

import (
	"encoding/json"
	"fmt"

	"github.com/moora-go/moora/examples/react/decl/v1"
	"github.com/moora-go/moora/examples/react/decl/v2"
)

// AgentStateFromV1 brings the state of a snapshot taken under version 1 of the
// spec up to version 2. (v2 is decl while 2 is the spec's version.)
//
// What changed (agentgen check lists it with file:line):
//
//	/alerts/[]/guard: enum value added: maxDepth (compatible)
//	/alerts/[]/guard: enum value added: maxRecoveries (compatible)
//	/config: new state property (compatible)
//	/asked: new state property (compatible)
//	/limits/maxDepth: new optional property (breaking)
//	/limits/maxRecoveries: new optional property (breaking)
//	/recoveries: new state property (compatible)
//	/requests/[]/limits/maxDepth: new optional property (breaking)
//	/requests/[]/limits/maxRecoveries: new optional property (breaking)
//
// Every change adds, so the JSON of a version 1 state is that of the same
// state in version 2: the limits' maxDepth and maxRecoveries absent (the
// default depth), no configuration (every tool enabled, the strategies of
// version 1) and no recoveries. The state is carried over through its
// JSON, which these types, of strings, numbers, slices and maps, always
// encode. What the run asked for (asked, new) is its limits of version 1,
// those of its request, and no recovery: a run of version 1 in progress
// keeps them when a configuration is put in force (see Resolve), and ends
// in error as it would have.
func AgentStateFromV1(old v1.AgentState) v2.AgentState {
	b, err := json.Marshal(old)
	if err != nil {
		panic(fmt.Sprintf("migrations: encoding a state of version 1: %v", err))
	}
	var s v2.AgentState
	if err := json.Unmarshal(b, &s); err != nil {
		panic(fmt.Sprintf("migrations: a state of version 1 is not one of version 2: %v", err))
	}
	none := int64(0)
	s.Asked = s.Limits
	s.Asked.MaxRecoveries = &none
	s.Limits.MaxRecoveries = &none
	return s
}
