package httpbridge

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/readonlytest"
)

// TestReadOnlyPropertyAssignedByAdmission: the bridge of an agent whose
// spec marks the user message's timestamp readOnly decodes with its
// DecodeClientInput. A POST without the timestamp is answered 200; one with
// a timestamp has it dropped before admission; either way the admission
// step stamps it, and the journal holds the stamp (read back through the
// journal's own decoder, which requires it). With DecodeInput the same POST
// is refused: the placeholder every client had to send.
func TestReadOnlyPropertyAssignedByAdmission(t *testing.T) {
	var mu sync.Mutex
	decoded := map[string]int64{} // the timestamp of each message as it reached admission
	f := newFixture(t, func(c *Config[state, input, view]) {
		c.Decode = func(data []byte) (input, error) {
			in, err := readonlytest.DecodeClientInput(data)
			if m, ok := in.(decl.SendUserMessage); ok {
				mu.Lock()
				decoded[m.ID] = m.Timestamp
				mu.Unlock()
			}
			return in, err
		}
	})
	c := newClient(f.srv.URL, testToken)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	posts := []map[string]any{
		{"type": "send-user-message", "id": "absent", "content": "no timestamp"},
		{"type": "send-user-message", "id": "sent", "content": "a timestamp of its own", "timestamp": 42},
	}
	for _, p := range posts {
		status, body, err := c.post(ctx, p)
		if err != nil || status != http.StatusOK {
			t.Fatalf("POST %v: %d %s %v", p, status, body, err)
		}
	}
	mu.Lock()
	if decoded["absent"] != 0 || decoded["sent"] != 0 {
		t.Errorf("timestamps at admission: %v, want 0 for both (absent, and the client's dropped)", decoded)
	}
	mu.Unlock()

	entries, err := f.m.Inputs(1, f.m.Seq())
	if err != nil {
		t.Fatal(err)
	}
	var journaled []decl.SendUserMessage
	for _, e := range entries {
		if m, ok := e.Input.(decl.SendUserMessage); ok {
			journaled = append(journaled, m)
		}
	}
	if len(journaled) != len(posts) {
		t.Fatalf("journaled user messages %+v, want %d", journaled, len(posts))
	}
	for _, m := range journaled {
		if m.Timestamp <= 1_000_000 {
			t.Errorf("journaled %s with timestamp %d, not the admission step's", m.ID, m.Timestamp)
		}
	}
	waitFor(t, func() bool { return len(f.m.Current().UserMessages) == len(posts) })
	for _, m := range f.m.Current().UserMessages {
		if m.Timestamp <= 1_000_000 {
			t.Errorf("applied %s with timestamp %d, not the admission step's", m.ID, m.Timestamp)
		}
	}

	// The journal's decoder, as Config.Decode, requires the timestamp.
	strict := newFixture(t, nil)
	body, _ := json.Marshal(posts[0])
	req, _ := http.NewRequest("POST", strict.srv.URL+"/inputs", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var e struct{ Error string }
	json.NewDecoder(res.Body).Decode(&e)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(e.Error, "missing properties: 'timestamp'") {
		t.Errorf("POST without the timestamp, decoded by DecodeInput: %d %q, want 400 missing 'timestamp'", res.StatusCode, e.Error)
	}
}
