package httpbridge

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/internal/versiontest"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

// textsView is what browsers see.
type textsView struct {
	Texts []string `json:"texts"`
}

func viewV1(s versiontest.StateV1) textsView { return textsView{Texts: s.Notes} }

func viewV2(s versiontest.StateV2) textsView {
	var v textsView
	for _, e := range s.Entries {
		v.Texts = append(v.Texts, e.By+": "+e.Text) // not the view of version 1
	}
	return v
}

// serveVersioned serves m with a bridge on a loopback server until the
// returned function closes them all.
func serveVersioned[S any](t *testing.T, m *journal.Machine[S, versiontest.Input], cfg Config[S, versiontest.Input, textsView]) (*Bridge[S, versiontest.Input, textsView], *httptest.Server, func()) {
	t.Helper()
	cfg.Auth = Bearer(testToken)
	cfg.ClientActors = []string{"*"} // versiontest's inputs are hand-written: they name no actor
	b, err := New[S, versiontest.Input, textsView](m, cfg)
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
	store, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m1, err := journal.Open(store, versiontest.ModelV1, journal.Options[versiontest.StateV1, versiontest.Input]{Codec: journal.JSON[versiontest.StateV1](versiontest.DecodeV1)})
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	_, srv1, stop1 := serveVersioned(t, m1, Config[versiontest.StateV1, versiontest.Input, textsView]{Decode: versiontest.DecodeV1, View: viewV1})
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
	if store, err = bolt.Open(path); err != nil {
		t.Fatal(err)
	}
	m2, err := journal.Open(store, versiontest.ModelV2(), journal.Options[versiontest.StateV2, versiontest.Input]{Codec: journal.JSON[versiontest.StateV2](versiontest.DecodeV2), Versions: versiontest.History()})
	if err != nil {
		store.Close()
		t.Fatalf("opening the journal of version 1 under version 2: %v", err)
	}
	entries, err := m2.Inputs(1, 4)
	if err != nil || len(entries) != 4 || entries[2].Dropped == nil || entries[2].Dropped.Type != "ping" || entries[2].Version != 1 {
		t.Fatalf("the journal of version 1 read under version 2: %+v, %v; want input 3 dropped", entries, err)
	}
	_, srv2, _ := serveVersioned(t, m2, Config[versiontest.StateV2, versiontest.Input, textsView]{
		Decode: versiontest.DecodeV2, View: viewV2,
		InputID: func(in versiontest.Input) string {
			return in.InputType() + "/" + in.(versiontest.NoteV2).ID // the zero input would panic
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
