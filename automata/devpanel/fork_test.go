package devpanel_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/journal"
)

// post sends body to path of fp's server with token, and answers the
// status, the decoded JSON body and the headers.
func (fp *aFleetPanel) post(t *testing.T, path, token, body string) (int, map[string]any, http.Header) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", fp.srv.URL+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("POST %s: %s: not JSON: %q", path, resp.Status, data)
	}
	return resp.StatusCode, out, resp.Header
}

// send posts a user message to agent id's panel.
func (fp *aFleetPanel) send(t *testing.T, id, token, msg string) {
	t.Helper()
	in := fmt.Sprintf(`{"type":"send-user-message","id":%q,"content":"said %s","timestamp":1}`, msg, msg)
	if status, out, _ := fp.post(t, "/agents/"+id+"/inputs", token, in); status != http.StatusOK {
		t.Fatalf("sending %s to %s: %d %v", msg, id, status, out)
	}
}

// waitSeq waits until agent id has journaled n inputs (only a hang meets
// hangGuard).
func (fp *aFleetPanel) waitSeq(t *testing.T, id string, n uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	a, release, err := fp.reg.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	m := a.Machine()
	kick := make(chan struct{}, 1)
	unsub := m.Subscribe(func(decl.AgentState) {
		select {
		case kick <- struct{}{}:
		default:
		}
	})
	defer unsub()
	for m.Seq() < n {
		select {
		case <-kick:
		case <-ctx.Done():
			t.Fatalf("agent %s: %d inputs journaled, waited for %d", id, m.Seq(), n)
		}
	}
}

// timeline reads agent id's timeline from its panel's event stream: the
// rows it sends before its snapshot, and after it up to input upTo (the
// panel folds the journal after the agent journals it).
func (fp *aFleetPanel) timeline(t *testing.T, id, token string, upTo uint64) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", fp.srv.URL+"/agents/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the events of %s: %s", id, resp.Status)
	}
	var rows []map[string]any
	event, snapshot, last := "", false, uint64(0)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if snapshot && last >= upTo {
			return rows
		}
		switch {
		case line == "event: snapshot":
			snapshot = true
			event = ""
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == "input":
			var r map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &r); err != nil {
				t.Fatal(err)
			}
			rows = append(rows, r)
			seq, _ := r["seq"].(float64)
			last = uint64(seq)
		}
	}
	t.Fatalf("the events of %s ended before the snapshot: %v", id, sc.Err())
	return nil
}

// jobOf is what a timeline row says of the job that dispatched its input:
// its key, "recorded" when a fork's record answered it.
func jobOf(r map[string]any) string {
	s, _ := r["job"].(string)
	if r["recorded"] == true {
		s += " recorded"
	}
	if _, ok := r["recorded"]; ok && r["recorded"] != true {
		s += fmt.Sprintf(" recorded=%v", r["recorded"])
	}
	return s
}

