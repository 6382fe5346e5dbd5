package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/llm/openai"
	"github.com/moora-go/moora/internal/tsctest"
)

// TestWithAnMCPServer: with -mcp, the llm calls a tool of a real MCP
// server (the reference server-everything, from npm, over stdio) by name,
// and counts words with its own tool as before.
func TestWithAnMCPServer(t *testing.T) {
	t.Setenv(openai.EnvModel, "") // the offline llm
	t.Setenv("LLM_PROVIDER", "")
	server := tsctest.Bin(t, "mcp-server-everything")
	dir := t.TempDir()
	var out bytes.Buffer
	// One message a run, each answered before the next.
	for _, message := range []string{`call get-sum {"a": 20, "b": 22}`, "count these four words"} {
		out.Reset()
		if err := run([]string{"-data", dir, "-mcp", server + " stdio"}, strings.NewReader(message+"\n"), &out); err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
	}
	assertInOrder(t, out.String(), []string{
		`you: call get-sum {"a": 20, "b": 22}`,
		"assistant: Let me call get-sum.",
		"→ The sum of 20 and 22 is 42.]",
		"assistant: The get-sum tool says: The sum of 20 and 22 is 42.",
		"you: count these four words",
		"assistant: Your message has 4 words.",
	})
}
