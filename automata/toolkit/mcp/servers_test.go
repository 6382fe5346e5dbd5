package mcp_test

// The servers of these tests: the test binary run again as a server over
// stdio, chosen by $MOORA_MCP_TEST_SERVER — a Go MCP server on the same
// SDK ("go"), or a raw program that speaks JSON-RPC by hand to be hostile
// ("endless", "silent", "malformed", "flood", "mute").

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/automata/toolkit/mcp"
)

const serverEnv = "MOORA_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(clientEnv) != "" {
		runConformanceClient()
		os.Exit(0)
	}
	switch kind := os.Getenv(serverEnv); kind {
	case "":
		os.Exit(m.Run())
	case "go":
		goServer()
	default:
		rawServer(kind)
	}
	os.Exit(0)
}

// hang bounds the waits of these tests, so that a bug fails them instead
// of hanging them.
const hang = 60 * time.Second

// self is the Config of a server that is this test binary run as kind.
func self(t testing.TB, kind string) mcp.Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcp.Config{Name: kind, Command: exe, Env: []string{serverEnv + "=" + kind}, Logger: testLogger(t)}
}

// testLogger logs to the test's log, while it runs.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	defer func() { recover() }() // a log line after the test ended
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// mount mounts cfg in kit and waits until it is up.
func mount(t testing.TB, kit *toolkit.Kit, cfg mcp.Config) *mcp.Server {
	t.Helper()
	s, err := mcp.Mount(kit, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// eventually waits until cond holds, failing the test after hang.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hang)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: not %s", hang, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type EchoArgs struct {
	Message string `json:"message" jsonschema:"the message to echo"`
}

type AddArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

type SlowArgs struct {
	Seconds float64 `json:"seconds"`
}

// goServer is an MCP server on the SDK over stdio: echo, add, slow, image,
// resource, fail, key (what _meta said) and grow (which adds a tool,
// "added", and so sends tools/list_changed).
func goServer() {
	s := sdk.NewServer(&sdk.Implementation{Name: "test-go", Version: "1"}, nil)
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes a message."}, func(_ context.Context, _ *sdk.CallToolRequest, a EchoArgs) (*sdk.CallToolResult, any, error) {
		return text(a.Message), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Adds two integers."}, func(_ context.Context, _ *sdk.CallToolRequest, a AddArgs) (*sdk.CallToolResult, any, error) {
		return text(fmt.Sprint(a.A + a.B)), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "slow", Description: "Waits."}, func(ctx context.Context, _ *sdk.CallToolRequest, a SlowArgs) (*sdk.CallToolResult, any, error) {
		select {
		case <-time.After(time.Duration(a.Seconds * float64(time.Second))):
		case <-ctx.Done():
		}
		return text("slept"), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "media", Description: "An image, a text resource, a blob and a link."}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.TextContent{Text: "here:"},
			&sdk.ImageContent{MIMEType: "image/png", Data: make([]byte, 68)},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "the notes"}},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///data.bin", MIMEType: "application/octet-stream", Blob: make([]byte, 1000)}},
			&sdk.ResourceLink{URI: "https://example.invalid/doc", Name: "doc", Description: "A document."},
		}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Fails."}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return nil, nil, fmt.Errorf("the disk is full")
	})
	sdk.AddTool(s, &sdk.Tool{Name: "key", Description: "Says the idempotency key it was given."}, func(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		m := req.Params.GetMeta()
		return text(fmt.Sprintf("%v %v", m[mcp.MetaKey], m[mcp.MetaAttempt])), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "grow", Description: "Adds the tool added, removes echo."}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		sdk.AddTool(s, &sdk.Tool{Name: "added", Description: "Was added."}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return text("I was added"), nil, nil
		})
		s.RemoveTools("echo")
		return text("grown"), nil, nil
	})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// rawServer speaks JSON-RPC over stdio by hand: it answers the handshake
// and lists the tools "ok" and "bad"; "ok" is answered, and "bad" is what
// kind is hostile with:
//   - endless: a result that never ends (one line, growing forever);
//   - silent: no answer, ever;
//   - malformed: a line that is not JSON;
//   - flood: notifications, as fast as it can write, from the handshake on
//     (and "ok" is still answered between them);
//   - mute: no answer to the handshake.
func rawServer(kind string) {
	out := bufio.NewWriter(os.Stdout)
	writes := make(chan string, 64)
	written := make(chan struct{})
	go func() {
		defer close(written)
		defer out.Flush()
		for line := range writes {
			out.WriteString(line)
			out.WriteByte('\n')
			if len(writes) == 0 {
				out.Flush()
			}
		}
	}()
	send := func(v any) {
		b, _ := json.Marshal(v)
		writes <- string(b)
	}
	tool := func(name string) map[string]any {
		return map[string]any{"name": name, "description": "A tool.", "inputSchema": map[string]any{"type": "object"}}
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name            string `json:"name"`
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue // a notification, or a response
		}
		result := func(r any) { send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": r}) }
		switch req.Method {
		case "initialize":
			if kind == "mute" {
				continue
			}
			result(map[string]any{"protocolVersion": req.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{"listChanged": true}},
				"serverInfo": map[string]any{"name": "raw-" + kind, "version": "1"}})
			if kind == "flood" {
				go func() {
					for i := 0; ; i++ {
						send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": strings.Repeat("flood ", 20) + fmt.Sprint(i)}})
						if i%3 == 0 {
							send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
						}
					}
				}()
			}
		case "tools/list":
			result(map[string]any{"tools": []any{tool("ok"), tool("bad")}})
		case "ping":
			result(map[string]any{})
		case "tools/call":
			if req.Params.Name == "ok" {
				result(map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok"}}})
				continue
			}
			switch kind {
			case "endless":
				close(writes)
				<-written
				fmt.Fprintf(os.Stdout, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, req.ID)
				chunk := strings.Repeat("x", 1<<16)
				for {
					if _, err := os.Stdout.WriteString(chunk); err != nil {
						os.Exit(0)
					}
				}
			case "silent":
			case "malformed":
				writes <- `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"content":[{"type":"text",`
				writes <- `this is not JSON`
			default:
				result(map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok"}}})
			}
		default:
			send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
		}
	}
}
