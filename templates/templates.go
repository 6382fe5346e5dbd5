// Package templates holds the text/template sources from which agentgen
// creates the files a person owns: the stubs of hand-written initial states
// and transitions, and the starter agent that agentgen init writes. They are
// embedded in agentgen, so it needs no files beside its binary.
//
// The tree:
//
//	stub/initial.go.tmpl       impl/initials/<actor>.go, created when missing
//	stub/transition.go.tmpl    impl/transitions/<actor>_<input>.go, likewise
//	stub/check.go.tmpl         impl/invariants/check.go and admit.go, the
//	stub/admit.go.tmpl         invariants and admission of FuzzTransitions,
//	                           likewise
//	starter/...                agentgen init: agent.yaml, main.go and the
//	                           starter's initial states and transitions,
//	                           at their paths in the new agent
//	new/main.go.tmpl           agentgen init --spec: the main.go of an
//	                           agent made from a spec of one's own
//
// Package modelgen executes them with text/template and gofmt's the result:
// the stubs receive the StubData of modelgen/internal/gen/impl, the starter
// modelgen's starterData, a new agent's main.go its newAgentData (their
// fields are documented where they are declared), and all may call comment, which turns a text into a "//" comment wrapped
// at 80 columns. A missing key is an error. Generated code, the code that
// carries agentgen's "DO NOT EDIT" header, is not made from templates but
// printed with jennifer.
package templates

import "embed"

// FS holds the templates, by the paths above.
//
//go:embed stub starter new
var FS embed.FS
