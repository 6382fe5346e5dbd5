package httpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/migrate"
)

// A small agent at two versions of its spec, as agentgen generates one
// (automata/journal/internal/storetest/versions.go has the journal's own):
// inputs carry their "type"; version 2 renames the note's property note to
// text and adds by, removes the input ping, and keeps notes as entries
// (dropping the count of pings). What browsers see, the texts of the notes,
// is the same in both.
type (
	vInput interface{ InputType() string }

	noteV1 struct {
		ID   string `json:"id"`
		Note string `json:"note"`
	}
	pingV1  struct{}
	stateV1 struct {
		Notes []string `json:"notes"`
		Pings int      `json:"pings"`
	}

	noteV2 struct {
		ID   string `json:"id"`
		Text string `json:"text"`
		By   string `json:"by"`
	}
	entryV2 struct {
		ID   string `json:"id"`
		Text string `json:"text"`
		By   string `json:"by"`
	}
	stateV2 struct {
		Entries []entryV2 `json:"entries"`
	}

	textsView struct {
		Texts []string `json:"texts"`
	}
)

func (noteV1) InputType() string { return "note" }
func (pingV1) InputType() string { return "ping" }
func (noteV2) InputType() string { return "note" }

func (n noteV1) MarshalJSON() ([]byte, error) {
	type plain noteV1
	return json.Marshal(struct {
		Type string `json:"type"`
		plain
	}{"note", plain(n)})
}

func (pingV1) MarshalJSON() ([]byte, error) { return []byte(`{"type":"ping"}`), nil }

func (n noteV2) MarshalJSON() ([]byte, error) {
	type plain noteV2
	return json.Marshal(struct {
		Type string `json:"type"`
		plain
	}{"note", plain(n)})
}

// decodeStrict decodes the properties of data but "type" into v, refusing
// unknown ones and missing required ones, as a generated DecodeInput
// validates against the input's schema.
func decodeStrict(data []byte, v any, required ...string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	for _, r := range required {
		if _, ok := m[r]; !ok {
			return fmt.Errorf("missing property %q", r)
		}
	}
	delete(m, "type")
	rest, _ := json.Marshal(m)
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func decodeV1(data []byte) (vInput, error) {
	typ, err := migrate.InputType(data)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "note":
		var n struct {
			ID   string `json:"id"`
			Note string `json:"note"`
		}
		if err := decodeStrict(data, &n, "id", "note"); err != nil {
			return nil, err
		}
		return noteV1(n), nil
	case "ping":
		return pingV1{}, decodeStrict(data, &struct{}{})
	}
	return nil, fmt.Errorf("unknown input type %q", typ)
}

func decodeV2(data []byte) (vInput, error) {
	typ, err := migrate.InputType(data)
	if err != nil {
		return nil, err
	}
	if typ != "note" {
		return nil, fmt.Errorf("unknown input type %q (want note)", typ)
	}
	var n struct {
		ID   string `json:"id"`
		Text string `json:"text"`
		By   string `json:"by"`
	}
	if err := decodeStrict(data, &n, "id", "text", "by"); err != nil {
		return nil, err
	}
	return noteV2(n), nil
}

var modelV1 = automata.Definition[stateV1, vInput]{
	Initial: func() stateV1 { return stateV1{} },
	Transition: func(s stateV1, in vInput) stateV1 {
		switch in := in.(type) {
		case noteV1:
			s.Notes = automata.Append(s.Notes, in.Note)
		case pingV1:
			s.Pings++
		}
		return s
	},
}

var modelV2 = automata.Definition[stateV2, vInput]{
	Initial: func() stateV2 { return stateV2{} },
	Transition: func(s stateV2, in vInput) stateV2 {
		return stateV2{Entries: automata.Append(s.Entries, entryV2(in.(noteV2)))} // a ping here would panic
	},
}

