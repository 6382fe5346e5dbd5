package persistent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moora-go/moora/automata/agents/persistent"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/toolkit"
)

// CountArgs are the word-count tool's arguments, whose JSON Schema the llm
// is shown.
type CountArgs struct {
	Text string `json:"text" jsonschema_description:"The text whose words to count."`
}

// An agent asked to count words calls its tool and reports the count; its
// every input is in the journal, so that a second New on the same file goes
// on with the conversation. The llm is a scripted model; a real program
// passes openai.FromEnv's.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "chat")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	kit, err := toolkit.New(toolkit.Config{}, toolkit.Func("word-count", "Counts the words of a text.",
		func(_ context.Context, a CountArgs) (string, error) {
			return strconv.Itoa(len(strings.Fields(a.Text))), nil
		}))
	if err != nil {
		panic(err)
	}
	model := llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == llm.RoleTool {
			return llm.Response{Text: "That is " + last.Content + " words."}, nil
		}
		args, _ := json.Marshal(CountArgs{Text: last.Content})
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: "call-" + strconv.Itoa(len(req.Messages)), Name: "word-count", Arguments: args}}}, nil
	}}
	ctx := context.Background()
	say := func(text string) {
		store, err := journal.OpenBolt(filepath.Join(dir, "agent.db"))
		if err != nil {
			panic(err)
		}
		a, err := persistent.New(persistent.Config{System: "Count words.", Tools: kit, Model: model, Store: store})
		if err != nil {
			panic(err)
		}
		defer a.Close(ctx)
		if err := a.Send(ctx, "terminal", text); err != nil {
			panic(err)
		}
		if err := a.Wait(ctx); err != nil {
			panic(err)
		}
	}
	say("count these four words")
	say("and these three") // a new process, say, on the same journal

	store, err := journal.OpenBolt(filepath.Join(dir, "agent.db"))
	if err != nil {
		panic(err)
	}
	a, err := persistent.New(persistent.Config{Tools: kit, Model: model, Store: store})
	if err != nil {
		panic(err)
	}
	defer a.Close(ctx)
	s := a.State()
	for _, m := range persistent.Conversation(s.UserMessages, s.AssistantMessages, s.ToolMessages) {
		fmt.Printf("%s: %s", m.Role, m.Content)
		for _, c := range m.ToolCalls {
			fmt.Printf("[calls %s(%s)]", c.Name, c.Input)
		}
		fmt.Println()
	}
	// Output:
	// user: count these four words
	// assistant: [calls word-count({"text":"count these four words"})]
	// tool: 4
	// assistant: That is 4 words.
	// user: and these three
	// assistant: [calls word-count({"text":"and these three"})]
	// tool: 3
	// assistant: That is 3 words.
}
