package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// clusterProc is one process of TestThreeProcessesShareTheConversations.
type clusterProc struct {
	addr string
	cmd  *exec.Cmd
	url  chan string // the first line it prints
}

// TestThreeProcessesShareTheConversations runs the README's three-host
// quick start: three processes with -users -cluster 1, 2 and 3 on one
// -data directory, each running one node of an embedded JetStream cluster.
// A conversation created through the first is sent a message through the
// second (which activates it) and followed through the third (routed to
// the second); the second is killed with SIGKILL, its NATS node with it,
// and a message sent through the first is answered, the conversation now
// the first's, and seen through the third.
func TestThreeProcessesShareTheConversations(t *testing.T) {
	if testing.Short() {
		t.Skip("three processes and a three-node cluster")
	}
	dir := t.TempDir()
	// The cluster's ports, base+1..3 and base+11..13, below the
	// ephemeral range (32768 on Linux), where the loopback connections
	// of the tests that run beside this one take theirs.
	base := 20000 + rand.IntN(12000)
	procs := make([]*clusterProc, 3)
	for i := range procs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := &clusterProc{addr: l.Addr().String(), url: make(chan string, 1)}
		l.Close()
		p.cmd = exec.Command(os.Args[0], "-users", "-cluster", fmt.Sprint(i+1), "-cluster-ports", fmt.Sprintf("%d,%d", base, base+10),
			"-data", dir, "-addr", p.addr, "-token", "test-token", "-delay", "0")
		p.cmd.Env = append(os.Environ(), "REFLEXOR_CHILD=1", "OPENAI_MODEL=", "LLM_PROVIDER=")
		p.cmd.Stderr = os.Stderr
		out, err := p.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				select {
				case p.url <- sc.Text():
				default:
				}
			}
		}()
		procs[i] = p
		t.Cleanup(func() {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		})
	}
	for i, p := range procs {
		select {
		case l := <-p.url:
			if !strings.Contains(l, p.addr) {
				t.Fatalf("process %d printed %q", i+1, l)
			}
		case <-time.After(3 * time.Minute):
			t.Fatalf("process %d did not serve within 3 minutes", i+1)
		}
	}
	api := func(p *clusterProc, method, path, token, body string) (int, string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			req, _ := http.NewRequest(method, "http://"+p.addr+"/api"+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			// 503 while the cluster elects new leaders: as curl --retry.
			if resp.StatusCode == http.StatusServiceUnavailable && time.Now().Before(deadline) {
				time.Sleep(time.Second)
				continue
			}
			return resp.StatusCode, string(data)
		}
	}
	field := func(body, name string) string {
		var v map[string]any
		json.Unmarshal([]byte(body), &v)
		s, _ := v[name].(string)
		return s
	}
	code, body := api(procs[0], "POST", "/sessions", "test-token", "")
	ann := field(body, "token")
	if code != 200 || ann == "" {
		t.Fatalf("POST /sessions: %d %s", code, body)
	}
	code, body = api(procs[0], "POST", "/agents", ann, "")
	id := field(body, "id")
	if code != 201 || id == "" {
		t.Fatalf("POST /agents: %d %s", code, body)
	}
	send := func(p *clusterProc, mid, text string) {
		t.Helper()
		code, body := api(p, "POST", "/agents/"+id+"/inputs", ann, fmt.Sprintf(`{"type":"user-send-message","messageId":%q,"content":%q}`, mid, text))
		if code != 200 {
			t.Fatalf("sending %q through %s: %d %s", text, p.addr, code, body)
		}
	}
	// seen waits until the conversation, read through p, holds want.
	seen := func(p *clusterProc, want string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			req, _ := http.NewRequest("GET", "http://"+p.addr+"/api/agents/"+id+"/state", nil)
			req.Header.Set("Authorization", "Bearer "+ann)
			client := &http.Client{Timeout: 2 * time.Second}
			resp, err := client.Do(req)
			var got string
			if err == nil {
				data, _ := io.ReadAll(resp.Body) // ends at the client's timeout
				resp.Body.Close()
				got = string(data)
			}
			if strings.Contains(got, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the conversation read through %s does not hold %q:\n%.2000s", p.addr, want, got)
			}
		}
	}
	send(procs[1], "m1", "what is 6 * 7?")
	seen(procs[2], "The calculator tool says: 42.")
	procs[1].cmd.Process.Kill() // the conversation's process, and its NATS node
	procs[1].cmd.Wait()
	send(procs[0], "m2", "count these three words")
	seen(procs[2], "The word_count tool says: 4.")
}
