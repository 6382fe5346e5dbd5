package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/internal/frame"
	"github.com/moora-go/moora/automata/internal/versiontest"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/migrate"
)

// The cross-version suite's agent, at two versions of its spec, as agentgen
// generates one: inputs carry their "type", and version 2 renames the
// note's property note to text and adds a required property by, removes
// the input ping, and renames the state's notes to entries (dropping
// pings).
type (
	versioned interface{ InputType() string }

	noteV1  struct{ Note string }
	pingV1  struct{}
	stateV1 struct {
		Notes []string `json:"notes"`
		Pings int      `json:"pings"`
	}

	noteV2 struct {
		Text string `json:"text"`
		By   string `json:"by"`
	}
	stateV2 struct {
		Entries []string `json:"entries"`
	}
)

func (noteV1) InputType() string { return "note" }
func (pingV1) InputType() string { return "ping" }
func (noteV2) InputType() string { return "note" }

func (n noteV1) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Type string `json:"type"`
		Note string `json:"note"`
	}{"note", n.Note})
}

func (pingV1) MarshalJSON() ([]byte, error) { return []byte(`{"type":"ping"}`), nil }

func (n noteV2) MarshalJSON() ([]byte, error) {
	type plain noteV2
	return json.Marshal(struct {
		Type string `json:"type"`
		plain
	}{"note", plain(n)})
}

func decodeV1(data []byte) (versioned, error) {
	typ, err := migrate.InputType(data)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "note":
		var n struct {
			Note string `json:"note"`
		}
		if err := versiontest.DecodeStrict(data, &n, "note"); err != nil {
			return nil, fmt.Errorf("decoding input %q: %w", typ, err)
		}
		return noteV1{n.Note}, nil
	case "ping":
		var p struct{}
		if err := versiontest.DecodeStrict(data, &p); err != nil {
			return nil, fmt.Errorf("decoding input %q: %w", typ, err)
		}
		return pingV1{}, nil
	}
	return nil, fmt.Errorf("unknown input type %q (want note or ping)", typ)
}

func decodeV2(data []byte) (versioned, error) {
	typ, err := migrate.InputType(data)
	if err != nil {
		return nil, err
	}
	if typ != "note" {
		return nil, fmt.Errorf("unknown input type %q (want note)", typ)
	}
	var n noteV2
	if err := versiontest.DecodeStrict(data, &n, "text", "by"); err != nil {
		return nil, fmt.Errorf("decoding input %q: %w", typ, err)
	}
	return n, nil
}

var (
	modelV1 = automata.Definition[stateV1, versioned]{
		Initial: func() stateV1 { return stateV1{} },
		Transition: func(s stateV1, in versioned) stateV1 {
			switch in := in.(type) {
			case noteV1:
				s.Notes = automata.Append(s.Notes, in.Note)
			case pingV1:
				s.Pings++
			}
			return s
		},
	}
	modelV2 = automata.Definition[stateV2, versioned]{
		Initial: func() stateV2 { return stateV2{} },
		Transition: func(s stateV2, in versioned) stateV2 {
			if n, ok := in.(noteV2); ok {
				s.Entries = automata.Append(s.Entries, n.By+": "+n.Text)
			}
			return s
		},
	}
)

// historyV2 is what agentgen generates for version 2: the note and ping
// of version 1 migrated (ping dropped), and, with state, the state.
func historyV2(state bool) *migrate.History {
	decode := func(data []byte) (any, error) { return decodeV1(data) }
	step := migrate.Step{
		Inputs: map[string]migrate.Input{
			"note": {Decode: decode, Migrate: func(in any) any { return noteV2{Text: in.(noteV1).Note, By: "user"} }},
			"ping": {Decode: decode, Migrate: func(any) any { return nil }},
		},
		StateChanged: true,
	}
	if state {
		step.State = &migrate.State{
			New: func() any { return new(stateV1) },
			Migrate: func(p any) any {
				var s stateV2
				for _, n := range p.(*stateV1).Notes {
					s.Entries = append(s.Entries, "user: "+n)
				}
				return s
			},
		}
	}
	return &migrate.History{Current: 2, Steps: []migrate.Step{step}}
}