// TestFleetFork: an owner forks her agent from its panel at the input
// before the model's reply (201, the fork hers, its origin and its panel
// in the answer); the fork's timeline starts after the fork, its reply
// answered from the record without a call of the model, and says so (job
// and recorded), while the parent's replies say the job that ran; the
// fork's panel config names its origin; time travel to before the fork is
// a 400 that says so; the fork's next message is answered for real; the
// list shows the fork's origin.
func TestFleetFork(t *testing.T) {
	fp := newFleetPanel(t, fleetOptions{openToOwners: true, jobKeys: true})
	fp.send(t, fp.annID, fp.annTok, "m1")
	fp.waitSeq(t, fp.annID, 2)
	if n := fp.calls.replay.Load(); n != 1 {
		t.Fatalf("the model was called %d times for one message, want 1", n)
	}
	status, out, header := fp.post(t, "/agents/"+fp.annID+"/fork", fp.annTok, `{"seq": 1, "id": "ann-fork"}`)
	if status != http.StatusCreated {
		t.Fatalf("ann's fork: %d %v, want 201", status, out)
	}
	owner := fp.owner(t, fp.annID)
	fork, _ := out["fork"].(map[string]any)
	if out["id"] != "ann-fork" || out["owner"] != owner || out["created"] == nil || out["panel"] != "../ann-fork/" ||
		fork["agent"] != fp.annID || fork["seq"] != float64(1) || header.Get("Location") != "../ann-fork/" {
		t.Errorf("the fork's answer: %v (Location %q); want ann-fork, owned by %s, forked from %s at 1, its panel ../ann-fork/", out, header.Get("Location"), owner, fp.annID)
	}
	fp.waitSeq(t, "ann-fork", 2)
	if n := fp.calls.replay.Load(); n != 1 {
		t.Errorf("the model was called %d times after the fork, want 1 (the parent's): the fork's reply is the record's", n)
	}
	rows := fp.timeline(t, "ann-fork", fp.annTok, 2)
	if len(rows) != 1 || rows[0]["seq"] != float64(2) || jobOf(rows[0]) != "llm/reply-m1 recorded" {
		t.Fatalf("the fork's timeline: %v; want its reply alone, at 2, answered by llm/reply-m1 from the record", rows)
	}
	parent := fp.timeline(t, fp.annID, fp.annTok, 2)
	if len(parent) != 2 || jobOf(parent[0]) != "" || jobOf(parent[1]) != "llm/reply-m1" {
		t.Errorf("the parent's timeline: %v; want the user's message with no job, and the reply of llm/reply-m1 that ran", parent)
	}

	status, body := get(t, fp.srv, "GET", "/agents/ann-fork/config", fp.annTok, false, "")
	if status != http.StatusOK || !strings.Contains(body, `"forkable":true`) || !strings.Contains(body, `"forkedFrom":{"agent":"`+fp.annID+`","seq":1}`) {
		t.Errorf("the fork's panel config: %d %s; want forkable, forked from %s at 1", status, body, fp.annID)
	}
	status, body = get(t, fp.srv, "GET", "/agents/"+fp.annID+"/config", fp.annTok, false, "")
	if status != http.StatusOK || !strings.Contains(body, `"forkable":true`) || strings.Contains(body, "forkedFrom") {
		t.Errorf("the parent's panel config: %d %s; want forkable, forked from nothing", status, body)
	}
	status, body = get(t, fp.srv, "GET", "/agents/ann-fork/state?seq=0", fp.annTok, false, "")
	if status != http.StatusBadRequest || !strings.Contains(body, "before the fork at 1") {
		t.Errorf("time travel to before the fork: %d %s; want 400 saying it is before the fork", status, body)
	}
	status, body = get(t, fp.srv, "GET", "/agents/ann-fork/state?seq=1", fp.annTok, false, "")
	if status != http.StatusOK || !strings.Contains(body, `"said m1"`) || strings.Contains(body, "you said") {
		t.Errorf("time travel to the fork's position: %d %s; want the user's message, no reply", status, body)
	}

	fp.send(t, "ann-fork", fp.annTok, "m2")
	fp.waitSeq(t, "ann-fork", 4)
	if n := fp.calls.replay.Load(); n != 2 {
		t.Errorf("the model was called %d times after the fork's own message, want 2", n)
	}
	rows = fp.timeline(t, "ann-fork", fp.annTok, 4)
	if len(rows) != 3 || jobOf(rows[1]) != "" || jobOf(rows[2]) != "llm/reply-m2" {
		t.Errorf("the fork's timeline: %v; want its message, then a reply of llm/reply-m2 that ran", rows)
	}

	status, body = get(t, fp.srv, "GET", "/agents", fp.annTok, false, "")
	var list struct {
		Agents []struct {
			ID   string
			Fork *journal.ForkOrigin
		}
	}
	json.Unmarshal([]byte(body), &list)
	forks := map[string]string{}
	for _, a := range list.Agents {
		forks[a.ID] = fmt.Sprint(a.Fork)
	}
	if status != http.StatusOK || len(list.Agents) != 2 || forks["ann-fork"] != fmt.Sprint(&journal.ForkOrigin{Agent: fp.annID, Seq: 1}) || forks[fp.annID] != "<nil>" {
		t.Errorf("ann's list: %d %s; want her agent, and its fork with its origin", status, body)
	}
}

// owner is the owner of agent id.
func (fp *aFleetPanel) owner(t *testing.T, id string) string {
	t.Helper()
	info, err := fp.reg.Info(id)
	if err != nil {
		t.Fatal(err)
	}
	return info.Owner
}

