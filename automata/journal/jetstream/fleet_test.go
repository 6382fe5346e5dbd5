package jetstream_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/internal/storetest"
	"github.com/moora-go/moora/automata/journal/jetstream"
	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

// fleetConfig gives each fleet name of the suite resources of its own on
// one server: the fleets are independent, and a name opened again is the
// same fleet.
func fleetConfig(base jetstream.Config) func(name string) jetstream.Config {
	var mu sync.Mutex
	names := map[string]int{}
	return func(name string) jetstream.Config {
		mu.Lock()
		n, ok := names[name]
		if !ok {
			n = len(names) + 1
			names[name] = n
		}
		mu.Unlock()
		cfg := base
		p := fmt.Sprintf("F%d_", n)
		cfg.Stream, cfg.Snapshots, cfg.Leases, cfg.Agents, cfg.Fleet = p+"JOURNAL", p+"SNAPSHOTS", p+"LEASES", p+"AGENTS", p+"FLEET"
		cfg.Subject = fmt.Sprintf("f%d.journal", n)
		return cfg
	}
}

func fleetOpener(nc *nats.Conn, base jetstream.Config) storetest.FleetOpener {
	config := fleetConfig(base)
	return func(t testing.TB, name string) journal.Fleet {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		f, err := jetstream.OpenFleet(ctx, nc, config(name), "suite-process")
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
}

// TestFleetConformance runs the fleet conformance suite on a single
// embedded server (R1).
func TestFleetConformance(t *testing.T) {
	_, nc := startServer(t, false)
	storetest.RunFleet(t, fleetOpener(nc, jetstream.Config{}))
}

func openFleet(t *testing.T, nc *nats.Conn, cfg jetstream.Config, owner string) *jetstream.Fleet {
	t.Helper()
	f, err := jetstream.OpenFleet(context.Background(), nc, cfg, owner)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFleetHeldElsewhere: an agent open in one process's fleet is in use
// for another's: Open and Delete fail with ErrInUse, naming the holder;
// once it is closed the other opens it, and the store it gets exposes
// Fenced and Err.
func TestFleetHeldElsewhere(t *testing.T) {
	_, nc := startServer(t, false)
	cfg := jetstream.Config{TTL: 30 * time.Second}
	one, two := openFleet(t, nc, cfg, "process-one"), openFleet(t, nc, cfg, "process-two")
	if err := one.Create("a", journal.AgentInfo{Owner: "ann"}); err != nil {
		t.Fatal(err)
	}
	s, err := one.Open("a")
	if err != nil {
		t.Fatal(err)
	}
	var held *jetstream.NotOwnerError
	if _, err := two.Open("a"); !errors.Is(err, journal.ErrInUse) || !errors.As(err, &held) || held.Owner != "process-one" {
		t.Fatalf("Open of an agent open elsewhere = %v, want ErrInUse and a *NotOwnerError naming process-one", err)
	}
	if err := two.Delete("a"); !errors.Is(err, journal.ErrInUse) || !errors.As(err, &held) {
		t.Fatalf("Delete of an agent open elsewhere = %v, want ErrInUse and a *NotOwnerError", err)
	}
	if err := one.Close(); !errors.Is(err, journal.ErrInUse) || !strings.Contains(err.Error(), `open (["a"])`) {
		t.Fatalf("Close of a fleet with an open agent = %v, want ErrInUse naming it", err)
	}
	if err := s.Append(inputRecord(1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = two.Open("a")
	if err != nil {
		t.Fatalf("Open once the other closed it: %v", err)
	}
	fs := s.(*jetstream.FleetStore)
	select {
	case <-fs.Fenced():
		t.Fatalf("a fresh store is fenced: %v", fs.Err())
	default:
	}
	if err := fs.Append(inputRecord(2)); err != nil || fs.Err() != nil {
		t.Fatalf("Append = %v, Err = %v", err, fs.Err())
	}
	fs.Close()
	for _, f := range []*jetstream.Fleet{one, two} {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Create("b", journal.AgentInfo{}); err == nil {
			t.Fatal("Create on a closed fleet succeeded")
		}
	}
}

// TestFleetDamagedInfo: a value of the fleet's bucket that is not what
// Create stores is a *CorruptError naming the agent, from Info; List passes
// over it and returns it at the end; the agent still opens and deletes.
func TestFleetDamagedInfo(t *testing.T) {
	_, nc := startServer(t, false)
	f := openFleet(t, nc, jetstream.Config{}, "p")
	defer f.Close()
	for _, id := range []string{"a", "b", "c"} {
		if err := f.Create(id, journal.AgentInfo{Owner: "o-" + id}); err != nil {
			t.Fatal(err)
		}
	}
	j, _ := js.New(nc)
	kv, err := j.KeyValue(context.Background(), "MOORA_FLEET")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(context.Background(), "b", []byte(`{"owner":"o-b","created":"yesterday"}`)); err != nil {
		t.Fatal(err)
	}
	var ce *journal.CorruptError
	if _, err := f.Info("b"); !errors.As(err, &ce) || !strings.Contains(err.Error(), "MOORA_FLEET, agent b") {
		t.Fatalf("Info of a damaged agent = %v, want a *CorruptError naming it", err)
	}
	if _, err := kv.Put(context.Background(), "c", []byte(`{"owner":"o-c"}`)); err != nil {
		t.Fatal(err)
	}
	if err := f.Create("d", journal.AgentInfo{Owner: "o-d"}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	err = f.List("", func(id string, _ journal.AgentInfo) error { ids = append(ids, id); return nil })
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "agent b") || !strings.Contains(err.Error(), "and 1 more") || !reflect.DeepEqual(ids, []string{"a", "d"}) {
		t.Fatalf("List over damaged agents = %v after %v, want [a d], then a *CorruptError naming b and counting c", err, ids)
	}
	ids = nil
	if err := f.List("c", func(id string, _ journal.AgentInfo) error { ids = append(ids, id); return nil }); err != nil || !reflect.DeepEqual(ids, []string{"d"}) {
		t.Fatalf("List after c = %v, %v; want [d]", ids, err)
	}
	s, err := f.Open("b")
	if err != nil {
		t.Fatalf("Open of an agent with damaged info: %v", err)
	}
	s.Close()
	if err := f.Delete("b"); err != nil {
		t.Fatalf("Delete of an agent with damaged info: %v", err)
	}
	if _, err := f.Info("b"); !errors.Is(err, journal.ErrNoAgent) {
		t.Fatalf("Info after Delete = %v, want ErrNoAgent", err)
	}
}

// TestFleetDeleteFinishesAPartialDelete: a Delete that stopped after
// purging the journal (and one snapshot) leaves the agent listed; Delete
// again removes the rest, quarantined records included, and the id
// created again is empty.
func TestFleetDeleteFinishesAPartialDelete(t *testing.T) {
	_, nc := startServer(t, false)
	ctx := context.Background()
	f := openFleet(t, nc, jetstream.Config{}, "p")
	defer f.Close()
	if err := f.Create("a", journal.AgentInfo{Owner: "ann"}); err != nil {
		t.Fatal(err)
	}
	s, err := f.Open("a")
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 4; seq++ {
		if err := s.Append(inputRecord(seq)); err != nil {
			t.Fatal(err)
		}
		if err := s.PutSnapshot(journal.Record{Seq: seq, Data: []byte("state")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Quarantine(4); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// The first steps of a Delete that crashed.
	j, _ := js.New(nc)
	str, err := j.Stream(ctx, "MOORA_JOURNAL")
	if err != nil {
		t.Fatal(err)
	}
	if err := str.Purge(ctx, js.WithPurgeSubject("moora.journal.in.a")); err != nil {
		t.Fatal(err)
	}
	obs, err := j.ObjectStore(ctx, "MOORA_SNAPSHOTS")
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.Delete(ctx, fmt.Sprintf("a/%020d", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Info("a"); err != nil {
		t.Fatalf("Info of a half-deleted agent: %v", err)
	}
	left, err := str.Info(ctx, js.WithSubjectFilter("moora.journal.*.a"))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]uint64{"moora.journal.quarantine.a": 1}; !reflect.DeepEqual(left.State.Subjects, want) {
		t.Fatalf("before the second Delete the agent's subjects are %v, want %v", left.State.Subjects, want)
	}
	if err := f.Delete("a"); err != nil {
		t.Fatalf("Delete of a half-deleted agent: %v", err)
	}
	info, err := str.Info(ctx, js.WithSubjectFilter("moora.journal.*.a"))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.State.Subjects) != 0 {
		t.Fatalf("messages left after Delete: %v", info.State.Subjects)
	}
	if objs, err := obs.List(ctx); !errors.Is(err, js.ErrNoObjectsFound) {
		t.Fatalf("snapshots left after Delete: %d, %v", len(objs), err)
	}
	if err := f.Create("a", journal.AgentInfo{}); err != nil {
		t.Fatal(err)
	}
	s, err = f.Open("a")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 0
	if err := s.Scan(0, func(journal.Record) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("a created again holds %d records (%v), want none", n, err)
	}
	if err := s.Append(inputRecord(1)); err != nil {
		t.Fatal(err)
	}
}

// TestFleetConformanceR3 runs the fleet conformance suite on a three-node
// cluster, every stream and bucket replicated three times.
func TestFleetConformanceR3(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	nc := startCluster(t)
	storetest.RunFleet(t, fleetOpener(nc, jetstream.Config{Replicas: 3}))
}
