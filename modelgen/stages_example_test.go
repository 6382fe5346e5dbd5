package modelgen

import (
	"fmt"
	"os"
	"strings"

	"github.com/moora-go/moora/modelgen/internal/gen/graph"
	"github.com/moora-go/moora/modelgen/internal/model"
)

const chatSpec = `version: 1
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

// The stages behind Generate: load a spec, look at the derived model and
// generate decl/ in memory.
func Example_loadAndGenerate() {
	m, err := loadBytes("agent.yaml", []byte(chatSpec))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range m.Actors {
		fmt.Printf("%s: state %v, context %v\n", a.GoName, names(a.State), names(a.Context))
	}
	out, err := generateModel(m)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range out.Files {
		fmt.Println(f.Path)
	}
	// Output:
	// User: state [prompt], context [reply]
	// Llm: state [reply], context [prompt reply]
	// decl/actors.go
	// decl/agent.go
	// decl/contexts.go
	// decl/helpers.go
	// decl/inputs.go
	// decl/inputschema.go
	// decl/observations.go
	// decl/states.go
}

func names(fs []*model.Field) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

// The problems of a spec are reported with their positions.
func Example_diagnostics() {
	src := strings.Replace(chatSpec, "prompt: {type: string}}\n    llm", "prompt: {type: strin}}\n    llm", 1)
	_, err := loadBytes("agent.yaml", []byte(src))
	for _, d := range asDiagnostics(err) {
		fmt.Println(d)
	}
	// Output:
	// agent.yaml:8:27: observations.llm.user.prompt.type: unknown type "strin"; did you mean "string"?
}

func Example_writeGraph() {
	m, err := loadBytes("agent.yaml", []byte(chatSpec))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := graph.Write(os.Stdout, m, "mermaid"); err != nil {
		fmt.Println(err)
	}
	// Output:
	// flowchart LR
	//   actor_user["<b>user</b><br/>state: prompt<br/>context: reply"]
	//   actor_llm["<b>llm</b><br/>state: reply<br/>context: prompt, reply"]
	//   actor_user -->|"reply"| actor_llm
	//   actor_llm -->|"prompt"| actor_user
	//   actor_llm -->|"reply"| actor_llm
}

// The functions written by hand in impl/, where agentgen creates their stubs
// and how they must be declared.
func Example_implFuncs() {
	m, err := loadBytes("agent.yaml", []byte(chatSpec))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, fn := range model.ImplFuncs(m) {
		fmt.Printf("%s\n\t%s\n", fn.Path, fn.Signature())
	}
	// Output:
	// impl/initials/user.go
	// 	func User() decl.StateOfUser
	// impl/transitions/user_ask.go
	// 	func Ask(state decl.StateOfUser, input decl.Ask) decl.StateOfUser
	// impl/initials/llm.go
	// 	func Llm() decl.StateOfLlm
	// impl/transitions/llm_answer.go
	// 	func Answer(state decl.StateOfLlm, input decl.Answer) decl.StateOfLlm
}

// Generate decl/ and impl/ for a tree that has some hand-written code, and
// see what the scan of it reports.
func Example_scanImpl() {
	m, err := loadBytes("agent.yaml", []byte(chatSpec))
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	// The user's transition, written by hand, and one of an input since removed.
	os.MkdirAll(dir+"/impl/transitions", 0o755)
	os.WriteFile(dir+"/impl/transitions/user_ask.go", []byte(`package transitions

import "example.com/chat/decl"

func Ask(state decl.StateOfUser, input decl.Ask) decl.StateOfUser {
	state.Prompt = input.Prompt
	return state
}
`), 0o644)
	os.WriteFile(dir+"/impl/transitions/user_shout.go", []byte(`package transitions

import "example.com/chat/decl"

func Shout(state decl.StateOfUser, input decl.Shout) decl.StateOfUser { return state }
`), 0o644)

	scan, err := scanImpl(dir, m)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range scan.Findings {
		fmt.Println(f.Kind, f.Path, f.Line)
	}
	out, err := generateModel(m, declGen, implGen(scan))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range out.Files {
		if strings.HasPrefix(f.Path, "impl/") {
			fmt.Println(f.Path, f.Owned)
		}
	}
	// Output:
	// orphan impl/transitions/user_shout.go 5
	// impl/agent/create.go true
	// impl/agent/effect.go true
	// impl/agent/fuzz.gen_test.go true
	// impl/agent/initial.go true
	// impl/agent/transition.go true
	// impl/initials/initials.gen.go true
	// impl/initials/llm.go false
	// impl/initials/user.go false
	// impl/invariants/admit.go false
	// impl/invariants/check.go false
	// impl/transitions/llm_answer.go false
	// impl/transitions/transitions.gen.go true
}