// historyV2 is version 2's history: the note of version 1 migrated (by
// "user"), the ping dropped, and the state migrated.
func historyV2() *migrate.History {
	decode := func(data []byte) (any, error) { return decodeV1(data) }
	return &migrate.History{Current: 2, Steps: []migrate.Step{{
		Inputs: map[string]migrate.Input{
			"note": {Decode: decode, Migrate: func(in any) any { n := in.(noteV1); return noteV2{ID: n.ID, Text: n.Note, By: "user"} }},
			"ping": {Decode: decode, Migrate: func(any) any { return nil }},
		},
		StateChanged: true,
		State: &migrate.State{
			New: func() any { return new(stateV1) },
			Migrate: func(p any) any {
				var s stateV2
				for i, n := range p.(*stateV1).Notes {
					s.Entries = append(s.Entries, entryV2{ID: fmt.Sprint("n", i+1), Text: n, By: "user"})
				}
				return s
			},
		},
	}}}
}

func viewV1(s stateV1) textsView { return textsView{Texts: s.Notes} }

func viewV2(s stateV2) textsView {
	var v textsView
	for _, e := range s.Entries {
		v.Texts = append(v.Texts, e.By+": "+e.Text) // not the view of version 1
	}
	return v
}

// serveVersioned serves m with a bridge on a loopback server until the
// returned function closes them all.
func serveVersioned[S any](t *testing.T, m *journal.Machine[S, vInput], cfg Config[S, vInput, textsView]) (*Bridge[S, vInput, textsView], *httptest.Server, func()) {
	t.Helper()
	cfg.Auth = Bearer(testToken)
	b, err := New[S, vInput, textsView](m, cfg)
	if err != nil {
		m.Close(context.Background())
		t.Fatal(err)
	}
	srv := httptest.NewServer(b)
	closed := false
	stop := func() {
		if closed {
			return
		}
		closed = true
		b.Close()
		srv.Close()
		if err := m.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(stop)
	return b, srv, stop
}

// TestResumeAcrossVersions: clients of a bridge of version 1 of the spec
// come back to the bridge of version 2 on the same journal, which New
// reads without tripping over the input that the migration dropped (its
// InputID is never handed the zero input). Version 2 makes another view of
// the state, so a client whose id is an input of version 1 (inside that
// part of the journal, at its end, or at the dropped input) holds a view
// of version 1, and is resynced: no delta is computed against a view it
// does not hold. A client of version 2 resumes with deltas. The ids of the
// migrated inputs are remembered.
func TestResumeAcrossVersions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "agent.db")

	// Version 1: the journal of an agent with no Versions.
	store, err := journal.OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	m1, err := journal.Open(store, modelV1, journal.Options[stateV1, vInput]{Codec: journal.JSON[stateV1](decodeV1)})
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	_, srv1, stop1 := serveVersioned(t, m1, Config[stateV1, vInput, textsView]{Decode: decodeV1, View: viewV1})
	early, late := newClient(srv1.URL, testToken), newClient(srv1.URL, testToken)
	for _, c := range []*client{early, late} {
		if err := c.follow(ctx, func() bool { return c.id != "" }); err != nil {
			t.Fatal(err)
		}
	}
	post := func(c *client, body string, seq uint64) {
		t.Helper()
		status, res, err := c.post(ctx, json.RawMessage(body))
		if err != nil || status != 200 {
			t.Fatalf("POST %s = %d %s %v", body, status, res, err)
		}
		var r postResult
		if json.Unmarshal(res, &r); r.Seq == nil || *r.Seq != seq || r.Duplicate {
			t.Fatalf("POST %s = %s, want seq %d", body, res, seq)
		}
	}
	post(late, `{"type":"note","id":"n1","note":"a"}`, 1)
	post(late, `{"type":"note","id":"n2","note":"b"}`, 2)
	if err := early.follow(ctx, func() bool { return early.seq == 2 }); err != nil {
		t.Fatal(err)
	}
	post(late, `{"type":"ping"}`, 3)
	post(late, `{"type":"note","id":"n3","note":"c"}`, 4)
	if err := late.follow(ctx, func() bool { return late.seq == 4 }); err != nil {
		t.Fatal(err)
	}
	if early.id != "2" || late.id != "4" {
		t.Fatalf("the clients of version 1 are at %q and %q, want 2 and 4", early.id, late.id)
	}
	stop1() // with a snapshot at 4, of version 1

	// Version 2, on the same journal.
	if store, err = journal.OpenBolt(path); err != nil {
		t.Fatal(err)
	}
	m2, err := journal.Open(store, modelV2, journal.Options[stateV2, vInput]{Codec: journal.JSON[stateV2](decodeV2), Versions: historyV2()})
	if err != nil {
		store.Close()
		t.Fatalf("opening the journal of version 1 under version 2: %v", err)
	}
	entries, err := m2.Inputs(1, 4)
	if err != nil || len(entries) != 4 || entries[2].Dropped == "" || entries[2].Version != 1 {
		t.Fatalf("the journal of version 1 read under version 2: %+v, %v; want input 3 dropped", entries, err)
	}
	_, srv2, _ := serveVersioned(t, m2, Config[stateV2, vInput, textsView]{
		Decode: decodeV2, View: viewV2,
		InputID: func(in vInput) string {
			return in.InputType() + "/" + in.(noteV2).ID // the zero input would panic
		},
	})
	for _, c := range []*client{early, late} {
		c.base = srv2.URL
	}
	post(late, `{"type":"note","id":"n5","text":"e","by":"me"}`, 5)
	// A retry of an input of version 1, sent again as one of version 2,
	// is known by its id.
	status, res, err := late.post(ctx, json.RawMessage(`{"type":"note","id":"n2","text":"b","by":"user"}`))
	var dup postResult
	if json.Unmarshal(res, &dup); err != nil || status != 200 || !dup.Duplicate || dup.Seq == nil || *dup.Seq != 2 {
		t.Fatalf("POST of n2 again = %d %s %v, want a duplicate of input 2", status, res, err)
	}

	want := map[string]any{"texts": []any{"user: a", "user: b", "user: c", "me: e"}}
	for _, c := range []*client{early, late} {
		resyncs := c.resyncs
		if err := c.follow(ctx, func() bool { return c.seq == 5 }); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c.view, want) {
			t.Errorf("the client resumed from a view of version 1: view %v, want %v", c.view, want)
		}
		if c.resyncs != resyncs+1 || c.gaps != 0 {
			t.Errorf("the client of version 1 resumed with %d resyncs and %d gaps, want one resync", c.resyncs-resyncs, c.gaps)
		}
	}

	// A client at input 3, the dropped ping: resynced too.
	c := newClient(srv2.URL, testToken)
	c.id, c.seq, c.view = "3", 3, map[string]any{"texts": []any{"a", "b"}}
	if err := c.follow(ctx, func() bool { return c.seq == 5 }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.view, want) || c.resyncs != 1 {
		t.Errorf("the client resumed from 3: view %v after %d resyncs, want %v after one", c.view, c.resyncs, want)
	}

	// A client of version 2 resumes with a delta.
	c = newClient(srv2.URL, testToken)
	c.id, c.seq, c.view = "5", 5, want
	post(late, `{"type":"note","id":"n6","text":"f","by":"me"}`, 6)
	if err := c.follow(ctx, func() bool { return c.seq == 6 }); err != nil {
		t.Fatal(err)
	}
	want = map[string]any{"texts": []any{"user: a", "user: b", "user: c", "me: e", "me: f"}}
	if !reflect.DeepEqual(c.view, want) || c.resyncs != 0 || c.deltas != 1 {
		t.Errorf("the client of version 2 resumed: view %v after %d resyncs and %d deltas, want %v after one delta", c.view, c.resyncs, c.deltas, want)
	}
}
