package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// onJetStream checks that the journal in dir is on the embedded NATS
// server, not in a bbolt file.
func onJetStream(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "agent.db")); err == nil {
		t.Errorf("%s holds a bbolt journal (agent.db): -nats embedded was not used", dir)
	}
	if fi, err := os.Stat(filepath.Join(dir, "nats")); err != nil || !fi.IsDir() {
		t.Errorf("the embedded server's files are not in %s/nats: %v", dir, err)
	}
}

// TestTerminalChatOnEmbeddedJetStream: with -nats embedded the journal is
// on a NATS server inside the process, its files in -data; a second run
// continues the conversation from there.
func TestTerminalChatOnEmbeddedJetStream(t *testing.T) {
	dir := t.TempDir()
	args := []string{"-terminal", "-data", dir, "-delay", "0", "-nats", "embedded"}
	var out bytes.Buffer
	if err := run(args, strings.NewReader("what is 6*7?\n"), &out); err != nil {
		t.Fatalf("first run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "brain: The calculator tool says: 42.") {
		t.Fatalf("first run:\n%s", out.String())
	}
	out.Reset()
	if err := run(args, strings.NewReader("count these three\n"), &out); err != nil {
		t.Fatalf("second run: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{"you: what is 6*7?", "brain: The calculator tool says: 42.", "you: count these three", "brain: The word_count tool says: 3."} {
		if !strings.Contains(got, want) {
			t.Errorf("second run lacks %q:\n%s", want, got)
		}
	}
	onJetStream(t, dir)
}

// stop stops the service as Ctrl-C does, and waits until it has exited:
// its agent closed, its lease released, its server shut down.
func (s *service) stop() {
	s.t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	err := s.cmd.Wait()
	s.cmd = nil
	if err != nil {
		s.t.Fatalf("the service, stopped with SIGTERM: %v", err)
	}
}

// stateUntil follows the user's view of the state until an event holds
// want, and returns the events so far.
func stateUntil(t *testing.T, s *service, want string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+s.addr+"/agent/state", nil)
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
			if strings.Contains(lines.Text(), want) {
				break
			}
		}
		done <- seen.String()
	}()
	select {
	case got := <-done:
		if !strings.Contains(got, want) {
			t.Fatalf("the state stream ended without %q:\n%s", want, got)
		}
		return got
	case <-time.After(hangGuard):
		resp.Body.Close()
		t.Fatalf("hung: %q never reached the state stream", want)
		return ""
	}
}

// post posts a user message and checks that it is accepted.
func post(t *testing.T, s *service, id, text string) {
	t.Helper()
	body := fmt.Sprintf(`{"type":"user-send-message","messageId":%q,"content":%q}`, id, text)
	req, err := http.NewRequest("POST", "http://"+s.addr+"/agent/inputs", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s = %d, want 200", body, resp.StatusCode)
	}
}

// snapshotHolds checks that the first event of the state stream, the
// snapshot, holds each of want.
func snapshotHolds(t *testing.T, s *service, want ...string) {
	t.Helper()
	snapshot := stateUntil(t, s, "data: ")
	if !strings.Contains(snapshot, "event: snapshot\ndata: ") {
		t.Fatalf("the first event is not the snapshot:\n%s", snapshot)
	}
	for _, w := range want {
		if !strings.Contains(snapshot, w) {
			t.Errorf("the snapshot lacks %q:\n%s", w, snapshot)
		}
	}
}

// TestServiceOnEmbeddedJetStream: the command as a process on -nats
// embedded, driven over HTTP: a conversation, a stop, and a restart on the
// same -data; the page's first event after the restart, the snapshot,
// holds the conversation, from JetStream.
func TestServiceOnEmbeddedJetStream(t *testing.T) {
	s := startService(t, "-delay", "0", "-nats", "embedded")
	post(t, s, "m1", "what is 12*12?")
	stateUntil(t, s, "The calculator tool says: 144.")
	s.stop()
	onJetStream(t, s.dir)
	s.start()
	snapshotHolds(t, s, "what is 12*12?", "The calculator tool says: 144.")
}

// TestServiceKilledOnEmbeddedJetStream: killed with SIGKILL, the process
// takes its server down with it, without releasing the agent's lease; the
// next run on the same -data restarts the server from its files, takes the
// agent over from the dead run and goes on with the conversation.
func TestServiceKilledOnEmbeddedJetStream(t *testing.T) {
	s := startService(t, "-delay", "0", "-nats", "embedded")
	post(t, s, "m1", "count these four words")
	stateUntil(t, s, "The word_count tool says: 4.")
	s.kill()
	s.start()
	snapshotHolds(t, s, "count these four words", "The word_count tool says: 4.")
	post(t, s, "m2", "what is 2+3?")
	stateUntil(t, s, "The calculator tool says: 5.")
}
