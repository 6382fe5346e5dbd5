package persistent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/moora-go/moora/automata/agents/persistent/decl"
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

// TestOverMCP: an MCP client (the Go SDK's) sends the agent a message at
// mcp and waits for its reply, the tool call and its result before it; the
// message is journaled once.
func TestOverMCP(t *testing.T) {
	a := newAgent(t, Config{Token: "mcp-token"})
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	defer a.CloseStreams()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{"mcp-token", http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tools, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, " ") != "send-user-message set-system-prompt" {
		t.Fatalf("tools %q, want the user's inputs", names)
	}
	args := map[string]any{"message": map[string]any{"id": "m1", "content": "count these four words", "channel": "api", "timestamp": 0}, "waitFor": "replied", "timeoutMs": 30000}
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "send-user-message", Arguments: args})
	if err != nil || res.IsError {
		if res != nil && len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				t.Fatalf("call: %v: %s", err, tc.Text)
			}
		}
		t.Fatalf("call: %v %+v", err, res)
	}
	var out struct {
		Seq  uint64
		Held bool
		View decl.ContextOfUser
	}
	data, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(data, &out)
	n := len(out.View.AssistantMessages)
	if !out.Held || n == 0 || out.View.AssistantMessages[n-1].Content != "Your message has 4 words." {
		t.Fatalf("result %s: want the reply in the view", data)
	}
	if s := a.State(); len(s.UserMessages) != 1 || s.UserMessages[0].ID != "m1" {
		t.Fatalf("the state's user messages: %+v", s.UserMessages)
	}
	if !strings.Contains(conversation(a.State()), "word-count") {
		t.Errorf("the conversation: %s", conversation(a.State()))
	}
}
