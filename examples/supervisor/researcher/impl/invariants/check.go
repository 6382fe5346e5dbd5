// Package invariants holds what FuzzTransitions (impl/agent/fuzz.gen_test.go,
// generated) cannot know from the spec: the invariants of the agent's state
// (Check) and the admission step to run before each transition (Admit).
// agentgen created this package once, as stubs that accept everything, and
// never changes it: it is yours.
//
// Run the fuzz target with
//
//	go test -run '^$' -fuzz FuzzTransitions -fuzztime 30s ./impl/agent
package invariants

import "github.com/moora-go/moora/examples/supervisor/researcher/decl"

// Check returns an error saying which invariant of the agent's state is
// broken, or nil when they all hold. FuzzTransitions calls it on the initial
// state and after every input it applies, and reports an error with the
// shortest sequence of inputs it found that leads to it.
//
// An invariant is what must hold whatever the inputs: a reply answers a
// message that was sent, a counter is never negative. Check must be pure.
func Check(state decl.AgentState) error {
	return nil
}
