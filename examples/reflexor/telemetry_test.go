package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// TestExportsToOTLP: the command, run as a process of its own with
// OTEL_EXPORTER_OTLP_ENDPOINT set to a real server on loopback, exports its
// traces and metrics there over OTLP/HTTP by the time it exits: the user's
// message, the brain's GenAI chat, the calculator's execute_tool, the
// machine's metrics. Without the variable it sends nothing (the other tests
// of the command run so).
func TestExportsToOTLP(t *testing.T) {
	var mu sync.Mutex
	got := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[r.URL.Path] += string(b)
		mu.Unlock()
	}))
	defer srv.Close()
	cmd := exec.Command(os.Args[0], "-terminal", "-data", t.TempDir(), "-delay", "0")
	cmd.Env = append(os.Environ(), "REFLEXOR_CHILD=1", "OPENAI_MODEL=", "LLM_PROVIDER=", "OTEL_EXPORTER_OTLP_ENDPOINT="+srv.URL, "OTEL_SERVICE_NAME=")
	cmd.Stdin = strings.NewReader("what is 6*7?\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "42") {
		t.Errorf("the reply: %s", out)
	}
	mu.Lock()
	defer mu.Unlock()
	for path, wants := range map[string][]string{
		"/v1/traces":  {"reflexor", "moora.input user-send-message", "chat scripted", "gen_ai.usage.output_tokens", "execute_tool calculator", "moora.job"},
		"/v1/metrics": {"moora.inputs", "gen_ai.client.token.usage", "gen_ai.execute_tool.duration"},
	} {
		for _, want := range wants {
			if !strings.Contains(got[path], want) {
				t.Errorf("%s: %d bytes, without %q", path, len(got[path]), want)
			}
		}
	}
}
