package mcpserve_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/moora-go/moora/automata/httpbridge/mcpserve"
)

// TestStdio serves one agent over a pair of pipes, as over standard input
// and output, and calls its tool with the Go SDK's client.
func TestStdio(t *testing.T) {
	a := newSingle(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- mcpserve.ServeIO(ctx, a.b, mcpConfig(), inR, outW) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "send-user-message", Arguments: map[string]any{"id": "s1", "content": "over stdio", "timestamp": 0}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	if got := a.m.Current().UserMessages; len(got) != 1 || got[0].Content != "over stdio" {
		t.Fatalf("state: %+v", got)
	}
	s.Close()
	select {
	case <-served:
	case <-ctx.Done():
		t.Fatal("ServeIO did not return once the client closed")
	}
}
