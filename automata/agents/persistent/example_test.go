package persistent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moora-go/moora/automata/agents/persistent"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/toolkit"
)

// CountArgs are the word-count tool's arguments, whose JSON Schema the llm
// is shown.
type CountArgs struct {
	Text string `json:"text" jsonschema_description:"The text whose words to count."`
}

// An agent asked to count words calls its tool and reports the count. Its
// every input is in the journal, so that a second New on the same file
// goes on with the conversation; there it is also served over HTTP, under
// /chat/ of a program's mux. The llm is a scripted model; a real program
// passes openai.FromEnv's.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "chat")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	wordCount := toolkit.Func("word-count", "Counts the words of a text.",
		func(_ context.Context, a CountArgs) (string, error) {
			return strconv.Itoa(len(strings.Fields(a.Text))), nil
		})
	model := llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == llm.RoleTool {
			return llm.Response{Text: "That is " + last.Content + " words."}, nil
		}
		args, _ := json.Marshal(CountArgs{Text: last.Content})
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: "call-" + strconv.Itoa(len(req.Messages)), Name: "word-count", Arguments: args}}}, nil
	}}
	token := "secret"
	ctx := context.Background()
	// open opens the agent on the journal in dir, as a process does.
	open := func() *persistent.Agent {
		kit, err := toolkit.New(toolkit.Config{}, wordCount)
		if err != nil {
			panic(err)
		}
		store, err := bolt.Open(filepath.Join(dir, "agent.db"))
		if err != nil {
			panic(err)
		}
		a, err := persistent.New(persistent.Config{
			System: "Count words.",
			Tools:  kit,
			Model:  model,
			Store:  store,
			Token:  token,
		})
		if err != nil {
			panic(err)
		}
		return a
	}
	say := func(text string) {
		a := open()
		defer a.Close(ctx)
		err = a.Send(ctx, "terminal", text)
		if err != nil {
			panic(err)
		}
		err = a.Wait(ctx)
		if err != nil {
			panic(err)
		}
	}
	say("count these four words")
	say("and these three") // a new process, say, on the same journal

	a := open()
	defer a.Close(ctx)
	mux := http.NewServeMux()
	mux.Handle("/chat/", http.StripPrefix("/chat", a.Handler()))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer a.CloseStreams()
	req, _ := http.NewRequest("POST", srv.URL+"/chat/inputs", strings.NewReader(
		`{"type":"send-user-message","message":{"id":"m1","content":"and two","timestamp":0,"channel":"api"}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("POST /chat/inputs:", resp.Status)
	if err := a.Wait(ctx); err != nil {
		panic(err)
	}

	s := a.State()
	for _, m := range persistent.Conversation(s.UserMessages, s.AssistantMessages, s.ToolMessages) {
		fmt.Printf("%s: %s", m.Role, m.Content)
		for _, c := range m.ToolCalls {
			fmt.Printf("[calls %s(%s)]", c.Name, c.Input)
		}
		fmt.Println()
	}
	// Output:
	// POST /chat/inputs: 200 OK
	// user: count these four words
	// assistant: [calls word-count({"text":"count these four words"})]
	// tool: 4
	// assistant: That is 4 words.
	// user: and these three
	// assistant: [calls word-count({"text":"and these three"})]
	// tool: 3
	// assistant: That is 3 words.
	// user: and two
	// assistant: [calls word-count({"text":"and two"})]
	// tool: 2
	// assistant: That is 2 words.
}
