package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/journal"
)

// FleetOpener opens the fleet called name, creating it empty the first time.
// Opening a name again after Close gives the same fleet, with its agents.
type FleetOpener func(t testing.TB, name string) journal.Fleet

// RunFleet runs the store suite on the agents of a fleet (each store name is
// an agent of one shared fleet, created on first use), then the rules that
// hold across agents: records stay with their agent, delete takes one agent
// and leaves the rest, a damaged agent stops no other, and metadata and
// listing survive a reopen.
func RunFleet(t *testing.T, open FleetOpener) {
	t.Run("PerAgent", func(t *testing.T) {
		f := open(t, newName(t))
		defer func() {
			if err := f.Close(); err != nil {
				t.Error(err)
			}
		}()
		Run(t, func(t testing.TB, name string) journal.Store {
			// The names end in a counter that makes them unique; ids are short.
			return openAgent(t, f, name[max(0, len(name)-journal.MaxAgentIDLen):])
		})
	})
	tests := []struct {
		name string
		fn   func(*testing.T, FleetOpener)
	}{
		{"CreateOpenInfo", testFleetCreateOpenInfo},
		{"ListInOrder", testFleetList},
		{"RecordsStayWithTheirAgent", testFleetRecordsStay},
		{"DeleteLeavesTheOthers", testFleetDelete},
		{"DamagedAgentStopsNoOther", testFleetDamaged},
		{"SurvivesReopen", testFleetReopen},
		{"ForkOriginKept", testFleetForkOrigin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, open) })
	}
}

// openAgent opens agent id of f, creating it the first time.
func openAgent(t testing.TB, f journal.Fleet, id string) journal.Store {
	t.Helper()
	if err := f.Create(id, journal.AgentInfo{Owner: "suite", Created: time.Unix(1, 0).UTC()}); err != nil && !errors.Is(err, journal.ErrAgentExists) {
		t.Fatalf("Create(%q): %v", id, err)
	}
	s, err := f.Open(id)
	if err != nil {
		t.Fatalf("Open(%q): %v", id, err)
	}
	return s
}

func mustCloseFleet(t testing.TB, f journal.Fleet) {
	t.Helper()
	if err := f.Close(); err != nil {
		t.Fatalf("fleet Close: %v", err)
	}
}

func listIDs(t testing.TB, f journal.Fleet, after string) []string {
	t.Helper()
	var ids []string
	if err := f.List(after, func(id string, _ journal.AgentInfo) error { ids = append(ids, id); return nil }); err != nil {
		t.Fatalf("List(%q): %v", after, err)
	}
	return ids
}

func testFleetCreateOpenInfo(t *testing.T, open FleetOpener) {
	f := open(t, newName(t))
	defer mustCloseFleet(t, f)
	created := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	if err := f.Create("a", journal.AgentInfo{Owner: "ann", Created: created}); err != nil {
		t.Fatal(err)
	}
	if err := f.Create("a", journal.AgentInfo{Owner: "bob"}); !errors.Is(err, journal.ErrAgentExists) {
		t.Fatalf("second Create(a) = %v, want ErrAgentExists", err)
	}
	for _, bad := range []string{"", "a.b", "a/b", "a b", "é", string(make([]byte, journal.MaxAgentIDLen+1))} {
		if err := f.Create(bad, journal.AgentInfo{}); !errors.Is(err, journal.ErrInvalidAgentID) {
			t.Errorf("Create(%q) = %v, want ErrInvalidAgentID", bad, err)
		}
	}
	info, err := f.Info("a")
	if err != nil || info.Owner != "ann" || !info.Created.Equal(created) {
		t.Fatalf("Info(a) = %+v, %v; want owner ann, created %v", info, err, created)
	}
	if _, err := f.Info("b"); !errors.Is(err, journal.ErrNoAgent) {
		t.Fatalf("Info(b) = %v, want ErrNoAgent", err)
	}
	if _, err := f.Open("b"); !errors.Is(err, journal.ErrNoAgent) {
		t.Fatalf("Open(b) = %v, want ErrNoAgent", err)
	}
	s, err := f.Open("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Open("a"); !errors.Is(err, journal.ErrInUse) {
		t.Fatalf("Open(a) while open = %v, want ErrInUse", err)
	}
	if err := f.Delete("a"); !errors.Is(err, journal.ErrInUse) {
		t.Fatalf("Delete(a) while open = %v, want ErrInUse", err)
	}
	mustAppend(t, s, records(1, 2))
	mustCloseStore(t, s)
	s, err = f.Open("a")
	if err != nil {
		t.Fatalf("Open(a) after Close: %v", err)
	}
	defer mustCloseStore(t, s)
	if got := seqs(scan(t, s, 0)); !reflect.DeepEqual(got, []uint64{1, 2}) {
		t.Fatalf("agent a holds %v after a reopen, want [1 2]", got)
	}
}

