package devpanel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/devpanel"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/internal/versiontest"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

// writeV1 journals, under version 1 (an agent with no Versions, as every
// journal written before versions is), notes a and b, a ping and note c,
// and closes with a snapshot at 4.
func writeV1(t *testing.T, path string) {
	t.Helper()
	store, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := journal.Open(store, versiontest.ModelV1, journal.Options[versiontest.StateV1, versiontest.Input]{Codec: journal.JSON[versiontest.StateV1](versiontest.DecodeV1)})
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	for _, in := range []versiontest.Input{versiontest.NoteV1{ID: "n1", Note: "a"}, versiontest.NoteV1{ID: "n2", Note: "b"}, versiontest.PingV1{}, versiontest.NoteV1{ID: "n3", Note: "c"}} {
		if err := m.Dispatch(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// entriesBy are the entries of version 2 of notes by user.
func entriesBy(texts ...string) []any {
	out := []any{}
	for i, s := range texts {
		out = append(out, map[string]any{"id": fmt.Sprint("n", i+1), "text": s, "by": "user"})
	}
	return out
}

// migratedPanel writes a journal under version 1 and serves a panel of the
// agent of version 2 on it, after a fifth input, of version 2: the agent,
// the panel's Config and a fixture of its server.
func migratedPanel(t *testing.T) (*journal.Machine[versiontest.StateV2, versiontest.Input], devpanel.Config[versiontest.StateV2, versiontest.Input], *fixture) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.db")
	writeV1(t, path)

	store, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := devpanel.Config[versiontest.StateV2, versiontest.Input]{
		Definition:  versiontest.ModelV2(), // its Versions is what journal.Open uses
		Decode:      versiontest.DecodeV2,
		InputSchema: []byte(`{"inputs":{"note":{"type":"object","properties":{"id":{"type":"string"},"text":{"type":"string"},"by":{"type":"string"}}}}}`),
		Auth:        httpbridge.Bearer(token),
		// The hooks read what only an input of version 2 has: a dropped
		// input's zero value would make them panic.
		Actor: func(in versiontest.Input) string { return in.(versiontest.NoteV2).By },
		Notes: func(_, _ versiontest.StateV2, in versiontest.Input) []devpanel.Note {
			return []devpanel.Note{{Type: "note", Text: in.(versiontest.NoteV2).Text}}
		},
		Jobs: func(s versiontest.StateV2) []string { return []string{fmt.Sprint("echo-", len(s.Entries))} },
	}
	m, panel, err := devpanel.Open(store, cfg, journal.Options[versiontest.StateV2, versiontest.Input]{Codec: journal.JSON[versiontest.StateV2](versiontest.DecodeV2)})
	if err != nil {
		t.Fatalf("opening the journal of version 1 under version 2: %v", err)
	}
	f := &fixture{t: t, srv: httptest.NewServer(panel)}
	t.Cleanup(func() {
		panel.Close()
		f.srv.Close()
		if err := m.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if code, out := f.do("POST", "/inputs", `{"type":"note","id":"n5","text":"e","by":"me"}`, nil); code != 200 || out["seq"] != float64(5) {
		t.Fatalf("POST /inputs = %d %v", code, out)
	}
	return m, cfg, f
}

// TestMigratedJournal: a panel on an agent of version 2 whose journal was
// written under version 1 shows each row's version, shows the input that
// the migration dropped as dropped (not applied: no change, and the
// program's hooks never see its zero input), and travels in time inside
// the part of version 1, migrated; a panel that starts its timeline there,
// and a client that resumes there, get the same.
func TestMigratedJournal(t *testing.T) {
	m, cfg, f := migratedPanel(t)
	ch, stop := f.stream("")
	rows := map[float64]map[string]any{}
	for len(rows) < 5 {
		e := next(t, ch, "the rows of inputs 1 to 5", func(e sseEvent) bool { return e.event == "input" })
		rows[e.data["seq"].(float64)] = e.data
	}
	stop()
	for seq, r := range rows {
		want := 1.0
		if seq == 5 {
			want = 2
		}
		if r["version"] != want {
			t.Errorf("row %v: version %v, want %v", seq, r["version"], want)
		}
		if _, dropped := r["dropped"]; dropped != (seq == 3) {
			t.Errorf("row %v: dropped %q", seq, r["dropped"])
		}
	}
	ping := rows[3]
	if d, _ := ping["dropped"].(string); ping["type"] != "ping" || !strings.Contains(d, `"ping" dropped by the migration from version 1 to 2`) {
		t.Errorf("the dropped row: type %v, dropped %q", ping["type"], d)
	}
	for _, k := range []string{"input", "diff", "started", "cancelled", "notes", "actor"} {
		if got, _ := json.Marshal(ping[k]); !map[string]bool{"null": true, "[]": true}[string(got)] {
			t.Errorf("the dropped row's %s: %s, want nothing", k, got)
		}
	}
	if got, _ := json.Marshal(rows[4]["diff"]); string(got) != `[{"op":"add","path":"/entries/-","value":{"by":"user","id":"n3","text":"c"}}]` {
		t.Errorf("row 4's diff (the state after the dropped ping, plus c): %s", got)
	}
	if got, _ := json.Marshal(rows[4]["input"]); rows[4]["actor"] != "user" || string(got) != `{"by":"user","id":"n3","text":"c","type":"note"}` {
		t.Errorf("row 4 shows the input of version 1 not migrated: actor %v, input %s", rows[4]["actor"], got)
	}
	if got, _ := json.Marshal(rows[4]["started"]); string(got) != `["echo-3"]` {
		t.Errorf("row 4 started %s", got)
	}
	if rows[5]["actor"] != "me" || rows[5]["type"] != "note" {
		t.Errorf("row 5: %v", rows[5])
	}

	// Time travel inside the part of version 1: the migrated state, the
	// dropped ping changing nothing.
	for seq, want := range [][]any{{}, entriesBy("a"), entriesBy("a", "b"), entriesBy("a", "b"), entriesBy("a", "b", "c")} {
		code, out := f.do("GET", fmt.Sprintf("/state?seq=%d", seq), "", nil)
		st, _ := out["state"].(map[string]any)
		got, _ := st["entries"].([]any)
		if got == nil {
			got = []any{}
		}
		if code != 200 || !reflect.DeepEqual(got, want) {
			t.Errorf("GET /state?seq=%d = %d %v, want entries %v", seq, code, out, want)
		}
	}
	if code, out := f.do("GET", "/state?seq=5", "", nil); code != 200 || len(out["state"].(map[string]any)["entries"].([]any)) != 4 {
		t.Errorf("GET /state?seq=5 = %d %v", code, out)
	}

	// A panel whose timeline starts inside the part of version 1 (after
	// input 3, the dropped ping), and a client of it that resumes after
	// input 1: inputs 2 and 3 are rebuilt from the journal.
	cfg.History = 2
	p2, err := devpanel.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p2.Attach(m); err != nil {
		t.Fatalf("attaching a panel whose timeline starts after input 3: %v", err)
	}
	defer p2.Close()
	f2 := &fixture{t: t, srv: httptest.NewServer(p2)}
	defer f2.srv.Close()
	for _, c := range []struct {
		last string
		want []string
	}{
		{"", []string{"4 v1", "5 v2"}},
		{"1", []string{"2 v1", "3 v1 dropped", "4 v1", "5 v2"}},
	} {
		ch, stop := f2.stream(c.last)
		var got []string
		for e := range ch {
			if e.event == "snapshot" {
				entries, _ := e.data["state"].(map[string]any)["entries"].([]any)
				if e.data["seq"] != float64(5) || len(entries) != 4 {
					t.Errorf("from %q: the snapshot %v", c.last, e.data)
				}
				break
			}
			if e.event == "input" {
				s := fmt.Sprintf("%v v%v", e.data["seq"], e.data["version"])
				if e.data["dropped"] != nil {
					s += " dropped"
				}
				got = append(got, s)
			}
		}
		stop()
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("the stream from %q: rows %v, want %v", c.last, got, c.want)
		}
	}
	if m.Err() != nil {
		t.Errorf("the agent: %v", m.Err())
	}
}
