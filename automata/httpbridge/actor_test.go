package httpbridge

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/internal/chattest/decl"
)

// assiMessage is an input of the chat test agent's llm actor, which no client of a
// bridge that lets clients play the user may dispatch.
func assiMessage(id, content string) map[string]any {
	return map[string]any{"type": "send-assi-message", "id": id, "content": content, "timestamp": 0}
}

// errorOf is the message of an error answer.
func errorOf(t *testing.T, body []byte) string {
	t.Helper()
	var e struct{ Error string }
	if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
		t.Fatalf("the answer %s is not a JSON error: %v", body, err)
	}
	return e.Error
}

// TestClientsPlayTheUser: by default a client plays the user. The user's
// input is applied; the llm's is refused with 403 and a message that names
// the input, its actor and the actor clients play, and nothing reaches the
// agent: not the journal, not the state.
func TestClientsPlayTheUser(t *testing.T) {
	f := newFixture(t, nil)
	c := newClient(f.srv.URL, testToken)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only if it hangs
	defer cancel()

	// Refused before anything was applied: the journal stays empty.
	status, body, err := c.post(ctx, assiMessage("forged-1", "I am the llm"))
	if err != nil {
		t.Fatal(err)
	}
	msg := errorOf(t, body)
	if status != http.StatusForbidden {
		t.Fatalf("the llm's input: %d %s, want 403", status, msg)
	}
	for _, want := range []string{`"send-assi-message"`, `actor "llm"`, `actor "user"`, "Config.ClientActors"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the 403 message %q does not say %s", msg, want)
		}
	}
	t.Logf("403 %s", msg)
	if seq, s := f.m.Seq(), f.m.Current(); seq != 0 || len(s.AssiMessages) != 0 || len(s.UserMessages) != 0 {
		t.Fatalf("after the 403: seq %d, state %+v; want nothing applied", seq, s)
	}

	// The user's input is applied, and the llm's job answers it.
	status, body, err = c.post(ctx, userMessage("u1", "hello"))
	if err != nil || status != http.StatusOK || !strings.Contains(string(body), `"seq":1`) {
		t.Fatalf("the user's input: %d %s %v, want 200 with seq 1", status, body, err)
	}
	if got := f.m.Current().UserMessages; len(got) != 1 || got[0].ID != "u1" {
		t.Fatalf("user messages %+v, want u1", got)
	}
	waitFor(t, func() bool { return f.m.Seq() == 2 }) // the reply, dispatched by the agent's own job
	reply := f.m.Current().AssiMessages
	if len(reply) != 1 || reply[0].ID != "re-u1" {
		t.Fatalf("llm messages %+v, want the job's reply re-u1", reply)
	}

	// Refused again: the journal and the state are as they were.
	status, body, err = c.post(ctx, assiMessage("forged-2", "also the llm"))
	if err != nil || status != http.StatusForbidden {
		t.Fatalf("the llm's input: %d %s %v, want 403", status, body, err)
	}
	if seq := f.m.Seq(); seq != 2 {
		t.Errorf("seq %d after the 403, want 2", seq)
	}
	entries, err := f.m.Inputs(1, f.m.Seq())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if m, ok := e.Input.(decl.SendAssiMessage); ok && strings.HasPrefix(m.ID, "forged") {
			t.Errorf("the journal holds the refused input %+v at %d", m, e.Seq)
		}
	}
	if got := f.m.Current().AssiMessages; len(got) != 1 || got[0].ID != "re-u1" {
		t.Errorf("llm messages %+v after the 403, want only re-u1", got)
	}
}