func testFleetList(t *testing.T, open FleetOpener) {
	f := open(t, newName(t))
	defer mustCloseFleet(t, f)
	for _, id := range []string{"m", "b", "z", "a-1", "A"} {
		if err := f.Create(id, journal.AgentInfo{Owner: "o-" + id}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := listIDs(t, f, ""), []string{"A", "a-1", "b", "m", "z"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
	if got, want := listIDs(t, f, "b"), []string{"m", "z"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("List after b = %v, want %v", got, want)
	}
	var owners []string
	err := f.List("", func(id string, info journal.AgentInfo) error {
		owners = append(owners, info.Owner)
		if len(owners) == 2 {
			return journal.ErrStop
		}
		return nil
	})
	if err != nil || !reflect.DeepEqual(owners, []string{"o-A", "o-a-1"}) {
		t.Fatalf("List stopped after two = %v, %v; want [o-A o-a-1], nil", owners, err)
	}
	boom := errors.New("boom")
	if err := f.List("", func(string, journal.AgentInfo) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("List with a failing callback = %v, want its error", err)
	}
}

// testFleetRecordsStay appends to many agents at once, so that a store
// committing them together has them in one commit, and checks that each
// agent reads back exactly its own.
func testFleetRecordsStay(t *testing.T, open FleetOpener) {
	f := open(t, newName(t))
	defer mustCloseFleet(t, f)
	const agents, perAgent = 8, 40
	stores := make([]journal.Store, agents)
	for i := range stores {
		stores[i] = openAgent(t, f, fmt.Sprintf("agent-%d", i))
	}
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			for seq := uint64(1); seq <= perAgent; seq++ {
				if err := s.Append([]journal.Record{record(seq, fmt.Sprintf(`{"agent":%d,"seq":%d}`, i, seq))}); err != nil {
					t.Errorf("agent %d: Append(%d): %v", i, seq, err)
					return
				}
			}
			if err := s.PutSnapshot(snapshot(perAgent, fmt.Sprintf(`{"agent":%d}`, i))); err != nil {
				t.Errorf("agent %d: PutSnapshot: %v", i, err)
			}
		})
	}
	wg.Wait()
	for i, s := range stores {
		got := scan(t, s, 0)
		if len(got) != perAgent {
			t.Errorf("agent %d holds %d records, want %d", i, len(got), perAgent)
		}
		for j, r := range got {
			if want := record(uint64(j+1), fmt.Sprintf(`{"agent":%d,"seq":%d}`, i, j+1)); !reflect.DeepEqual(r, want) {
				t.Fatalf("agent %d record %d = %q, want its own %q", i, j+1, r.Data, want.Data)
			}
		}
		if snaps := snapshots(t, s); len(snaps) != 1 || !reflect.DeepEqual(snaps[0], snapshot(perAgent, fmt.Sprintf(`{"agent":%d}`, i))) {
			t.Errorf("agent %d snapshots = %v, want only its own", i, seqs(snaps))
		}
		mustCloseStore(t, s)
	}
}

func testFleetDelete(t *testing.T, open FleetOpener) {
	f := open(t, newName(t))
	defer mustCloseFleet(t, f)
	a, b := openAgent(t, f, "a"), openAgent(t, f, "b")
	mustAppend(t, a, records(1, 5))
	mustAppend(t, b, records(1, 3))
	if err := a.PutSnapshot(snapshot(5, "a")); err != nil {
		t.Fatal(err)
	}
	if err := b.PutSnapshot(snapshot(3, "b")); err != nil {
		t.Fatal(err)
	}
	mustCloseStore(t, a)
	if err := f.Delete("a"); err != nil {
		t.Fatalf("Delete(a): %v", err)
	}
	if err := f.Delete("a"); !errors.Is(err, journal.ErrNoAgent) {
		t.Fatalf("second Delete(a) = %v, want ErrNoAgent", err)
	}
	if _, err := f.Open("a"); !errors.Is(err, journal.ErrNoAgent) {
		t.Fatalf("Open(a) after Delete = %v, want ErrNoAgent", err)
	}
	if got := listIDs(t, f, ""); !reflect.DeepEqual(got, []string{"b"}) {
		t.Fatalf("List after Delete(a) = %v, want [b]", got)
	}
	mustAppend(t, b, records(4, 4))
	if got := seqs(scan(t, b, 0)); !reflect.DeepEqual(got, []uint64{1, 2, 3, 4}) {
		t.Fatalf("b holds %v after a's delete, want [1 2 3 4]", got)
	}
	if got := snapshots(t, b); len(got) != 1 || got[0].Seq != 3 {
		t.Fatalf("b's snapshots after a's delete = %v, want [3]", seqs(got))
	}
	mustCloseStore(t, b)
	a = openAgent(t, f, "a")
	defer mustCloseStore(t, a)
	if got := scan(t, a, 0); len(got) != 0 {
		t.Fatalf("a created again holds %v, want nothing", seqs(got))
	}
	if got := snapshots(t, a); len(got) != 0 {
		t.Fatalf("a created again holds snapshots %v, want none", seqs(got))
	}
	mustAppend(t, a, records(1, 1))
}

