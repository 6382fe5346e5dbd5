package reflexor

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
)

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestConversationOverMCP: an MCP client (the Go SDK's) talks to Reflexor at
// agent/mcp: the user's message is its one tool, which waits for the
// brain's reply, tool call and all; the conversation is the state resource;
// a client without the token is refused.
func TestConversationOverMCP(t *testing.T) {
	h := startHost(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: &http.Client{Transport: bearer{h.token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.InitializeResult().Instructions; !strings.Contains(got, "user-send-message") {
		t.Errorf("instructions %q", got)
	}
	tools, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "user-send-message" || !strings.HasPrefix(tools.Tools[0].Description, "The user sends a message.") {
		t.Fatalf("tools: %d, the first %q %q: want the user's message only, described as the spec does", len(tools.Tools), tools.Tools[0].Name, tools.Tools[0].Description)
	}
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "user-send-message", Arguments: map[string]any{"messageId": "m1", "content": "what is 6*7?", "waitFor": "replied", "timeoutMs": 60000}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	var out struct {
		Seq       uint64
		Journaled bool
		Held      bool
		View      decl.ContextOfUser
	}
	data, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(data, &out)
	if !out.Journaled || !out.Held || len(out.View.AssistantMessages) != 2 || out.View.AssistantMessages[1].Content != "The calculator tool says: 42." {
		t.Fatalf("result %s: want it journaled, replied, the reply after the tool call in the view", data)
	}
	if entries, err := h.agent.Machine().Inputs(out.Seq, out.Seq); err != nil || len(entries) != 1 {
		t.Fatalf("the journal at %d: %v %v", out.Seq, entries, err)
	} else if m, ok := entries[0].Input.(decl.UserSendMessage); !ok || m.MessageID != "m1" {
		t.Fatalf("the journal at %d: %+v", out.Seq, entries[0].Input)
	}
	state, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: "agent://self/state"})
	if err != nil || len(state.Contents) != 1 || !strings.Contains(state.Contents[0].Text, "The calculator tool says: 42.") {
		t.Fatalf("the state resource: %v %+v", err, state)
	}

	// Without the token: 401, as on every route of the bridge.
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	req, _ := http.NewRequest("POST", h.base+"/mcp", strings.NewReader(init))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("initialize without the token: %d, want 401", resp.StatusCode)
	}
}