// TestClientActorsLetClientsPlayAnotherActor: an actor named in
// ClientActors is one clients may play; the others stay refused.
func TestClientActorsLetClientsPlayAnotherActor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	llm := newFixture(t, func(c *Config[state, input, view]) { c.ClientActors = []string{"llm"} })
	c := newClient(llm.srv.URL, testToken)
	status, body, err := c.post(ctx, assiMessage("a1", "posted as the llm"))
	if err != nil || status != http.StatusOK || !strings.Contains(string(body), `"seq":1`) {
		t.Fatalf("the llm's input with ClientActors [llm]: %d %s %v, want 200 with seq 1", status, body, err)
	}
	if got := llm.m.Current().AssiMessages; len(got) != 1 || got[0].ID != "a1" || got[0].Content != "posted as the llm" {
		t.Fatalf("llm messages %+v, want a1", got)
	}
	status, body, err = c.post(ctx, userMessage("u1", "hello"))
	if err != nil || status != http.StatusForbidden || !strings.Contains(errorOf(t, body), `actor "user"; clients of this bridge may dispatch only the inputs of actor "llm"`) {
		t.Fatalf("the user's input with ClientActors [llm]: %d %s %v, want 403", status, body, err)
	}
	if seq, s := llm.m.Seq(), llm.m.Current(); seq != 1 || len(s.UserMessages) != 0 {
		t.Fatalf("after the 403: seq %d, user messages %+v; want seq 1 and none", seq, s.UserMessages)
	}

	for _, actors := range [][]string{{"user", "llm"}, {"*"}} {
		both := newFixture(t, func(c *Config[state, input, view]) { c.ClientActors = actors })
		c := newClient(both.srv.URL, testToken)
		for i, in := range []map[string]any{userMessage("u1", "hello"), assiMessage("a1", "hi")} {
			status, body, err := c.post(ctx, in)
			if err != nil || status != http.StatusOK {
				t.Fatalf("ClientActors %q, %s: %d %s %v, want 200", actors, in["type"], status, body, err)
			}
			if seq := both.m.Seq(); seq < uint64(i+1) {
				t.Fatalf("ClientActors %q, %s: seq %d, want at least %d", actors, in["type"], seq, i+1)
			}
		}
		if s := both.m.Current(); len(s.UserMessages) != 1 || !hasAssi(s, "a1") {
			t.Fatalf("ClientActors %q: state %+v, want u1 and a1", actors, s)
		}
	}
}

func hasAssi(s state, id string) bool {
	for _, m := range s.AssiMessages {
		if m.ID == id {
			return true
		}
	}
	return false
}

// TestInputsThatNameNoActor: a hand-written agent whose inputs have no
// InputActor gets them refused, whatever ClientActors names, unless it is
// ["*"]: any input.
func TestInputsThatNameNoActor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		actors []string
		status int
	}{
		{nil, http.StatusForbidden},
		{[]string{"user", "text"}, http.StatusForbidden},
		{[]string{"*"}, http.StatusOK},
	} {
		m, _, srv := newTextBridge(t, Config[textState, string, textState]{ClientActors: tc.actors})
		status, body, err := newClient(srv.URL, "").post(ctx, "some text")
		if err != nil || status != tc.status {
			t.Fatalf("ClientActors %q: %d %s %v, want %d", tc.actors, status, body, err, tc.status)
		}
		want := textState{}
		if status == http.StatusOK {
			want = textState{N: 1, Text: "some text"}
		} else if msg := errorOf(t, body); !strings.Contains(msg, "names no actor (its type string has no method InputActor() string)") || !strings.Contains(msg, `["*"]`) {
			t.Errorf("ClientActors %q: the 403 message %q does not say why, and what would accept it", tc.actors, msg)
		}
		if got := m.Current(); got != want {
			t.Errorf("ClientActors %q: state %+v, want %+v", tc.actors, got, want)
		}
	}
}

// TestNewChecksClientActors: New refuses a ClientActors that cannot be
// what was meant.
func TestNewChecksClientActors(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		actors []string
		says   string
	}{
		{[]string{}, "Config.ClientActors is empty"},
		{[]string{""}, "Config.ClientActors[0] is empty"},
		{[]string{"user", ""}, "Config.ClientActors[1] is empty"},
		{[]string{" user"}, `" user" is not an actor's name`},
		{[]string{"us\ner"}, `"us\ner" is not an actor's name`},
		{[]string{"user", "llm", "user"}, `names "user" twice`},
		{[]string{"*", "user"}, `"*" (any input, of any actor) stands alone`},
		{[]string{"*", "*"}, `stands alone`},
	} {
		b, err := New[state, input, view](f.m, Config[state, input, view]{Decode: decl.DecodeInput, View: userView, Auth: AllowAll, ClientActors: tc.actors})
		if err == nil {
			b.Close()
			t.Errorf("ClientActors %q: New accepted it", tc.actors)
			continue
		}
		if !strings.Contains(err.Error(), tc.says) {
			t.Errorf("ClientActors %q: %v, want an error saying %q", tc.actors, err, tc.says)
		}
	}
}
