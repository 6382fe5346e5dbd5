package modelgen_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/moora-go/moora/modelgen"
)

const chat = `version: 1
package: example.com/chat
actors: [user, llm]
observations:
  user:
    llm: {reply: {type: string}}
  llm:
    user: {prompt: {type: string}}
    llm: {reply: {type: string}}
inputs:
  user:
    ask: {type: object, properties: {prompt: {type: string}}, required: [prompt]}
  llm:
    answer: {type: object, properties: {reply: {type: string}}, required: [reply]}
`

// writeSpec writes the chat spec into a new directory and returns its
// file, and a function that removes the directory.
func writeSpec(spec string) (string, func()) {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	file := filepath.Join(dir, modelgen.DefaultSpecFile)
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		panic(err)
	}
	return file, func() { os.RemoveAll(dir) }
}

// Generate the code of a spec, then check that it is up to date.
func Example() {
	file, cleanup := writeSpec(chat)
	defer cleanup()
	dir := filepath.Dir(file)

	r, err := modelgen.Generate(file, modelgen.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Status, "version", r.Version)
	for _, f := range r.Written {
		if rel, _ := filepath.Rel(dir, f.Path); strings.HasPrefix(rel, "impl") {
			fmt.Println(f.Kind, filepath.ToSlash(rel))
		}
	}

	r, err = modelgen.Check(file, modelgen.Options{})
	fmt.Println(r.Status, err, r.TypeCheck)
	// Output:
	// up-to-date version 1
	// created impl/agent/create.go
	// created impl/agent/effect.go
	// created impl/agent/fuzz.gen_test.go
	// created impl/agent/initial.go
	// created impl/agent/transition.go
	// created impl/agent/versions.go
	// created impl/initials/initials.gen.go
	// created impl/initials/llm.go
	// created impl/initials/user.go
	// created impl/invariants/admit.go
	// created impl/invariants/check.go
	// created impl/transitions/llm_answer.go
	// created impl/transitions/transitions.gen.go
	// created impl/transitions/user_ask.go
	// up-to-date <nil> skipped: --typecheck=false
}

// Load a spec and count what its model has.
func ExampleLoad() {
	file, cleanup := writeSpec(chat)
	defer cleanup()
	r, err := modelgen.Load(file, modelgen.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Actors, "actors,", r.Observations, "observations,", r.Inputs, "inputs")
	// Output:
	// 2 actors, 3 observations, 2 inputs
}

// The problems of a spec are reported with their positions.
func ExampleDiagnostic() {
	file, cleanup := writeSpec(strings.Replace(chat, "prompt: {type: string}}\n    llm", "prompt: {type: strin}}\n    llm", 1))
	defer cleanup()
	r, err := modelgen.Load(file, modelgen.Options{})
	fmt.Println(r.Status, strings.TrimPrefix(err.Error(), filepath.Dir(file)+string(filepath.Separator)))
	for _, d := range r.Diagnostics {
		fmt.Printf("%d:%d: %s: %s; %s\n", d.Line, d.Col, d.Element, d.Message, d.Hint)
	}
	// Output:
	// invalid agent.yaml is invalid: 1 error
	// 8:27: observations.llm.user.prompt.type: unknown type "strin"; did you mean "string"?
}

func ExampleGraph() {
	file, cleanup := writeSpec(chat)
	defer cleanup()
	r, err := modelgen.Graph(file, modelgen.Options{Format: "mermaid"})
	if err != nil {
		fmt.Println(err)
		return
	}
	os.Stdout.Write(r.Graph)
	// Output:
	// flowchart LR
	//   actor_user["<b>user</b><br/>state: prompt<br/>context: reply"]
	//   actor_llm["<b>llm</b><br/>state: reply<br/>context: prompt, reply"]
	//   actor_user -->|"reply"| actor_llm
	//   actor_llm -->|"prompt"| actor_user
	//   actor_llm -->|"reply"| actor_llm
}
