package devpanel_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moora-go/moora/automata/devpanel"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

// A panel wired into a durable agent (the runtime's chat test agent)
// as the package documentation shows it: an input sent from the panel is
// journaled, and the state after it is there to travel back to.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "panel")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := bolt.Open(filepath.Join(dir, "agent.db"))
	if err != nil {
		panic(err)
	}
	token := "s3cret"
	jobs := decl.JobFns{} // the actors' jobs: none here
	jobKeys := func(s decl.AgentState) []string { return nil }
	codec := journal.JSONGob[decl.AgentState](decl.DecodeInput)
	m, panel, err := devpanel.Open(store, devpanel.Config[decl.AgentState, decl.AgentInput]{
		Definition:  agent.Definition(),
		Decode:      decl.DecodeClientInput,
		InputSchema: decl.InputSchema(),
		Auth:        httpbridge.Bearer(token),
		Jobs:        jobKeys, // optional: keys a state calls for
	}, journal.Options[decl.AgentState, decl.AgentInput]{Codec: codec}, agent.WithJobs(jobs))
	if err != nil {
		panic(err)
	}
	defer m.Close(context.Background())
	mux := http.NewServeMux()
	mux.Handle("/devpanel/", http.StripPrefix("/devpanel", panel))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	srv.RegisterOnShutdown(panel.Close) // Shutdown does not end event streams
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(l)
	base := "http://" + l.Addr().String() + "/devpanel"
	call := func(method, path, body string) string {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(data)))
	}
	fmt.Println(call("POST", "/inputs", `{"type":"send-user-message","id":"u1","content":"hello","timestamp":1}`))
	fmt.Println(call("GET", "/state?seq=1", ""))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	// Output:
	// 200 {"seq":1}
	// 200 {"jobs":[],"seq":1,"state":{"assiMessages":[],"userMessages":[{"id":"u1","content":"hello","timestamp":1}]}}
}
