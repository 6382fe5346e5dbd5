package devpanel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/devpanel"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

// A panel with its trace view: the program's TracerProvider records into a
// Traces, the agent is traced with it (automata.WithTelemetry), and the
// panel reads the Traces. The trace of the user's message is the causal
// chain: the message, the job it called for, that job's model call (made
// here as llm.Traced makes it: a child of the span in the job's context)
// and the reply the job dispatched, with the journal's entry of each input.
func ExampleNewTraces() {
	dir, err := os.MkdirTemp("", "panel")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := bolt.Open(filepath.Join(dir, "agent.db"))
	if err != nil {
		panic(err)
	}

	traces := devpanel.NewTraces(0) // the latest DefaultMaxSpans spans
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(traces))
	defer tp.Shutdown(context.Background())

	reply := func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		_, call := trace.SpanFromContext(ctx).TracerProvider().Tracer("example").Start(ctx, "chat gpt-4o-mini",
			trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attribute.String("gen_ai.operation.name", "chat")))
		call.End()
		dispatch(decl.SendAssiMessage{ID: "re-u1", Content: "hello to you", Timestamp: 2})
		return nil
	}
	jobs := decl.JobFns{Llm: func(c decl.ContextOfLlm) map[string]automata.Job[decl.AgentInput] {
		if len(c.UserMessages) > len(c.AssiMessages) {
			return map[string]automata.Job[decl.AgentInput]{"reply": reply}
		}
		return nil
	}}
	m, panel, err := devpanel.Open(store, devpanel.Config[decl.AgentState, decl.AgentInput]{
		Definition:  agent.Definition(),
		Decode:      decl.DecodeClientInput,
		InputSchema: decl.InputSchema(),
		Auth:        httpbridge.Bearer("s3cret"),
		Actor: func(in decl.AgentInput) string {
			if _, ok := in.(decl.InputFromUser); ok {
				return "user"
			}
			return "llm"
		},
		Traces:  traces,
		AgentID: "agent-1", // optional for one agent
	}, journal.Options[decl.AgentState, decl.AgentInput]{Codec: journal.JSONGob[decl.AgentState](decl.DecodeInput)},
		automata.WithTelemetry[decl.AgentState, decl.AgentInput](tp, nil), agent.WithJobs(jobs))
	if err != nil {
		panic(err)
	}
	defer m.Close(context.Background())
	srv := httptest.NewServer(panel)
	defer srv.Close()
	call := func(method, path, body string) (int, []byte) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		var data json.RawMessage
		json.NewDecoder(resp.Body).Decode(&data)
		return resp.StatusCode, data
	}
	call("POST", "/inputs", `{"type":"send-user-message","id":"u1","content":"hello","timestamp":1}`)

	type span struct {
		Depth          int
		Name, Category string
		Input          *struct {
			Seq   uint64
			Actor string
		}
		Chosen bool
	}
	var t struct{ Spans []span }
	// The trace grows while the job runs: the page fetches it again as
	// the panel's events come; the example waits for the reply's span.
	for deadline := time.Now().Add(10 * time.Second); len(t.Spans) < 4 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if code, data := call("GET", "/trace?seq=1", ""); code == http.StatusOK {
			json.Unmarshal(data, &t)
		}
	}
	for _, s := range t.Spans {
		fmt.Printf("%s%-5s %s", strings.Repeat("  ", s.Depth), s.Category, s.Name)
		if s.Input != nil {
			fmt.Printf(" (journal: input %d by %s)", s.Input.Seq, s.Input.Actor)
		}
		if s.Chosen {
			fmt.Print(" ← chosen")
		}
		fmt.Println()
	}
	code, data := call("GET", "/trace?seq=3", "")
	fmt.Println(code, string(data))
	// Output:
	// input moora.input send-user-message (journal: input 1 by user) ← chosen
	//   job   moora.job
	//     model chat gpt-4o-mini
	//     input moora.input send-assi-message (journal: input 2 by llm)
	// 404 {"error":"no input 3 yet: the journal ends at 2"}
}