// testFleetDamaged damages one agent's journal and checks that its Machine
// refuses to open while the others open and replay.
func testFleetDamaged(t *testing.T, open FleetOpener) {
	name := newName(t)
	f := open(t, name)
	opener := func(t testing.TB, id string) journal.Store { return openAgent(t, f, id) }
	crashed(t, opener, "bad", 12, 6, func(v []byte) []byte { v[len(v)-4] ^= 0x10; return v })
	good := mustOpen(t, opener, "good", journal.Options[state, input]{SnapshotEvery: -1})
	DispatchAll(t, good, Notes(0, 9))
	MustClose(t, good)
	mustCloseFleet(t, f)

	f = open(t, name)
	defer mustCloseFleet(t, f)
	s := openAgent(t, f, "bad")
	_, err := openMachine(t, s, journal.Options[state, input]{SnapshotEvery: -1})
	var ce *journal.CorruptError
	if !errors.As(err, &ce) || ce.Seq != 6 {
		t.Fatalf("Open of the damaged agent = %v, want a *CorruptError for input 6", err)
	}
	mustCloseStore(t, s)
	good = mustOpen(t, opener, "good", journal.Options[state, input]{SnapshotEvery: -1})
	if got, want := good.Current(), Fold(Notes(0, 9)); !reflect.DeepEqual(got, want) {
		t.Errorf("the other agent's state = %v, want its 10 inputs", got.Notes)
	}
	DispatchAll(t, good, Notes(10, 10))
	MustClose(t, good)
}

func testFleetReopen(t *testing.T, open FleetOpener) {
	name := newName(t)
	f := open(t, name)
	created := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for i := range 3 {
		id := fmt.Sprintf("r%d", i)
		if err := f.Create(id, journal.AgentInfo{Owner: "owner-" + id, Created: created}); err != nil {
			t.Fatal(err)
		}
		s, err := f.Open(id)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, s, records(1, uint64(i+1)))
		mustCloseStore(t, s)
	}
	mustCloseFleet(t, f)
	f = open(t, name)
	defer mustCloseFleet(t, f)
	if got := listIDs(t, f, ""); !reflect.DeepEqual(got, []string{"r0", "r1", "r2"}) {
		t.Fatalf("List after reopen = %v", got)
	}
	for i := range 3 {
		id := fmt.Sprintf("r%d", i)
		info, err := f.Info(id)
		if err != nil || info.Owner != "owner-"+id || !info.Created.Equal(created) {
			t.Errorf("Info(%s) after reopen = %+v, %v", id, info, err)
		}
		s, err := f.Open(id)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(scan(t, s, 0)); got != i+1 {
			t.Errorf("%s holds %d records after reopen, want %d", id, got, i+1)
		}
		mustCloseStore(t, s)
	}
}

// testFleetForkOrigin: an agent created as a fork, or delegated to, keeps
// where it came from in its AgentInfo, through Info, List and a reopen; the
// others have none.
func testFleetForkOrigin(t *testing.T, open FleetOpener) {
	name := newName(t)
	f := open(t, name)
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	origin := &journal.ForkOrigin{Agent: "parent", Seq: 12}
	if err := f.Create("parent", journal.AgentInfo{Owner: "ann", Created: created}); err != nil {
		t.Fatal(err)
	}
	if err := f.Create("child", journal.AgentInfo{Owner: "ann", Created: created, Fork: origin}); err != nil {
		t.Fatal(err)
	}
	delegated := &journal.Delegation{Agent: "parent", Job: "work/task-1", Depth: 2}
	if err := f.Create("sub", journal.AgentInfo{Owner: "ann", Created: created, Delegated: delegated}); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		if info, err := f.Info("child"); err != nil || !reflect.DeepEqual(info.Fork, origin) {
			t.Errorf("Info(child) %s = %+v, %v; want the fork of parent at 12", when, info, err)
		}
		if info, err := f.Info("parent"); err != nil || info.Fork != nil || info.Delegated != nil {
			t.Errorf("Info(parent) %s = %+v, %v; want no fork, no delegation", when, info, err)
		}
		if info, err := f.Info("sub"); err != nil || !reflect.DeepEqual(info.Delegated, delegated) || info.Fork != nil {
			t.Errorf("Info(sub) %s = %+v, %v; want delegated by parent's job", when, info, err)
		}
		forks := map[string]*journal.ForkOrigin{}
		err := f.List("", func(id string, info journal.AgentInfo) error {
			forks[id] = info.Fork
			return nil
		})
		if err != nil || !reflect.DeepEqual(forks, map[string]*journal.ForkOrigin{"parent": nil, "child": origin, "sub": nil}) {
			t.Errorf("List %s = %v, %v", when, forks, err)
		}
	}
	check("after Create")
	mustCloseFleet(t, f)
	f = open(t, name)
	defer mustCloseFleet(t, f)
	check("after a reopen")
}
