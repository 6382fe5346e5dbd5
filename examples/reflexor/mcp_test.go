package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/moora-go/moora/internal/tsctest"
)

// TestTerminalWithAnMCPServer: with -mcp, the brain calls the tools of a
// real MCP server (the reference server-everything, from npm, over stdio)
// as it calls its own: a tool of the server's called by name, its result
// reported; and a tool of the agent's own beside it.
func TestTerminalWithAnMCPServer(t *testing.T) {
	server := tsctest.Bin(t, "mcp-server-everything")
	dir := t.TempDir()
	var got string
	// One message a run: the brain answers the newest of the messages
	// that came at once.
	for _, message := range []string{`call get-sum {"a": 20, "b": 22}`, "what is 6*7?", `call echo {"message": "over MCP"}`} {
		var out bytes.Buffer
		if err := run([]string{"-terminal", "-data", dir, "-delay", "0", "-mcp", server + " stdio"}, strings.NewReader(message+"\n"), &out); err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
		got = out.String()
	}
	for _, want := range []string{
		`brain: Let me call get-sum.`,
		`get-sum({"a": 20, "b": 22})]`,
		"→ The sum of 20 and 22 is 42.]",
		"brain: The calculator tool says: 42.",
		"brain: The echo tool says: Echo: over MCP.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the conversation lacks %q:\n%s", want, got)
		}
	}
}

// TestMCPFlagRefusesWhatIsNoServer: -mcp with nothing, or a URL without a
// host, is refused before anything starts.
func TestMCPFlagRefusesWhatIsNoServer(t *testing.T) {
	for _, bad := range []string{"", "  ", "http:///mcp"} {
		var out bytes.Buffer
		err := run([]string{"-terminal", "-data", t.TempDir(), "-mcp", bad}, strings.NewReader(""), &out)
		if err == nil || !strings.Contains(err.Error(), "-mcp") {
			t.Errorf("-mcp %q: %v, want it refused", bad, err)
		}
	}
}