func openV1(t testing.TB, s journal.Store, opts journal.Options[stateV1, versioned]) (*journal.Machine[stateV1, versioned], error) {
	t.Helper()
	opts.Codec = journal.JSONGob[stateV1](decodeV1)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return journal.Open(s, modelV1, opts)
}

func openV2(t testing.TB, s journal.Store, opts journal.Options[stateV2, versioned]) (*journal.Machine[stateV2, versioned], error) {
	t.Helper()
	opts.Codec = journal.JSONGob[stateV2](decodeV2)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return journal.Open(s, modelV2, opts)
}

func closeMachine(t testing.TB, m interface{ Close(context.Context) error }) {
	t.Helper()
	if err := m.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// writeV1 writes a journal at version 1 (as every journal written before
// versions is): n notes with a ping after every third, a snapshot after
// the first half, and the rest after it, as after a crash.
func writeV1(t testing.TB, open Opener, name string, n int) {
	t.Helper()
	m, err := openV1(t, open(t, name), journal.Options[stateV1, versioned]{SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if i == n/2 {
			closeMachine(t, m) // a snapshot of the first half
			if m, err = openV1(t, open(t, name), journal.Options[stateV1, versioned]{SnapshotEvery: -1, SkipCloseSnapshot: true}); err != nil {
				t.Fatal(err)
			}
		}
		var in versioned = noteV1{fmt.Sprintf("n%d", i)}
		if i%3 == 2 {
			in = pingV1{}
		}
		if err := m.Dispatch(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	}
	closeMachine(t, m)
}

// wantV2 is the state of version 2 that the journal of writeV1 migrates
// to, after its first k inputs.
func wantV2(k int) stateV2 {
	var s stateV2
	for i := range k {
		if i%3 != 2 {
			s.Entries = append(s.Entries, fmt.Sprintf("user: n%d", i))
		}
	}
	return s
}

// testVersionsMigrate: a journal of version 1, with a snapshot and inputs
// after it, opens under version 2: the snapshot's state and the inputs are
// migrated, a removed input is dropped and reported, new records carry
// version 2, and the history reads across the versions.
func testVersionsMigrate(t *testing.T, open Opener) {
	name := newName(t)
	const n = 12
	writeV1(t, open, name, n)
	// The first Close took a snapshot at 6 (the first half).
	s := open(t, name)
	if got := snapshots(t, s); len(got) != 1 || got[0].Seq != n/2 {
		t.Fatalf("snapshots %v, want one at %d", seqs(got), n/2)
	}
	mustCloseStore(t, s)

	var log LogBuffer
	opts := journal.Options[stateV2, versioned]{Versions: historyV2(true), SnapshotEvery: -1, SkipCloseSnapshot: true,
		Logger: slog.New(slog.NewTextHandler(&log, nil))}
	m, err := openV2(t, open(t, name), opts)
	if err != nil {
		t.Fatalf("Open under version 2: %v", err)
	}
	if got, want := m.Current(), wantV2(n); !reflect.DeepEqual(got, want) {
		t.Fatalf("state = %v, want %v", got.Entries, want.Entries)
	}
	// Two pings after the snapshot (inputs 9 and 12) were dropped, each
	// reported.
	if c := strings.Count(log.String(), "a migration dropped an input"); c != 2 || !strings.Contains(log.String(), "type=ping") {
		t.Errorf("log reports %d dropped inputs, want 2:\n%s", c, log.String())
	}
	entries, err := m.Inputs(1, n)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		dropped := i%3 == 2
		if e.Version != 1 || (e.Dropped != nil) != dropped || (e.Input == nil) != dropped {
			t.Fatalf("entry %d = %+v, want version 1, dropped %v", e.Seq, e, dropped)
		}
		if !dropped && e.Input != (noteV2{Text: fmt.Sprintf("n%d", i), By: "user"}) {
			t.Fatalf("entry %d's input = %+v, want it migrated", e.Seq, e.Input)
		}
	}
	for _, k := range []int{0, 4, n / 2, 8, n} {
		if got, err := m.StateAt(uint64(k)); err != nil || !reflect.DeepEqual(got, wantV2(k)) {
			t.Fatalf("StateAt(%d) = %v, %v; want %v", k, got.Entries, err, wantV2(k).Entries)
		}
	}
	if err := m.Dispatch(context.Background(), noteV2{Text: "new", By: "me"}); err != nil {
		t.Fatal(err)
	}
	closeMachine(t, m) // with a snapshot at 13, of version 2

	s = open(t, name)
	for _, r := range scan(t, s, 0) {
		f, err := frame.Decode(r.Data)
		if err != nil || (f.Version == 2) != (r.Seq > n) {
			t.Fatalf("record %d is of version %d (%v), want 1 up to %d and 2 after", r.Seq, f.Version, err, n)
		}
	}
	mustCloseStore(t, s)

	// Version 2 reads its own snapshot and its journal again.
	opts.SkipCloseSnapshot = false
	m, err = openV2(t, open(t, name), opts)
	if err != nil {
		t.Fatal(err)
	}
	want := wantV2(n)
	want.Entries = append(want.Entries, "me: new")
	if got := m.Current(); !reflect.DeepEqual(got, want) {
		t.Fatalf("state after reopening = %v, want %v", got.Entries, want.Entries)
	}
	closeMachine(t, m)
	m, err = openV2(t, open(t, name), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer closeMachine(t, m)
	if got := m.Current(); !reflect.DeepEqual(got, want) {
		t.Fatalf("state from the snapshot of version 2 = %v, want %v", got.Entries, want.Entries)
	}
}

// testVersionsReplayOverAStaleSnapshot: a snapshot whose state changed
// shape without a migration is passed over, and the journal replayed from
// the start; when the journal no longer reaches back, Open says so, and
// never calls the snapshot corrupt.
func testVersionsReplayOverAStaleSnapshot(t *testing.T, open Opener) {
	name := newName(t)
	const n = 12
	writeV1(t, open, name, n)
	var log LogBuffer
	opts := journal.Options[stateV2, versioned]{Versions: historyV2(false), SnapshotEvery: -1, SkipCloseSnapshot: true,
		Logger: slog.New(slog.NewTextHandler(&log, nil))}
	m, err := openV2(t, open(t, name), opts)
	if err != nil {
		t.Fatalf("Open under version 2: %v", err)
	}
	if got, want := m.Current(), wantV2(n); !reflect.DeepEqual(got, want) {
		t.Fatalf("state = %v, want %v", got.Entries, want.Entries)
	}
	if !strings.Contains(log.String(), "passing over a snapshot of an earlier version") {
		t.Errorf("the stale snapshot was passed over without a warning:\n%s", log.String())
	}
	closeMachine(t, m)

	// Without the journal before the snapshot, nothing can rebuild the
	// state.
	name = newName(t) + "-compacted"
	writeV1(t, open, name, n)
	s := open(t, name)
	if err := s.Prune(0, 0, n/2+1); err != nil {
		t.Fatal(err)
	}
	before := dump(t, s)
	m, err = openV2(t, s, opts)
	if err == nil {
		closeMachine(t, m)
		t.Fatal("Open rebuilt a state it had no way to")
	}
	defer s.Close()
	if errors.As(err, new(*journal.CorruptError)) || !errors.Is(err, migrate.ErrNoStateMigration) ||
		!strings.Contains(err.Error(), "the journal starts at 7") || !strings.Contains(err.Error(), "version 1") {
		t.Fatalf("Open = %v, want an error that says the snapshot of version 1 has no migration and the journal does not reach back", err)
	}
	if after := dump(t, s); after != before {
		t.Error("the failed Open changed the store")
	}
}

// testVersionsNewerJournalRefused: a binary older than its journal refuses
// it, saying so, and writes nothing.
func testVersionsNewerJournalRefused(t *testing.T, open Opener) {
	for _, snapshot := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshot-%v", snapshot), func(t *testing.T) {
			name := newName(t)
			m, err := openV2(t, open(t, name), journal.Options[stateV2, versioned]{Versions: historyV2(true), SkipCloseSnapshot: !snapshot})
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Dispatch(context.Background(), noteV2{Text: "a", By: "b"}); err != nil {
				t.Fatal(err)
			}
			closeMachine(t, m)
			s := open(t, name)
			defer s.Close()
			before := dump(t, s)
			old, err := openV1(t, s, journal.Options[stateV1, versioned]{})
			if err == nil {
				closeMachine(t, old)
				t.Fatal("a binary of version 1 opened a journal of version 2")
			}
			var verr *migrate.VersionError
			if !errors.As(err, &verr) || verr.Version != 2 || verr.Current != 1 || errors.As(err, new(*journal.CorruptError)) ||
				!strings.Contains(err.Error(), "newer") {
				t.Fatalf("Open = %v, want a *migrate.VersionError (2 > 1), not corruption", err)
			}
			if after := dump(t, s); after != before {
				t.Error("the failed Open changed the store")
			}
		})
	}
}

