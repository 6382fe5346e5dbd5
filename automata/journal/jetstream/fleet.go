package jetstream

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/internal/backend"
	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

// Fleet is a journal.Fleet on JetStream: the agents of a Config, each a
// key of the key-value bucket Config.Fleet holding its journal.AgentInfo as
// JSON, and each journal a Store on the agent's subject of the shared
// stream, with its snapshots in the shared Object Store bucket.
//
// Open claims the agent (Claim, under the fleet's owner), so that one
// process at a time has an agent open, and fences any earlier one; its
// store holds the lease until it is closed. Create, Info and List read and
// write the bucket only.
//
// The bucket's reads go to the leader of its stream (STREAM.MSG.GET, STREAM.INFO),
// not to a replica that may lag: an agent is found once Create has
// returned, and not after Delete has.
type Fleet struct {
	nc    *nats.Conn
	cfg   Config
	res   resources
	meta  js.KeyValue // the bucket Config.Fleet
	owner string

	hostsMu sync.Mutex
	hostsKV js.KeyValue // the bucket Config.Hosts, once used
	secret  []byte      // Secret
	advert  advert      // what Advertise advertises

	mu     sync.Mutex        // guards busy and closed
	busy   map[string]string // agents open here, or being deleted: which
	closed bool
}

// FleetStore is the store of an agent that a Fleet opened: its journal,
// claimed, as Claim returns it. Close releases the lease and gives the
// agent back to the fleet. Fleet.Open returns a *FleetStore as a
// journal.Store; assert the type for Fenced and Err.
type FleetStore struct {
	s     *Store
	fleet *Fleet
	id    string
	once  sync.Once
	err   error // of the first Close
}

var (
	_ journal.Fleet = (*Fleet)(nil)
	_ journal.Store = (*FleetStore)(nil)
)

var errFleetClosed = errors.New("jetstream: the fleet is closed")

// OpenFleet opens the fleet of cfg, creating the stream and buckets that do
// not exist, the buckets Config.Fleet and Config.Hosts among them. owner
// names this process in the leases it takes, as Claim's owner does (it is
// not AgentInfo.Owner): unique among the processes that open agents of cfg,
// and new at each start of a process whose agents others may take over.
//
// The fleet uses nc and does not close it.
func OpenFleet(ctx context.Context, nc *nats.Conn, cfg Config, owner string) (*Fleet, error) {
	if owner == "" {
		return nil, errors.New("jetstream: OpenFleet needs an owner id")
	}
	cfg = cfg.withDefaults()
	r, err := setup(ctx, nc, cfg)
	if err != nil {
		return nil, err
	}
	meta, err := r.js.KeyValue(ctx, cfg.Fleet)
	if errors.Is(err, js.ErrBucketNotFound) {
		meta, err = r.js.CreateKeyValue(ctx, js.KeyValueConfig{Bucket: cfg.Fleet, Storage: js.FileStorage, Replicas: cfg.Replicas})
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: key-value bucket %s: %w", cfg.Fleet, err)
	}
	f := &Fleet{nc: nc, cfg: cfg, res: r, meta: meta, owner: owner, busy: map[string]string{}}
	if _, err := f.hosts(ctx); err != nil { // for Advertise and Locate
		return nil, err
	}
	if f.secret, err = fleetSecret(ctx, meta); err != nil {
		return nil, fmt.Errorf("jetstream: key-value bucket %s: the fleet's secret: %w", cfg.Fleet, err)
	}
	return f, nil
}

// secretKey is the key of the fleet's secret in the bucket Config.Fleet:
// with a dot, which no agent id has (journal.CheckAgentID), so it is no
// agent's key, and List passes it over.
const secretKey = "moora.secret"

// fleetSecret returns the fleet's secret: 32 random bytes, made by the
// first process that opens the fleet (a key created only if absent) and
// read by every other.
func fleetSecret(ctx context.Context, meta js.KeyValue) ([]byte, error) {
	secret := make([]byte, 32)
	rand.Read(secret)
	_, err := meta.Create(ctx, secretKey, secret)
	if err == nil {
		return secret, nil
	}
	if !errors.Is(err, js.ErrKeyExists) {
		return nil, err
	}
	e, err := meta.Get(ctx, secretKey)
	if err != nil {
		return nil, err
	}
	if len(e.Value()) != 32 {
		return nil, &journal.CorruptError{Err: fmt.Errorf("the key %s holds %d bytes, not 32", secretKey, len(e.Value()))}
	}
	return e.Value(), nil
}

