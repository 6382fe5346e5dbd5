package httpbridge_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

// A durable agent (the runtime's chat test agent) served over HTTP as
// the package documentation shows it: an input POSTed with the bearer
// token is answered with its position in the journal, and the state
// stream starts with a snapshot of the user's view that holds it.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "bridge")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := bolt.Open(filepath.Join(dir, "agent.db"))
	if err != nil {
		panic(err)
	}
	m, err := journal.Open(store, agent.Definition(), journal.Options[decl.AgentState, decl.AgentInput]{
		Codec: journal.JSONGob[decl.AgentState](decl.DecodeInput),
	})
	if err != nil {
		panic(err)
	}
	defer m.Close(context.Background())
	token := "s3cret"
	streams := httpbridge.NewStreams(httpbridge.StreamOptions{}) // the llm's jobs would write its replies here
	b, err := httpbridge.New[decl.AgentState, decl.AgentInput, decl.ContextOfUser](m, httpbridge.Config[decl.AgentState, decl.AgentInput, decl.ContextOfUser]{
		Decode:  decl.DecodeClientInput,
		View:    decl.AgentState.ContextOfUser,
		Auth:    httpbridge.Bearer(token),
		InputID: func(in decl.AgentInput) string { return in.(decl.SendUserMessage).ID },
		Streams: streams, // written by the llm's jobs
	})
	if err != nil {
		panic(err)
	}
	addr := "localhost:0"
	l, err := net.Listen("tcp", addr)
	if err != nil {
		panic(err)
	}
	srv := &http.Server{Addr: addr, Handler: http.StripPrefix("/agent", b),
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: time.Minute}
	srv.RegisterOnShutdown(b.Close)
	go srv.Serve(l)
	base := "http://" + l.Addr().String() + "/agent"

	req, _ := http.NewRequest("POST", base+"/inputs", strings.NewReader(`{"type":"send-user-message","id":"u1","content":"hello","timestamp":1}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("POST /inputs: %d %s", resp.StatusCode, body)

	req, _ = http.NewRequest("GET", base+"/state", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	events := bufio.NewScanner(resp.Body)
	for events.Scan() { // retry:, a blank line, then the snapshot event
		line := events.Text()
		if strings.HasPrefix(line, "event:") || strings.HasPrefix(line, "data:") {
			fmt.Println(line)
		}
		if strings.HasPrefix(line, "data:") {
			break
		}
	}
	resp.Body.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	b.Close() // returns once every stream has had its close event
	// Output:
	// POST /inputs: 200 {"seq":1}
	// event: snapshot
	// data: {"seq":1,"view":{"assiMessages":[],"userMessages":[{"id":"u1","content":"hello","timestamp":1}]}}
}
