package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/internal/testbuf"
)

// serveSpec is a help desk of two actors: clients of the program init
// writes play the first, the customer, by default.
const serveSpec = `version: 1
actors: [customer, desk]
observations:
  customer:
    customer: {tickets: {type: array, items: {type: string}}}
    desk: {acknowledged: {type: array, items: {type: string}}}
inputs:
  customer:
    open-ticket:
      type: object
      properties: {id: {type: string}}
      required: [id]
  desk:
    acknowledge-ticket:
      type: object
      properties: {ticketId: {type: string}}
      required: [ticketId]
`

// serveBodies are the bodies of the stubs of serveSpec.
var serveBodies = map[string]string{
	"impl/initials/customer.go": `package initials

import "desk/decl"

func Customer() decl.StateOfCustomer { return decl.StateOfCustomer{Tickets: []string{}} }
`,
	"impl/initials/desk.go": `package initials

import "desk/decl"

func Desk() decl.StateOfDesk { return decl.StateOfDesk{Acknowledged: []string{}} }
`,
	"impl/transitions/customer_open-ticket.go": `package transitions

import "desk/decl"

func OpenTicket(state decl.StateOfCustomer, input decl.OpenTicket) decl.StateOfCustomer {
	state.Tickets = append(state.Tickets[:len(state.Tickets):len(state.Tickets)], input.ID)
	return state
}
`,
	"impl/transitions/desk_acknowledge-ticket.go": `package transitions

import "desk/decl"

func AcknowledgeTicket(state decl.StateOfDesk, input decl.AcknowledgeTicket) decl.StateOfDesk {
	state.Acknowledged = append(state.Acknowledged[:len(state.Acknowledged):len(state.Acknowledged)], input.TicketID)
	return state
}
`,
}

// TestInitServe runs the program agentgen init --spec writes, built and
// started as a person starts it, on loopback, and checks its safe
// defaults: clients may POST the first actor's inputs only (another
// actor's get 403, unless -client-actors names it); with no token it
// serves loopback but refuses, before it opens the journal, an address
// other machines reach, saying how to set a token; with AGENT_TOKEN set,
// it serves there, and a request without the token gets 401.
func TestInitServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs an agent")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	t.Setenv("GOWORK", "off")
	t.Setenv("GOPROXY", "off")
	work := t.TempDir()
	spec := filepath.Join(work, "desk.yaml")
	if err := os.WriteFile(spec, []byte(serveSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(work, "desk")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"init", dir, "--spec", spec}, &stdout, &stderr); code != 0 {
		t.Fatalf("agentgen init: exit %d\n%s%s", code, stdout.Bytes(), stderr.Bytes())
	}
	for name, body := range serveBodies {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(work, "desk-bin")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The program's environment: this one, without a token of its own.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "AGENT_TOKEN=") })

	open := map[string]any{"type": "open-ticket", "id": "t1"}
	ack := map[string]any{"type": "acknowledge-ticket", "ticketId": "t1"}

	t.Run("loopback: the first actor's inputs only", func(t *testing.T) {
		base := serve(t, bin, env, "-data", filepath.Join(work, "data1"), "-addr", "127.0.0.1:0")
		if status, body := post(t, base, "", open); status != http.StatusOK || body != `{"seq":1}` {
			t.Errorf("the customer's input: %d %s, want 200 {\"seq\":1}", status, body)
		}
		status, body := post(t, base, "", ack)
		const why = `input "acknowledge-ticket" is an input of actor "desk"; clients of this bridge may dispatch only the inputs of actor "customer"`
		if status != http.StatusForbidden || !strings.Contains(errorOf(t, body), why) {
			t.Errorf("the desk's input: %d %s, want 403 saying %q", status, body, why)
		}
	})

	t.Run("-client-actors names the desk too", func(t *testing.T) {
		base := serve(t, bin, env, "-data", filepath.Join(work, "data2"), "-addr", "127.0.0.1:0", "-client-actors", "customer,desk")
		for i, in := range []map[string]any{open, ack} {
			if status, body := post(t, base, "", in); status != http.StatusOK || body != fmt.Sprintf(`{"seq":%d}`, i+1) {
				t.Errorf("%s: %d %s, want 200 with seq %d", in["type"], status, body, i+1)
			}
		}
	})

	t.Run("-client-actors names no actor of the spec", func(t *testing.T) {
		data := filepath.Join(work, "data3")
		out := refused(t, bin, env, "-data", data, "-addr", "127.0.0.1:0", "-client-actors", "customer,clerk")
		if want := `desk: -client-actors: agent.yaml has no actor "clerk" (its actors: [customer desk])`; !strings.Contains(out, want) {
			t.Errorf("output %q, want %q", out, want)
		}
	})

	t.Run("no token on an address other machines reach", func(t *testing.T) {
		data := filepath.Join(work, "data4")
		out := refused(t, bin, env, "-data", data, "-addr", "0.0.0.0:0")
		for _, want := range []string{"desk: -addr 0.0.0.0:0: other machines may reach ", "without a token anyone who does may dispatch inputs", "set one with -token or the AGENT_TOKEN environment variable", "Authorization: Bearer <token>", "-addr localhost:8080"} {
			if !strings.Contains(out, want) {
				t.Errorf("output %q, want it to say %q", out, want)
			}
		}
		if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("refused, it still made %s (%v)", data, err)
		}
	})

	t.Run("AGENT_TOKEN on an address other machines reach", func(t *testing.T) {
		const token = "s3cret-token"
		base := serve(t, bin, append(slices.Clip(env), "AGENT_TOKEN="+token), "-data", filepath.Join(work, "data5"), "-addr", "0.0.0.0:0")
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		base = "http://" + net.JoinHostPort("127.0.0.1", u.Port())
		if status, body := post(t, base, "", open); status != http.StatusUnauthorized {
			t.Errorf("without the token: %d %s, want 401", status, body)
		}
		if status, body := post(t, base, "wrong", open); status != http.StatusUnauthorized {
			t.Errorf("with another token: %d %s, want 401", status, body)
		}
		if status, body := post(t, base, token, open); status != http.StatusOK || body != `{"seq":1}` {
			t.Errorf("with the token: %d %s, want 200 {\"seq\":1}", status, body)
		}
	})
}

// serve starts the program and returns its base URL once it serves; it is
// interrupted, and must exit cleanly, when the test ends.
func serve(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	var out testbuf.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("on interrupt: %v\n%s", err, out.String())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("still running 30s after an interrupt\n%s", out.String())
		}
	})
	out.Wait(t, "INFO serving url=", 30*time.Second)
	m := regexp.MustCompile(`url=(http://\S+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no url in %q", out.String())
	}
	return m[1]
}

// refused runs the program, which must exit with status 1 without
// serving, and returns its output.
func refused(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1", err)
	}
	if strings.Contains(string(out), "serving") {
		t.Errorf("it served: %s", out)
	}
	return string(out)
}

// post POSTs an input as JSON to base/inputs, with a bearer token unless
// token is "", and returns the status and the body.
func post(t *testing.T, base, token string, in map[string]any) (int, string) {
	t.Helper()
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, base+"/inputs", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// errorOf returns the message of an error answer, {"error":"..."}.
func errorOf(t *testing.T, body string) string {
	t.Helper()
	var e struct{ Error string }
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Errorf("%q is not an error answer: %v", body, err)
	}
	return e.Error
}