// Secret returns a key that every process of the fleet shares, and no
// client of theirs knows (it is kept in the bucket Config.Fleet): an HTTP
// front signs with it the requests it routes to another process
// (automata/httpbridge's Peers), so that a client cannot pass for a peer.
func (f *Fleet) Secret() []byte { return slices.Clone(f.secret) }

func (f *Fleet) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), f.cfg.Timeout)
}

// The bucket's stream and the subject of a key, as the key-value store
// lays them out.
func (f *Fleet) metaStream() string           { return "KV_" + f.cfg.Fleet }
func (f *Fleet) metaSubject(id string) string { return "$KV." + f.cfg.Fleet + "." + id }

// reserve marks agent id busy here, for why ("open", "being deleted"), or
// says why it already is.
func (f *Fleet) reserve(id, why string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errFleetClosed
	}
	if was, ok := f.busy[id]; ok {
		return fmt.Errorf("jetstream: agent %s: %w: it is %s in this fleet", id, journal.ErrInUse, was)
	}
	f.busy[id] = why
	return nil
}

func (f *Fleet) unreserve(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.busy, id)
}

func (f *Fleet) checkOpen() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errFleetClosed
	}
	return nil
}

// Create adds agent id with info: a key created only if absent.
func (f *Fleet) Create(id string, info journal.AgentInfo) error {
	if err := journal.CheckAgentID(id); err != nil {
		return err
	}
	if err := f.checkOpen(); err != nil {
		return err
	}
	data, err := encodeAgentInfo(info)
	if err != nil {
		return fmt.Errorf("jetstream: agent %s: %w", id, err)
	}
	ctx, cancel := f.ctx()
	defer cancel()
	if _, err := f.meta.Create(ctx, id, data); err != nil {
		if errors.Is(err, js.ErrKeyExists) {
			return fmt.Errorf("jetstream: agent %s: %w", id, journal.ErrAgentExists)
		}
		return fmt.Errorf("jetstream: creating agent %s: %w", id, err)
	}
	return nil
}

// Open claims agent id and returns its store, a *FleetStore. It fails with
// an error wrapping journal.ErrInUse while the agent is open in this fleet,
// and also while another process holds its lease: then the error wraps the
// *NotOwnerError naming the holder. A crashed holder's lease expires
// Config.TTL after its last renewal at the latest; Open does not wait for
// it.
//
// Open needs the agent's key, not its value: an agent whose AgentInfo is
// damaged still opens.
func (f *Fleet) Open(id string) (journal.Store, error) {
	if err := journal.CheckAgentID(id); err != nil {
		return nil, err
	}
	if err := f.reserve(id, "open"); err != nil {
		return nil, err
	}
	s, err := f.open(id)
	if err != nil {
		f.unreserve(id)
		return nil, unavailable(err)
	}
	return &FleetStore{s: s, fleet: f, id: id}, nil
}

// unavailable wraps journal.ErrUnavailable into err if it says that the
// server did not answer in time, had no one to answer, or cannot serve now
// (JetStream unavailable, a cluster without a leader): a call that may
// succeed if made again.
func unavailable(err error) error {
	var apiErr *js.APIError
	switch {
	case err == nil || errors.Is(err, ErrFenced):
		return err // fenced: for good
	case errors.Is(err, nats.ErrTimeout), errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, js.ErrJetStreamNotEnabled),
		errors.As(err, &apiErr) && apiErr.Code == 503:
		return fmt.Errorf("%w (%w)", err, journal.ErrUnavailable)
	}
	return err
}

func (f *Fleet) open(id string) (*Store, error) {
	ctx, cancel := f.ctx()
	defer cancel()
	// Checked before the claim, whose owner-epoch record would otherwise
	// be written on the subject of an agent that does not exist.
	if _, _, err := f.lastValue(ctx, id); err != nil {
		return nil, err
	}
	s, err := Claim(ctx, f.nc, f.cfg, id, f.owner)
	if held := (*NotOwnerError)(nil); errors.As(err, &held) {
		return nil, fmt.Errorf("%w (%w)", err, journal.ErrInUse)
	}
	if err != nil {
		return nil, err
	}
	// A Delete that ended between the check and the claim: nothing may be
	// left of the agent but the epoch record just written, which goes.
	// (Delete removes the key while it holds the lease; once this store
	// holds it, the key is there or the agent is gone.)
	if _, _, err := f.lastValue(ctx, id); err != nil {
		if errors.Is(err, journal.ErrNoAgent) {
			if perr := f.purgeJournal(ctx, id); perr != nil {
				err = errors.Join(err, perr)
			}
		}
		s.Close()
		return nil, err
	}
	return s, nil
}

