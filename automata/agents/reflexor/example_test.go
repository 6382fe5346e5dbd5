package reflexor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moora-go/moora/automata/agents/reflexor"
	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/toolkit"
)

// CountArgs are the word_count tool's arguments, whose JSON Schema the
// brain is shown.
type CountArgs struct {
	Text string `json:"text" jsonschema_description:"The text whose words to count."`
}

// A program mounts a Reflexor under /support/ of its own server, beside
// its other routes; a page (here, a POST as the page sends it) talks to it
// there. The brain is a scripted model that asks for the word_count tool
// and then reports its result; a real program passes openai.FromEnv's.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "support")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := bolt.Open(filepath.Join(dir, "support.db"))
	if err != nil {
		panic(err)
	}
	wordCount := toolkit.Func("word_count", "Counts the words of a text.",
		func(_ context.Context, a CountArgs) (string, error) {
			return strconv.Itoa(len(strings.Fields(a.Text))), nil
		})
	kit, err := toolkit.New(toolkit.Config{}, wordCount)
	if err != nil {
		panic(err)
	}
	model := llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == llm.RoleTool {
			return llm.Response{Text: "That is " + last.Content + " words."}, nil
		}
		args, _ := json.Marshal(CountArgs{Text: last.Content})
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "word_count", Arguments: args}}}, nil
	}}
	token := "secret" // what the page presents
	support, err := reflexor.New(reflexor.Config{
		System: "You are the support desk of Example Inc.",
		Tools:  kit,
		Model:  model,
		Store:  store,
		Token:  token,
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	defer support.Close(ctx)
	idle := make(chan struct{}, 1)
	support.Machine().Subscribe(func(s decl.AgentState) {
		if len(s.AssistantMessages) > 0 && reflexor.Idle(s) {
			select {
			case idle <- struct{}{}:
			default:
			}
		}
	})

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	mux.Handle("/support/", http.StripPrefix("/support", support.Handler()))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	srv.RegisterOnShutdown(support.CloseStreams)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(l)
	defer srv.Shutdown(ctx)

	req, _ := http.NewRequest("POST", "http://"+l.Addr().String()+"/support/agent/inputs",
		strings.NewReader(`{"type":"user-send-message","messageId":"m1","content":"how many words are these"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("POST /support/agent/inputs:", resp.Status)
	<-idle

	s := support.Machine().Current()
	for _, c := range s.ToolCalls {
		fmt.Printf("tool call: %s(%s)\n", c.Name, c.Arguments)
	}
	for _, r := range s.ToolResults {
		fmt.Println("tool result:", r.Content)
	}
	for _, m := range s.AssistantMessages {
		if m.Content != "" {
			fmt.Println("brain:", m.Content)
		}
	}
	// Output:
	// POST /support/agent/inputs: 200 OK
	// tool call: word_count({"text":"how many words are these"})
	// tool result: 5
	// brain: That is 5 words.
}
