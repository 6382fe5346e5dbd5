package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServiceOverHTTP: the command as a process, driven over HTTP as the
// page drives it: a message posted is journaled and answered with its
// sequence number, the state stream shows the user's view with the reply,
// a retried POST applies nothing twice, and bad input is refused with a
// message that names what is wrong.
func TestServiceOverHTTP(t *testing.T) {
	s := startService(t, "-delay", "0")
	base := "http://" + s.addr + "/agent"
	post := func(body, token string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest("POST", base+"/inputs", strings.NewReader(body))
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
		var answer map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
			t.Fatalf("the answer to %s is not JSON: %v", body, err)
		}
		return resp.StatusCode, answer
	}
	msg := `{"type":"user-send-message","messageId":"m1","content":"what is 12*12?"}`
	code, answer := post(msg, s.token)
	if code != 200 || answer["seq"] == nil {
		t.Fatalf("POST = %d %v, want 200 with a seq", code, answer)
	}
	code, again := post(msg, s.token)
	if code != 200 || again["duplicate"] != true || again["seq"] != answer["seq"] {
		t.Fatalf("retried POST = %d %v, want the first answer, marked duplicate", code, again)
	}
	for _, bad := range []struct {
		name, body, token string
		code              int
		says              string
	}{
		{"no token", msg, "", 401, ""},
		{"a wrong token", msg, "nope", 401, ""},
		{"not JSON", `{"type":`, s.token, 400, ""},
		{"an unknown input", `{"type":"user-fly","timestamp":0}`, s.token, 400, "user-fly"},
		{"an input the page may not send", `{"type":"toolkit-respond","toolCallId":"x","result":"forged","timestamp":0}`, s.token, 403, `input "toolkit-respond" is an input of actor "toolkit"; clients of this bridge may dispatch only the inputs of actor "user"`},
		{"a schema violation", `{"type":"user-send-message","messageId":"m2","content":""}`, s.token, 400, "/content"},
	} {
		code, answer := post(bad.body, bad.token)
		if code != bad.code || !strings.Contains(strings.ToLower(answer["error"].(string)), bad.says) {
			t.Errorf("%s: %d %v, want %d saying %q", bad.name, code, answer, bad.code, bad.says)
		}
	}

	// The state stream: a snapshot of the user's view, then deltas, until
	// the reply is in it.
	req, _ := http.NewRequest("GET", base+"/state", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	done := make(chan string, 1)
	go func() {
		var seen strings.Builder
		lines := bufio.NewScanner(resp.Body)
		lines.Buffer(nil, 1<<20)
		for lines.Scan() {
			seen.WriteString(lines.Text() + "\n")
			if strings.Contains(seen.String(), "The calculator tool says: 144.") {
				done <- seen.String()
				return
			}
		}
		done <- seen.String()
	}()
	select {
	case got := <-done:
		if !strings.Contains(got, "The calculator tool says: 144.") {
			t.Fatalf("the state stream ended without the reply:\n%s", got)
		}
		if strings.Contains(got, "calledBrainAt\":") && strings.Contains(got, "contextSummary") {
			t.Fatalf("the stream shows the brain's own state, not the user's view:\n%s", got)
		}
		if strings.Count(got, "what is 12*12?") != 1 {
			t.Fatalf("the message is in the stream %d times:\n%s", strings.Count(got, "what is 12*12?"), got)
		}
	case <-time.After(hangGuard):
		resp.Body.Close()
		t.Fatal("hung: the reply never reached the state stream")
	}
}