// Info returns the AgentInfo of agent id. A value that is not what Create
// stores is a *journal.CorruptError naming the agent.
func (f *Fleet) Info(id string) (journal.AgentInfo, error) {
	if err := journal.CheckAgentID(id); err != nil {
		return journal.AgentInfo{}, err
	}
	if err := f.checkOpen(); err != nil {
		return journal.AgentInfo{}, err
	}
	ctx, cancel := f.ctx()
	defer cancel()
	info, err := f.info(ctx, id)
	return info, unavailable(err)
}

func (f *Fleet) info(ctx context.Context, id string) (journal.AgentInfo, error) {
	data, rev, err := f.lastValue(ctx, id)
	if err != nil {
		return journal.AgentInfo{}, err
	}
	info, err := decodeAgentInfo(data)
	if err != nil {
		return journal.AgentInfo{}, &journal.CorruptError{Err: fmt.Errorf("key-value bucket %s, agent %s (revision %d): %w", f.cfg.Fleet, id, rev, err)}
	}
	return info, nil
}

// List calls fn with each agent whose id sorts after the given one, in
// order of id.
//
// The bucket gives its keys in the order they were written, not by key,
// so List reads them all first: one STREAM.INFO request per 100,000 keys,
// answered by the stream's leader, whose answer List holds while it keeps
// the ids after the given one (at most journal.MaxAgentIDLen bytes each)
// and sorts them. It then reads each agent's AgentInfo as it gets to it,
// one request per agent. An agent created or deleted meanwhile may or may
// not be listed.
//
// An agent whose AgentInfo is damaged, or a key that is not an agent id, is
// passed over, as the bbolt fleet does, and the walk goes on: once it ends
// List returns the *journal.CorruptError of the first one passed over,
// which says how many more there were (or fn's own error).
func (f *Fleet) List(after string, fn func(id string, info journal.AgentInfo) error) error {
	if err := f.checkOpen(); err != nil {
		return err
	}
	ids, err := f.ids(after)
	if err != nil {
		return err
	}
	var passed backend.PassedOver
	for _, id := range ids {
		var info journal.AgentInfo
		err := journal.CheckAgentID(id)
		if err != nil {
			err = &journal.CorruptError{Err: fmt.Errorf("key-value bucket %s holds the key %q, which is no agent's id: %w", f.cfg.Fleet, id, err)}
		} else {
			ctx, cancel := f.ctx()
			info, err = f.info(ctx, id)
			cancel()
		}
		switch {
		case errors.Is(err, journal.ErrNoAgent):
			continue // deleted since it was listed
		case errors.As(err, new(*journal.CorruptError)):
			passed.Add(err)
			continue
		case err != nil:
			return err
		}
		if err := fn(id, info); err != nil {
			if errors.Is(err, journal.ErrStop) {
				return passed.Err()
			}
			return err
		}
	}
	return passed.Err()
}