// testVersionsOlderBinaryAfterANewerOpen: a newer binary that only opened
// and closed the journal (its snapshot replaced the older one) does not
// keep an older binary out: every record is of the older version, and the
// older binary passes over the newer snapshot and replays them.
func testVersionsOlderBinaryAfterANewerOpen(t *testing.T, open Opener) {
	name := newName(t)
	const n = 6
	m1, err := openV1(t, open(t, name), journal.Options[stateV1, versioned]{SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := m1.Dispatch(context.Background(), noteV1{fmt.Sprintf("n%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	want := m1.Current()
	closeMachine(t, m1) // a snapshot of version 1 at 6
	// Without a state migration, version 2 replays over it, and its Close
	// snapshots version 2's state at 6.
	m2, err := openV2(t, open(t, name), journal.Options[stateV2, versioned]{Versions: historyV2(false)})
	if err != nil {
		t.Fatal(err)
	}
	closeMachine(t, m2)
	s := open(t, name)
	if got := snapshots(t, s); len(got) != 1 || got[0].Seq != n {
		t.Fatalf("snapshots %v, want one at %d", seqs(got), n)
	}
	f, _ := frame.Decode(snapshots(t, s)[0].Data)
	if f.Version != 2 {
		t.Fatalf("the snapshot at %d is of version %d, want 2", n, f.Version)
	}
	var log LogBuffer
	m1, err = openV1(t, s, journal.Options[stateV1, versioned]{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		s.Close()
		t.Fatalf("the binary of version 1, on a journal of version 1 inputs with a snapshot of version 2: %v", err)
	}
	defer closeMachine(t, m1)
	if got := m1.Current(); !reflect.DeepEqual(got, want) {
		t.Fatalf("state %+v, want %+v", got, want)
	}
	if !strings.Contains(log.String(), "passing over a snapshot of a newer version") {
		t.Errorf("no warning:\n%s", log.String())
	}
}

// testVersionsCorruptUnderItsOwnVersion: a record of version 1 that version
// 1 cannot read is corrupt, and the error says which version it was read
// under; a record of version 1 that only version 2 cannot read (all of
// them, here) is migrated, never corrupt.
func testVersionsCorruptUnderItsOwnVersion(t *testing.T, open Opener) {
	name := newName(t)
	s := open(t, name)
	mustAppend(t, s, []journal.Record{
		{Seq: 1, Data: frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: 1, Payload: []byte(`{"type":"note","note":"fine"}`)})},
		{Seq: 2, Data: frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: 2, Payload: []byte(`{"type":"note","text":"not of version 1"}`)})},
		{Seq: 3, Data: frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: 3, Payload: []byte(`{"type":"note","note":"after"}`)})},
	})
	defer s.Close()
	_, err := openV2(t, s, journal.Options[stateV2, versioned]{Versions: historyV2(true)})
	var ce *journal.CorruptError
	if !errors.As(err, &ce) || ce.Seq != 2 || !strings.Contains(err.Error(), "does not decode under version 1") {
		t.Fatalf("Open = %v, want record 2 corrupt under version 1", err)
	}
}