// TestFleetForkRefused: what POST /agents/{id}/fork refuses, and how: a
// body that is not {"seq", "id"} is 400 naming what is wrong, a seq past
// the journal or before a fork's own fork 400, an id taken 409, an agent
// the caller may not see 404 (as one that does not exist), no token 401;
// nothing is created by any.
func TestFleetForkRefused(t *testing.T) {
	fp := newFleetPanel(t, fleetOptions{openToOwners: true, jobKeys: true})
	fp.send(t, fp.annID, fp.annTok, "m1")
	fp.waitSeq(t, fp.annID, 2)
	if status, out, _ := fp.post(t, "/agents/"+fp.annID+"/fork", operator, `{"seq": 2, "id": "late"}`); status != http.StatusCreated {
		t.Fatalf("the operator's fork at 2: %d %v", status, out)
	}
	ann := "/agents/" + fp.annID + "/fork"
	for _, c := range []struct {
		name, path, token, body string
		status                  int
		says                    string
	}{
		{"empty body", ann, fp.annTok, ``, 400, "empty"},
		{"no seq", ann, fp.annTok, `{}`, 400, "seq: required"},
		{"seq 0", ann, fp.annTok, `{"seq": 0}`, 400, "seq: required"},
		{"seq a string", ann, fp.annTok, `{"seq": "1"}`, 400, "seq: a JSON string"},
		{"seq negative", ann, fp.annTok, `{"seq": -1}`, 400, "seq: a JSON number -1"},
		{"seq a fraction", ann, fp.annTok, `{"seq": 1.5}`, 400, "seq: a JSON number 1.5"},
		{"id a number", ann, fp.annTok, `{"seq": 1, "id": 7}`, 400, "id: a JSON number"},
		{"id empty", ann, fp.annTok, `{"seq": 1, "id": ""}`, 400, "id: empty"},
		{"id invalid", ann, fp.annTok, `{"seq": 1, "id": "no spaces"}`, 400, "id: invalid agent id"},
		{"unknown field", ann, fp.annTok, `{"seq": 1, "at": 2}`, 400, `unknown field "at"`},
		{"two objects", ann, fp.annTok, `{"seq": 1} {"seq": 2}`, 400, "more than the one JSON object"},
		{"not JSON", ann, fp.annTok, `seq=1`, 400, "want {"},
		{"too large", ann, fp.annTok, `{"seq": 1, "id": "` + strings.Repeat("x", 5000) + `"}`, 413, "over 4096 bytes"},
		{"seq past the journal", ann, fp.annTok, `{"seq": 3}`, 400, "seq: 3 is past the journal"},
		{"seq before the fork's fork", "/agents/late/fork", operator, `{"seq": 1}`, 400, "seq: 1 is before agent \"late\"'s own fork at 2"},
		{"id taken", ann, fp.annTok, `{"seq": 1, "id": "late"}`, 409, "exists"},
		{"id of another's agent", ann, fp.annTok, `{"seq": 1, "id": "` + fp.bobID + `"}`, 409, "exists"},
		{"another's agent", ann, fp.bobTok, `{"seq": 1}`, 404, "no agent"},
		{"no such agent", "/agents/nobody/fork", operator, `{"seq": 1}`, 404, "no agent"},
		{"no token", ann, "", `{"seq": 1}`, 401, "unauthorized"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, out, _ := fp.post(t, c.path, c.token, c.body)
			if msg, _ := out["error"].(string); status != c.status || !strings.Contains(msg, c.says) {
				t.Errorf("%d %v; want %d saying %q", status, out, c.status, c.says)
			}
		})
	}
	status, body := get(t, fp.srv, "GET", "/agents", operator, false, "")
	if status != http.StatusOK || strings.Count(body, `"id"`) != 3 {
		t.Errorf("the agents after the refused forks: %d %s; want ann's, bob's and late", status, body)
	}
}

// TestFleetForkIsTheOperatorsByDefault: without OpenToOwners, an owner may
// not fork her agent from the panel (403), as she may not open it; the
// operator may, and the fork is the operator's.
func TestFleetForkIsTheOperatorsByDefault(t *testing.T) {
	fp := newFleetPanel(t, fleetOptions{jobKeys: true})
	fp.send(t, fp.annID, operator, "m1")
	if status, out, _ := fp.post(t, "/agents/"+fp.annID+"/fork", fp.annTok, `{"seq": 1}`); status != http.StatusForbidden {
		t.Errorf("ann's fork without OpenToOwners: %d %v, want 403", status, out)
	}
	status, out, _ := fp.post(t, "/agents/"+fp.annID+"/fork", operator, `{"seq": 1}`)
	id, _ := out["id"].(string)
	if status != http.StatusCreated || journal.CheckAgentID(id) != nil || out["panel"] != "../"+id+"/" {
		t.Fatalf("the operator's fork: %d %v, want 201 with a new id", status, out)
	}
	if owner := fp.owner(t, id); owner == fp.owner(t, fp.annID) {
		t.Errorf("the operator's fork is owned by %q, ann's; want the operator's", owner)
	}
}

// unavailable is a fleet whose Create fails as a journal's server that
// cannot answer does, while down is set.
type unavailable struct {
	journal.Fleet
	down atomic.Bool
}

func (u *unavailable) Create(id string, info journal.AgentInfo) error {
	if u.down.Load() {
		return fmt.Errorf("creating %q: %w", id, journal.ErrUnavailable)
	}
	return u.Fleet.Create(id, info)
}

// TestFleetForkUnavailable: a fork the fleet cannot create for now is 503
// with Retry-After, and the same fork succeeds once it can.
func TestFleetForkUnavailable(t *testing.T) {
	var flaky *unavailable
	fp := newFleetPanel(t, fleetOptions{jobKeys: true, wrap: func(f journal.Fleet) journal.Fleet {
		flaky = &unavailable{Fleet: f}
		return flaky
	}})
	fp.send(t, fp.annID, operator, "m1")
	flaky.down.Store(true)
	status, out, header := fp.post(t, "/agents/"+fp.annID+"/fork", operator, `{"seq": 1, "id": "later"}`)
	if status != http.StatusServiceUnavailable || header.Get("Retry-After") == "" {
		t.Errorf("a fork while the fleet is unavailable: %d %v (Retry-After %q), want 503 with Retry-After", status, out, header.Get("Retry-After"))
	}
	flaky.down.Store(false)
	if status, out, _ := fp.post(t, "/agents/"+fp.annID+"/fork", operator, `{"seq": 1, "id": "later"}`); status != http.StatusCreated {
		t.Errorf("the fork again: %d %v, want 201", status, out)
	}
}