// ids returns the keys of the bucket after the given one, sorted: the
// subjects of its stream, as the leader counts them.
func (f *Fleet) ids(after string) ([]string, error) {
	ctx, cancel := f.ctx()
	defer cancel()
	str, err := f.res.js.Stream(ctx, f.metaStream())
	if err != nil {
		return nil, fmt.Errorf("jetstream: listing the agents: stream %s: %w", f.metaStream(), err)
	}
	prefix := f.metaSubject("")
	info, err := str.Info(ctx, js.WithSubjectFilter(prefix+">"))
	if err != nil {
		return nil, fmt.Errorf("jetstream: listing the agents: %w", err)
	}
	var ids []string
	for subj := range info.State.Subjects {
		if id, ok := strings.CutPrefix(subj, prefix); ok && id > after && id != secretKey {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// Delete removes agent id: it takes the agent's lease, so that no process
// has it open meanwhile, and then deletes, in this order,
//
//  1. the agent's messages: its journal and quarantine subjects, with one
//     purge;
//  2. its snapshot objects, oldest first;
//  3. its key of the bucket Config.Fleet;
//
// and releases the lease (which would expire by itself after Config.TTL).
// The key goes last, so that a Delete that fails or crashes midway leaves
// an agent that is still listed, and that Delete again finishes removing.
// Until then an Open of it finds part of it gone: the state of its newest
// snapshot left, or none.
//
// Delete lists every object of the snapshots bucket, all agents', as the
// store does. It fails with an error wrapping journal.ErrInUse while the
// agent is open here, or its lease is held elsewhere (the error wraps the
// *NotOwnerError then).
func (f *Fleet) Delete(id string) error {
	if err := journal.CheckAgentID(id); err != nil {
		return err
	}
	if err := f.reserve(id, "being deleted"); err != nil {
		return err
	}
	defer f.unreserve(id)
	ctx, cancel := f.ctx()
	defer cancel()
	if _, _, err := f.lastValue(ctx, id); err != nil {
		return err
	}
	l, err := takeLease(ctx, f.nc, f.res.leases, id, f.owner, f.cfg.TTL, nil)
	if held := (*NotOwnerError)(nil); errors.As(err, &held) {
		return fmt.Errorf("%w (%w)", err, journal.ErrInUse)
	}
	if err != nil {
		return err
	}
	err = f.remove(id, l)
	if rerr := l.release(true); err == nil {
		err = rerr
	}
	return err
}

// remove deletes what Delete does, each step with its own timeout, while
// the lease l is held.
func (f *Fleet) remove(id string, l *lease) error {
	steps := []struct {
		what string
		do   func(context.Context) error
	}{
		{"its messages", func(ctx context.Context) error { return f.purgeJournal(ctx, id) }},
		{"its snapshots", func(ctx context.Context) error { return f.deleteSnapshots(ctx, id) }},
		{"its key", func(ctx context.Context) error {
			str, err := f.res.js.Stream(ctx, f.metaStream())
			if err != nil {
				return err
			}
			return str.Purge(ctx, js.WithPurgeSubject(f.metaSubject(id)))
		}},
	}
	for _, step := range steps {
		if err := l.check(); err != nil {
			return fmt.Errorf("jetstream: deleting agent %s: before deleting %s: %w", id, step.what, err)
		}
		ctx, cancel := f.ctx()
		err := step.do(ctx)
		cancel()
		if err != nil {
			return fmt.Errorf("jetstream: deleting agent %s: deleting %s: %w (Delete again to finish)", id, step.what, err)
		}
	}
	return nil
}

// purgeJournal deletes every message of agent id: its journal and its
// quarantine, <Subject>.*.<id>, in one purge.
func (f *Fleet) purgeJournal(ctx context.Context, id string) error {
	return f.res.stream.Purge(ctx, js.WithPurgeSubject(f.cfg.Subject+".*."+id))
}

// deleteSnapshots deletes the objects <id>/... of the snapshots bucket,
// oldest first, so that the newest is there until the last.
func (f *Fleet) deleteSnapshots(ctx context.Context, id string) error {
	infos, err := f.res.snapshots.List(ctx)
	if errors.Is(err, js.ErrNoObjectsFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var names []string
	for _, info := range infos {
		if strings.HasPrefix(info.Name, id+"/") {
			names = append(names, info.Name)
		}
	}
	slices.Sort(names) // <id>/<seq>, the seq in 20 digits
	for _, name := range names {
		if err := f.res.snapshots.Delete(ctx, name); err != nil && !errors.Is(err, js.ErrObjectNotFound) {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// Close closes the fleet, which fails with an error wrapping
// journal.ErrInUse, leaving the fleet open, while some of its agents are
// open. It does not close the connection.
func (f *Fleet) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.busy); n > 0 {
		ids := make([]string, 0, n)
		for id := range f.busy {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return fmt.Errorf("jetstream: closing the fleet: %w: the Stores of %d agents are open (%q): close them first", journal.ErrInUse, n, ids[:min(n, 5)])
	}
	f.closed = true
	f.advert.end() // the key expires TTL after its last renewal
	return nil
}

// lastValue reads the key of agent id, and its revision, from the leader
// of the bucket's stream (see kvLast); a deleted key is journal.ErrNoAgent.
func (f *Fleet) lastValue(ctx context.Context, id string) ([]byte, uint64, error) {
	e, err := kvLast(ctx, f.nc, f.cfg.Fleet, id)
	if errors.Is(err, js.ErrKeyNotFound) || err == nil && e.deleted {
		return nil, 0, fmt.Errorf("jetstream: agent %s: %w", id, journal.ErrNoAgent)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("jetstream: reading agent %s: %w", id, err)
	}
	return e.value, e.rev, nil
}

// encodeAgentInfo is the value of an agent's key: its AgentInfo as JSON,
// {"owner":...,"created":...}, the time in RFC 3339.
func encodeAgentInfo(info journal.AgentInfo) ([]byte, error) {
	data, err := json.Marshal(info)
	if err != nil {
		return nil, fmt.Errorf("encoding its info: %w", err)
	}
	return data, nil
}

// decodeAgentInfo reads the value of an agent's key strictly: a JSON
// object with exactly the members "owner", a string, and "created", a
// string holding an RFC 3339 time, and, for a fork, "fork" (see
// journal.ForkOrigin), and, for a sub-agent, "delegated" (see
// journal.Delegation), each once, and nothing after it.
func decodeAgentInfo(data []byte) (journal.AgentInfo, error) {
	var info journal.AgentInfo
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return info, fmt.Errorf("%q is not a JSON object", data)
	}
	var owner, created bool
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return info, fmt.Errorf("%q: %w", data, err)
		}
		key, _ := tok.(string)
		if key == "fork" || key == "delegated" {
			var raw json.RawMessage
			if key == "fork" && info.Fork != nil || key == "delegated" && info.Delegated != nil {
				return info, fmt.Errorf("%q: member %q twice", data, key)
			}
			if err := dec.Decode(&raw); err != nil {
				return info, fmt.Errorf("%q: member %s: %w", data, key, err)
			}
			if key == "fork" {
				info.Fork, err = backend.DecodeFork(raw)
			} else {
				info.Delegated, err = backend.DecodeDelegation(raw)
			}
			if err != nil {
				return info, fmt.Errorf("%q: %w", data, err)
			}
			continue
		}
		tok, err = dec.Token()
		if err != nil {
			return info, fmt.Errorf("%q: %w", data, err)
		}
		v, ok := tok.(string)
		if !ok {
			return info, fmt.Errorf("%q: member %q is not a string", data, key)
		}
		switch {
		case key == "owner" && !owner:
			info.Owner, owner = v, true
		case key == "created" && !created:
			if err := info.Created.UnmarshalText([]byte(v)); err != nil {
				return info, fmt.Errorf("%q: member created: %w", data, err)
			}
			created = true
		case key == "owner" || key == "created":
			return info, fmt.Errorf("%q: member %q twice", data, key)
		default:
			return info, fmt.Errorf("%q: unknown member %q", data, key)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return info, fmt.Errorf("%q: %w", data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return info, fmt.Errorf("%q: more after the object", data)
	}
	if !owner || !created {
		return info, fmt.Errorf("%q: want members owner and created", data)
	}
	return info, nil
}

// Append, Scan, PutSnapshot, Snapshots, Prune and Quarantine are the
// Store's.
// An error that says the server did not answer wraps
// journal.ErrUnavailable.
func (s *FleetStore) Append(records []journal.Record) error {
	return unavailable(s.s.Append(records))
}
func (s *FleetStore) Scan(from uint64, fn func(journal.Record) error) error {
	return unavailable(s.s.Scan(from, fn))
}
func (s *FleetStore) PutSnapshot(r journal.Record) error {
	return unavailable(s.s.PutSnapshot(r))
}
func (s *FleetStore) Snapshots(fn func(journal.Record) error) error {
	return unavailable(s.s.Snapshots(fn))
}
func (s *FleetStore) Prune(snapshotsBefore, keepSnapshot, inputsBefore uint64) error {
	return unavailable(s.s.Prune(snapshotsBefore, keepSnapshot, inputsBefore))
}
func (s *FleetStore) Quarantine(seq uint64) error { return unavailable(s.s.Quarantine(seq)) }

// Fenced and Err are the Store's: see Store.Fenced.
func (s *FleetStore) Fenced() <-chan struct{} { return s.s.Fenced() }
func (s *FleetStore) Err() error              { return s.s.Err() }

// Close closes the store, releasing the agent's lease, and gives the agent
// back to the fleet, which may open or delete it again.
func (s *FleetStore) Close() error {
	s.once.Do(func() {
		s.err = s.s.Close()
		s.fleet.unreserve(s.id)
	})
	return s.err
}
