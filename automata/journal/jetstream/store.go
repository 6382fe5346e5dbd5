package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/moora-go/moora/automata/journal"
	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Config names the JetStream resources the journals of a set of agents live
// in, and how they are used. The zero value is usable: every field has a
// default. All hosts and stores of one deployment must use the same Config.
type Config struct {
	// Stream holds every agent's journal (default "MOORA_JOURNAL"), on
	// subjects Subject.in.<agent>, and the records moved to quarantine on
	// Subject.quarantine.<agent>.
	Stream string
	// Subject is the prefix of the stream's subjects (default
	// "moora.journal").
	Subject string
	// Snapshots is the Object Store bucket of the snapshots (default
	// "MOORA_SNAPSHOTS"), one object <agent>/<seq> each.
	Snapshots string
	// Leases is the key-value bucket of the owners' leases (default
	// "MOORA_LEASES"), one key per agent that expires TTL after its last
	// renewal.
	Leases string
	// Agents is the key-value bucket that lists the agents a Host runs
	// (default "MOORA_AGENTS").
	Agents string
	// Fleet is the key-value bucket of a Fleet's agents (default
	// "MOORA_FLEET"): one key per agent, holding its journal.AgentInfo as
	// JSON. OpenFleet creates it; stores and hosts do not use it.
	Fleet string
	// Hosts is the key-value bucket where the processes of a Fleet say
	// where they serve (default "MOORA_HOSTS"; see Fleet.Advertise): one
	// key per process, which expires TTL after its last renewal.
	Hosts string
	// Replicas is the number of replicas of the stream and the buckets
	// when this package creates them (default 1).
	Replicas int
	// TTL is how long a lease lasts without renewal (default 10s). The
	// owner renews it every TTL/4 and stops writing once TTL*3/4 have
	// passed since the last renewal it got, before the lease can expire.
	TTL time.Duration
	// Timeout bounds each request to the server (default 10s).
	Timeout time.Duration
	// CombineAppends sends the appends of many agents that wait at the
	// same time on one connection as one atomic batch (a combined batch),
	// each agent's records still one message, fenced by its own expected
	// last subject sequence; a batch that is refused is sent again append
	// by append. Worth it on a server that fsyncs every write
	// (sync_always, as package embedded's does unless told otherwise),
	// which fsyncs the batch once instead of once a message; on one that
	// does not (nats-server's default sync_interval), a combined batch
	// costs the server more than the messages alone (see "Speed" in the
	// package documentation). Off by default. Hosts and stores of one
	// deployment may differ in it.
	CombineAppends bool
}

func (c Config) withDefaults() Config {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.Stream, "MOORA_JOURNAL")
	def(&c.Subject, "moora.journal")
	def(&c.Snapshots, "MOORA_SNAPSHOTS")
	def(&c.Leases, "MOORA_LEASES")
	def(&c.Agents, "MOORA_AGENTS")
	def(&c.Fleet, "MOORA_FLEET")
	def(&c.Hosts, "MOORA_HOSTS")
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	if c.TTL <= 0 {
		c.TTL = 10 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	return c
}

// Headers of the journal's messages.
const (
	hdrSeq   = "Moora-Seq"   // a record: its journal sequence number
	hdrEpoch = "Moora-Epoch" // an owner-epoch record: the lease revision
	hdrOwner = "Moora-Owner" // of an epoch record: who claimed the agent
	hdrLast  = "Moora-Last"  // of an epoch record: the journal's last seq then
	hdrFrom  = "Moora-From"  // of a quarantined record: its stream sequence
)

// ErrFenced is wrapped by the error of every write of a store that another
// owner has fenced (its append was refused because the journal moved on
// without it) or whose lease ran out. The store refuses every later write;
// its owner must drop the agent. The error wraps journal.ErrInUse too: the
// journal is, or may be, another process's now, and a write sent again
// finds that process (an HTTP front answers 503 with Retry-After).
var ErrFenced = errors.New("fenced")

var agentID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

func checkAgent(agent string) error {
	if !agentID.MatchString(agent) {
		return fmt.Errorf("jetstream: agent id %q: want 1 to 128 letters, digits, '-' or '_'", agent)
	}
	return nil
}

// Store is the journal of one agent on JetStream: a journal.Store. Records
// are messages on the agent's subject of the shared stream, each carrying
// its sequence number in a header; every append carries the stream
// sequence of the last message on that subject as this store knows it
// (Nats-Expected-Last-Subject-Sequence), so that the append fails if anyone
// else has written there since. That failure fences the store: see
// ErrFenced and Fenced.
type Store struct {
	nc     *nats.Conn
	js     js.JetStream
	str    js.Stream
	obs    js.ObjectStore
	cfg    Config
	agent  string
	subj   string  // the agent's journal subject
	quar   string  // its quarantine subject
	floor  string  // its floor subject: records below the last floor there are pruned
	lease  *lease  // nil: no lease, fencing by the journal only
	nonce  string  // in message ids: this store's, not another writer's
	shared *shared // what the stores on nc share

	mu      sync.Mutex // held by writes, which it orders; guards what follows
	last    uint64     // stream sequence of the last message on subj, 0: none
	lastSeq uint64     // the journal's last record seq, 0: empty
	appends uint64     // Appends begun, in message ids: each call's own
	closed  bool

	fmu      sync.Mutex    // guards fenceErr; never held while waiting
	fenceErr error         // set once, as fenced is closed
	fenced   chan struct{} // closed when the store is fenced
}

// Open opens the journal of agent, creating the stream and the buckets of
// cfg if they do not exist. The store takes no lease: two stores of one
// agent exclude each other only by fencing (the second to write after the
// other has is fenced). A Host, or Claim, gives one owner per agent.
//
// The store uses nc and does not close it.
func Open(ctx context.Context, nc *nats.Conn, cfg Config, agent string) (*Store, error) {
	s, err := newStore(ctx, nc, cfg, agent)
	if err != nil {
		return nil, err
	}
	if err := s.loadLast(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func newStore(ctx context.Context, nc *nats.Conn, cfg Config, agent string) (*Store, error) {
	if err := checkAgent(agent); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	r, err := setup(ctx, nc, cfg)
	if err != nil {
		return nil, err
	}
	return &Store{
		nc: nc, js: r.js, str: r.stream, obs: r.snapshots, cfg: cfg, agent: agent,
		subj:   cfg.Subject + ".in." + agent,
		quar:   cfg.Subject + ".quarantine." + agent,
		floor:  cfg.Subject + ".floor." + agent,
		fenced: make(chan struct{}),
		nonce:  nuid.Next(),
		shared: sharedOf(nc),
	}, nil
}

// resources are the stream and buckets of a Config, and the JetStream
// context they were found with.
type resources struct {
	js            js.JetStream
	stream        js.Stream
	snapshots     js.ObjectStore
	leases, index js.KeyValue
}

// setup looks up the resources of cfg on nc, creating those that are
// missing.
func setup(ctx context.Context, nc *nats.Conn, cfg Config) (resources, error) {
	j, err := js.New(nc)
	if err != nil {
		return resources{}, fmt.Errorf("jetstream: %w", err)
	}
	r := resources{js: j}
	r.stream, err = j.Stream(ctx, cfg.Stream)
	if errors.Is(err, js.ErrStreamNotFound) {
		r.stream, err = j.CreateStream(ctx, js.StreamConfig{
			Name:     cfg.Stream,
			Subjects: []string{cfg.Subject + ".>"},
			Storage:  js.FileStorage,
			Replicas: cfg.Replicas,
			// Appends of several records are atomic batches.
			AllowAtomicPublish: true,
			// Purge and delete for Prune and Quarantine; no rollups.
			DenyPurge:  false,
			Duplicates: 2 * time.Minute,
		})
	}
	if err != nil {
		return r, fmt.Errorf("jetstream: stream %s: %w", cfg.Stream, err)
	}
	if info := r.stream.CachedInfo(); !info.Config.AllowAtomicPublish {
		return r, fmt.Errorf("jetstream: stream %s does not allow atomic batch publishing (allow_atomic), which appends of several records need", cfg.Stream)
	}
	r.snapshots, err = j.ObjectStore(ctx, cfg.Snapshots)
	if errors.Is(err, js.ErrBucketNotFound) {
		r.snapshots, err = j.CreateObjectStore(ctx, js.ObjectStoreConfig{Bucket: cfg.Snapshots, Storage: js.FileStorage, Replicas: cfg.Replicas})
	}
	if err != nil {
		return r, fmt.Errorf("jetstream: object store %s: %w", cfg.Snapshots, err)
	}
	r.leases, err = j.KeyValue(ctx, cfg.Leases)
	if errors.Is(err, js.ErrBucketNotFound) {
		r.leases, err = j.CreateKeyValue(ctx, js.KeyValueConfig{
			Bucket: cfg.Leases, TTL: cfg.TTL, Storage: js.FileStorage, Replicas: cfg.Replicas,
			// An expired lease leaves a marker that watchers see.
			LimitMarkerTTL: max(cfg.TTL, time.Second),
		})
	}
	if err != nil {
		return r, fmt.Errorf("jetstream: key-value bucket %s: %w", cfg.Leases, err)
	}
	r.index, err = j.KeyValue(ctx, cfg.Agents)
	if errors.Is(err, js.ErrBucketNotFound) {
		r.index, err = j.CreateKeyValue(ctx, js.KeyValueConfig{Bucket: cfg.Agents, Storage: js.FileStorage, Replicas: cfg.Replicas})
	}
	if err != nil {
		return r, fmt.Errorf("jetstream: key-value bucket %s: %w", cfg.Agents, err)
	}
	return r, nil
}

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.cfg.Timeout)
}

// message is a journal message, parsed.
type message struct {
	kind     byte   // 'r' record (or group of records), 'e' epoch
	seq      uint64 // of a record, the first's; of an epoch, the journal's last seq then
	count    uint64 // of a record: how many it holds (1, or a group's)
	replaces uint64 // of a group: the stream sequence of the group it replaces, or 0
	epoch    uint64
	owner    string
	stream   uint64 // stream sequence
}

// lastSeq is the sequence number of the last record a record message holds.
func (m message) lastSeq() uint64 { return m.seq + m.count - 1 }

// parseMessage reads the headers of a message on an agent's journal
// subject: a record (Moora-Seq) or an owner-epoch record (Moora-Epoch,
// Moora-Owner, Moora-Last). Anything else is an error saying what is wrong.
func parseMessage(h nats.Header) (message, error) {
	num := func(name string) (uint64, error) {
		vs := h.Values(name)
		if len(vs) != 1 {
			return 0, fmt.Errorf("%d %s headers, want 1", len(vs), name)
		}
		v := vs[0]
		if v == "" || len(v) > 20 || strings.TrimLeft(v, "0123456789") != "" || (len(v) > 1 && v[0] == '0') {
			return 0, fmt.Errorf("header %s is %q, not a decimal number", name, v)
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("header %s is %q: %w", name, v, err)
		}
		return n, nil
	}
	_, isRecord := h[hdrSeq]
	_, isEpoch := h[hdrEpoch]
	switch {
	case isRecord && isEpoch:
		return message{}, fmt.Errorf("both %s and %s headers", hdrSeq, hdrEpoch)
	case isRecord:
		seq, err := num(hdrSeq)
		if err == nil && seq == 0 {
			err = fmt.Errorf("header %s is 0", hdrSeq)
		}
		if err != nil {
			return message{}, err
		}
		m := message{kind: 'r', seq: seq, count: 1}
		if _, ok := h[hdrCount]; ok {
			if m.count, err = num(hdrCount); err != nil {
				return message{}, err
			}
			if m.count < 2 || m.count > maxGroupRecords {
				return message{}, fmt.Errorf("header %s is %d, want 2 to %d", hdrCount, m.count, maxGroupRecords)
			}
			if seq > ^uint64(0)-m.count {
				return message{}, fmt.Errorf("a group of %d records from %d overflows", m.count, seq)
			}
		}
		if _, ok := h[hdrReplaces]; ok {
			if m.replaces, err = num(hdrReplaces); err != nil {
				return message{}, err
			}
		}
		return m, nil
	case isEpoch:
		epoch, err := num(hdrEpoch)
		if err != nil {
			return message{}, err
		}
		last, err := num(hdrLast)
		if err != nil {
			return message{}, err
		}
		owners := h.Values(hdrOwner)
		if len(owners) != 1 || owners[0] == "" {
			return message{}, fmt.Errorf("an epoch record without one %s header", hdrOwner)
		}
		return message{kind: 'e', seq: last, epoch: epoch, owner: owners[0]}, nil
	}
	return message{}, fmt.Errorf("neither a %s nor a %s header", hdrSeq, hdrEpoch)
}

func (s *Store) corrupt(streamSeq uint64, err error) error {
	return &journal.CorruptError{Err: fmt.Errorf("stream %s, message %d on %s: %w", s.cfg.Stream, streamSeq, s.subj, err)}
}

// loadLast reads where the journal ends: the last message on the subject.
func (s *Store) loadLast(ctx context.Context) error {
	raw, err := s.str.GetLastMsgForSubject(ctx, s.subj)
	if errors.Is(err, js.ErrMsgNotFound) {
		s.last, s.lastSeq = 0, 0
		return nil
	}
	if err != nil {
		return fmt.Errorf("jetstream: reading the end of %s: %w", s.subj, err)
	}
	m, err := parseMessage(raw.Header)
	if err != nil {
		return s.corrupt(raw.Sequence, err)
	}
	s.last, s.lastSeq = raw.Sequence, m.seq
	if m.kind == 'r' {
		s.lastSeq = m.lastSeq()
		if m.replaces != 0 {
			if err := s.finishReplace(ctx, m.replaces, raw.Sequence); err != nil {
				return err
			}
		}
	}
	return nil
}

// finishReplace deletes the group at stream sequence replaced, which the
// group at by replaces, if it is still there: a Quarantine stopped before
// deleting it. Only a message on the agent's own subject, before by.
func (s *Store) finishReplace(ctx context.Context, replaced, by uint64) error {
	if replaced >= by {
		return s.corrupt(by, fmt.Errorf("it replaces message %d, which is not before it", replaced))
	}
	msg, err := s.str.GetMsg(ctx, replaced)
	switch {
	case errors.Is(err, js.ErrMsgNotFound):
		return nil // deleted, as it should be
	case err != nil:
		return fmt.Errorf("jetstream: agent %s: reading group %d, which %d replaces: %w", s.agent, replaced, by, err)
	case msg.Subject != s.subj:
		return s.corrupt(by, fmt.Errorf("it replaces message %d, which is on %s", replaced, msg.Subject))
	}
	if err := s.str.DeleteMsg(ctx, replaced); err != nil {
		return fmt.Errorf("jetstream: agent %s: deleting group %d, which %d replaces: %w", s.agent, replaced, by, err)
	}
	return nil
}

// Fenced returns a channel that is closed once the store refuses writes:
// another owner wrote to the journal, or the lease was not renewed in time.
func (s *Store) Fenced() <-chan struct{} { return s.fenced }

// Err returns why the store is fenced, or nil.
func (s *Store) Err() error {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	return s.fenceErr
}

// fence makes the store refuse every later write, with err, and returns the
// error it refuses them with (the first fence's).
func (s *Store) fence(err error) error {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if s.fenceErr == nil {
		s.fenceErr = fmt.Errorf("jetstream: agent %s: %w (%w): %w", s.agent, ErrFenced, journal.ErrInUse, err)
		close(s.fenced)
	}
	return s.fenceErr
}

// writable says why the store may not write now, or nil; s.mu held.
func (s *Store) writableLocked() error {
	if s.closed {
		return fmt.Errorf("jetstream: agent %s: the store is closed", s.agent)
	}
	if err := s.Err(); err != nil {
		return err
	}
	if s.lease != nil {
		if err := s.lease.check(); err != nil {
			return s.fence(err)
		}
	}
	return nil
}

// isWrongLast says whether err is JetStream's refusal of an expected last
// sequence: code 10071, or 10164 on a replicated stream.
func isWrongLast(err error) bool {
	var apiErr *js.APIError
	return errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == js.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == js.JSErrCodeStreamWrongLastSequenceConstant)
}

// Append publishes the records: one with the expected last subject
// sequence, several as one atomic batch whose first message carries it.
func (s *Store) Append(records []journal.Record) error {
	if len(records) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writableLocked(); err != nil {
		return err
	}
	for i, r := range records {
		want := s.lastSeq + 1 + uint64(i)
		if (s.lastSeq != 0 || i > 0) && r.Seq != want {
			return fmt.Errorf("jetstream: append seq %d, expected %d", r.Seq, want)
		}
	}
	// Each call's message ids are its own, the same in every request it
	// sends: an append that failed may have been stored (its store then
	// fences), and must never be taken for another one's.
	s.appends++
	var msgs []*nats.Msg
	if data, ok := packGroup(records); ok && len(records) > 1 {
		// One message: stored whole or not at all.
		m := nats.NewMsg(s.subj)
		m.Data = data
		groupHeaders(m, records[0].Seq, len(records))
		m.Header.Set(js.MsgIDHeader, fmt.Sprintf("%s.%d-%d.%d.%s.%d", s.agent, records[0].Seq, len(records), s.last, s.nonce, s.appends))
		msgs = []*nats.Msg{m}
	} else {
		msgs = s.batchMessages(records)
	}
	msgs[0].Header.Set(js.ExpectedLastSubjSeqHeader, strconv.FormatUint(s.last, 10))
	seq, err := s.publishAppend(msgs)
	if err != nil {
		if isWrongLast(err) {
			return s.fence(fmt.Errorf("appending %d..%d: the journal has moved on: %w", records[0].Seq, records[len(records)-1].Seq, err))
		}
		return fmt.Errorf("jetstream: agent %s: appending %d..%d: %w", s.agent, records[0].Seq, records[len(records)-1].Seq, err)
	}
	s.last, s.lastSeq = seq, records[len(records)-1].Seq
	return nil
}

// publishAppend publishes the messages of an append: in a combined batch
// with other agents' appends, if the Config says so and the append is one
// message, or else alone.
func (s *Store) publishAppend(msgs []*nats.Msg) (uint64, error) {
	if !s.cfg.CombineAppends || len(msgs) != 1 {
		return s.publish(msgs, false)
	}
	seq, err := s.shared.combiner(s.cfg.Stream, s.cfg.Timeout).send(s.nc, msgs[0])
	switch {
	case errors.Is(err, errUnknown):
		if seq, ok := s.storedAlready(msgs[0]); ok {
			return seq, nil
		}
		// The batch may yet be stored, before the append sent alone.
		return s.publish(msgs, true)
	case errors.Is(err, errAlone):
		return s.publish(msgs, false)
	}
	return seq, err
}

// batchMessages returns the messages of records, one each, for one record
// or an atomic batch.
func (s *Store) batchMessages(records []journal.Record) []*nats.Msg {
	msgs := make([]*nats.Msg, len(records))
	for i, r := range records {
		m := nats.NewMsg(s.subj)
		m.Data = r.Data
		m.Header.Set(hdrSeq, strconv.FormatUint(r.Seq, 10))
		// The same id when an append of unknown outcome is sent again:
		// the server then answers a duplicate instead of storing it twice.
		m.Header.Set(js.MsgIDHeader, fmt.Sprintf("%s.%d.%d.%s.%d", s.agent, r.Seq, s.last, s.nonce, s.appends))
		msgs[i] = m
	}
	return msgs
}

// publish sends msgs, one message or an atomic batch, and returns the stream
// sequence of the last. A request that times out, whose outcome is unknown,
// is sent again with the same message ids until the server answers: a
// duplicate answer means the first one was stored; so does a refusal for
// the expected last sequence when the subject ends with the last of msgs
// (a single server checks that before it looks for a duplicate id). Once
// an outcome was unknown (unknown: already, a combined batch's), an answer
// that says nothing of it fences the store: it cannot tell the Machine the
// records are not in the journal.
func (s *Store) publish(msgs []*nats.Msg, unknown bool) (uint64, error) {
	var lastErr error
	last := msgs[len(msgs)-1].Header.Get(js.MsgIDHeader)
	deadline := time.Now().Add(3 * s.cfg.Timeout)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		if attempt > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		seq, err := s.publishOnce(msgs)
		if err == nil {
			return seq, nil
		}
		var apiErr *js.APIError
		isAPI := errors.As(err, &apiErr)
		switch {
		case isAPI && apiErr.ErrorCode == 10158:
			// The same message id is still being stored: ask again.
			unknown = true
		case isAPI && (apiErr.ErrorCode == 10176 || apiErr.ErrorCode == 10210):
			// The batch was refused whole (the server had too many in
			// flight, which another process's batches can make it):
			// nothing of it was stored; send it again.
		case isWrongLast(err) && (unknown || apiErr.ErrorCode == js.JSErrCodeStreamWrongLastSequenceConstant):
			// Ours, if an earlier request stored msgs; a replicated
			// stream answers 10164 for a conflict, and also while an
			// earlier write to the subject is still being applied: the
			// journal has moved on only if its end is not where this
			// store left it. One read of the subject's end says which.
			end, id, err2 := s.subjectEnd()
			switch {
			case err2 != nil:
				return 0, err
			case unknown && id == last:
				return end, nil
			case end != s.last || apiErr.ErrorCode != js.JSErrCodeStreamWrongLastSequenceConstant:
				return 0, err
			}
		case isAPI && apiErr.ErrorCode == 10201 && unknown:
			// An earlier attempt's batch was stored: the journal ends
			// with its last record.
			seq, err := s.storedBatch(msgs)
			if err != nil {
				return 0, s.fence(err)
			}
			return seq, nil
		case errors.Is(err, errNotSent) || errors.Is(err, js.ErrNoStreamResponse):
			// Not sent, or no stream took it: this request stored
			// nothing; an earlier one may have, so ask again then.
			if !unknown {
				return 0, err
			}
		case errors.Is(err, nats.ErrNoResponders):
			// Nobody took the request: nothing was stored by it.
		case errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded):
			unknown = true
		case unknown:
			if seq, ok := s.storedAlready(msgs[len(msgs)-1]); ok {
				return seq, nil
			}
			return 0, s.fence(fmt.Errorf("the outcome of an append is unknown: %w (before: %w)", err, lastErr))
		default:
			return 0, err
		}
		lastErr = err
		if s.lease != nil {
			if err := s.lease.check(); err != nil {
				lastErr = fmt.Errorf("%w; and %w", lastErr, err)
				break
			}
		}
	}
	// The outcome stays unknown: the store cannot tell the Machine the
	// records are not in the journal, so it stops writing.
	return 0, s.fence(fmt.Errorf("the outcome of an append is unknown: %w", lastErr))
}

// subjectEnd reads the last message on the agent's subject: its stream
// sequence (0: none) and message id.
func (s *Store) subjectEnd() (seq uint64, id string, err error) {
	ctx, cancel := s.ctx()
	defer cancel()
	raw, err := s.str.GetLastMsgForSubject(ctx, s.subj)
	if errors.Is(err, js.ErrMsgNotFound) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", err
	}
	return raw.Sequence, raw.Header.Get(js.MsgIDHeader), nil
}

// storedBatch returns the stream sequence of the last of msgs, which the
// server says it stored: it must be the last message on the subject.
func (s *Store) storedBatch(msgs []*nats.Msg) (uint64, error) {
	seq, got, err := s.subjectEnd()
	if err != nil {
		return 0, fmt.Errorf("reading the end of %s after a batch stored twice: %w", s.subj, err)
	}
	if want := msgs[len(msgs)-1].Header.Get(js.MsgIDHeader); got != want {
		return 0, fmt.Errorf("the server says the batch was stored, but %s ends with message id %q, not %q", s.subj, got, want)
	}
	return seq, nil
}

// maxBatchesInFlight bounds the atomic batches one connection has in
// flight at once: below the server's default bound a stream (50), past
// which it refuses a batch's first message (JSAtomicPublishTooManyInflight)
// where a publish without a reply cannot hear it, and then the batch's
// commit as incomplete (10176). Many agents' stores share a connection and
// a stream: their batches take turns here.
const maxBatchesInFlight = 32

// shared is what the stores of this process that use one connection
// share: the turns of its atomic batches, and its combiners, one a stream.
type shared struct {
	slots     chan struct{}
	combiners sync.Map // stream → *combiner
}

// conns holds the shared state of each connection, by a weak pointer to
// it: the entry goes once the connection is garbage, so that a process
// that opens and drops connections keeps neither them nor their entries.
var conns sync.Map // weak.Pointer[nats.Conn] → *shared

func sharedOf(nc *nats.Conn) *shared {
	k := weak.Make(nc)
	if v, ok := conns.Load(k); ok {
		return v.(*shared)
	}
	v, loaded := conns.LoadOrStore(k, &shared{slots: make(chan struct{}, maxBatchesInFlight)})
	if !loaded {
		runtime.AddCleanup(nc, func(k weak.Pointer[nats.Conn]) { conns.Delete(k) }, k)
	}
	return v.(*shared)
}

// combiner returns the combiner of stream on sh's connection.
func (sh *shared) combiner(stream string, timeout time.Duration) *combiner {
	if c, ok := sh.combiners.Load(stream); ok {
		return c.(*combiner)
	}
	c, _ := sh.combiners.LoadOrStore(stream, &combiner{timeout: timeout, slots: sh.slots})
	return c.(*combiner)
}

func (s *Store) publishOnce(msgs []*nats.Msg) (uint64, error) {
	if len(msgs) == 1 {
		return publishMsg(s.nc, msgs[0], s.cfg.Timeout)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	slots := s.shared.slots
	select {
	case slots <- struct{}{}:
		defer func() { <-slots }()
	case <-ctx.Done():
		return 0, fmt.Errorf("%w: waiting for a turn: %w", errNotSent, ctx.Err())
	}
	id := nuid.Next()
	for i, m := range msgs {
		m.Header.Set("Nats-Batch-Id", id)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		if i < len(msgs)-1 {
			if err := s.nc.PublishMsg(m); err != nil {
				// The commit is not sent: the server never stores the batch.
				return 0, fmt.Errorf("%w: %w", errNotSent, err)
			}
		}
	}
	last := msgs[len(msgs)-1]
	last.Header.Set("Nats-Batch-Commit", "1")
	resp, err := s.nc.RequestMsgWithContext(ctx, last)
	if err != nil {
		return 0, err
	}
	var ack struct {
		Error    *js.APIError `json:"error"`
		Sequence uint64       `json:"seq"`
		Count    int          `json:"count"`
	}
	if err := json.Unmarshal(resp.Data, &ack); err != nil {
		return 0, fmt.Errorf("reading the batch's acknowledgement %q: %w", resp.Data, err)
	}
	if ack.Error != nil {
		return 0, ack.Error
	}
	if ack.Count != len(msgs) {
		return 0, fmt.Errorf("the batch of %d messages was acknowledged as %d", len(msgs), ack.Count)
	}
	return ack.Sequence, nil
}

// scan calls fn with every message on the agent's subject, in order, up to
// the last one when the scan starts, from stream sequence start on.
func (s *Store) scan(ctx context.Context, from uint64, fn func(m message, data []byte) error) error {
	raw, err := s.str.GetLastMsgForSubject(ctx, s.subj)
	if errors.Is(err, js.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("jetstream: reading the end of %s: %w", s.subj, err)
	}
	end := raw.Sequence
	// Message by message from the stream's leader (STREAM.MSG.GET, next
	// by subject): a consumer, or a direct get, may be served by a
	// replica that lags, and a scan must see every acknowledged record.
	start, err := s.startFor(ctx, from, end)
	if err != nil {
		return err
	}
	for seq := start; seq <= end; {
		msg, err := s.str.GetMsg(ctx, seq, js.WithGetMsgSubject(s.subj))
		if errors.Is(err, js.ErrMsgNotFound) {
			return nil // deleted since the end was read
		}
		if err != nil {
			return fmt.Errorf("jetstream: reading %s from stream sequence %d: %w", s.subj, seq, err)
		}
		if msg.Sequence < seq {
			return fmt.Errorf("jetstream: reading %s from stream sequence %d: the server answered %d", s.subj, seq, msg.Sequence)
		}
		m, err := parseMessage(msg.Header)
		if err != nil {
			return s.corrupt(msg.Sequence, err)
		}
		m.stream = msg.Sequence
		if err := fn(m, msg.Data); err != nil {
			return err
		}
		seq = msg.Sequence + 1
	}
	return nil
}

// startFor returns the stream sequence from which a scan reaches every
// record with Seq >= from, found by bisection on the subject: the records'
// sequence numbers grow with their stream sequence, and an epoch record
// follows the records up to the Last it names. A message it cannot parse
// makes it start at the beginning, where the scan reports it.
func (s *Store) startFor(ctx context.Context, from, end uint64) (uint64, error) {
	lo, hi := uint64(1), end
	if from <= 1 {
		return lo, nil
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		msg, err := s.str.GetMsg(ctx, mid, js.WithGetMsgSubject(s.subj))
		if errors.Is(err, js.ErrMsgNotFound) {
			hi = mid
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("jetstream: reading %s from stream sequence %d: %w", s.subj, mid, err)
		}
		m, err := parseMessage(msg.Header)
		if err != nil {
			return 1, nil
		}
		if m.kind == 'r' && m.lastSeq() >= from || m.kind == 'e' && m.seq >= from { // records reaching from; or an epoch record after them
			hi = mid
		} else {
			lo = msg.Sequence + 1
		}
	}
	return lo, nil
}

// Scan calls fn with the records from seq from on; owner-epoch records are
// not journal records and are passed over.
//
// Records below the floor (see Prune) are passed over too.
func (s *Store) Scan(from uint64, fn func(journal.Record) error) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	floor, err := s.loadFloor(ctx)
	if err != nil {
		return err
	}
	from = max(from, floor)
	err = s.scan(ctx, from, func(m message, data []byte) error {
		if m.kind != 'r' || m.lastSeq() < from {
			return nil
		}
		if m.count == 1 {
			return fn(journal.Record{Seq: m.seq, Data: data})
		}
		if err := unpackGroup(data, m.count, func(i uint64, rec []byte) error {
			if m.seq+i < from {
				return nil
			}
			return fn(journal.Record{Seq: m.seq + i, Data: rec})
		}); err != nil {
			if ge := (*groupError)(nil); errors.As(err, &ge) {
				return s.corrupt(m.stream, err)
			}
			return err
		}
		return nil
	})
	if errors.Is(err, journal.ErrStop) {
		return nil
	}
	return err
}

// loadFloor reads the floor: the sequence number below which a Prune that
// cut a group commit in two deleted the records (0: none).
func (s *Store) loadFloor(ctx context.Context) (uint64, error) {
	raw, err := s.str.GetLastMsgForSubject(ctx, s.floor)
	if errors.Is(err, js.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("jetstream: reading the floor of %s: %w", s.agent, err)
	}
	m, err := parseMessage(raw.Header)
	if err != nil || m.kind != 'r' || m.count != 1 {
		return 0, &journal.CorruptError{Err: fmt.Errorf("stream %s, message %d on %s: not a floor (%v)", s.cfg.Stream, raw.Sequence, s.floor, err)}
	}
	return m.seq, nil
}

func (s *Store) snapshotName(seq uint64) string { return fmt.Sprintf("%s/%020d", s.agent, seq) }

// snapshotSeqs lists the agent's snapshots, newest first.
func (s *Store) snapshotSeqs(ctx context.Context) ([]uint64, error) {
	infos, err := s.obs.List(ctx)
	if errors.Is(err, js.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: listing the snapshots of %s: %w", s.agent, err)
	}
	var seqs []uint64
	prefix := s.agent + "/"
	for _, info := range infos {
		rest, ok := strings.CutPrefix(info.Name, prefix)
		if !ok {
			continue
		}
		seq, err := strconv.ParseUint(rest, 10, 64)
		if err != nil || len(rest) != 20 {
			return nil, &journal.CorruptError{Err: fmt.Errorf("object store %s holds %q, which is not a snapshot name", s.cfg.Snapshots, info.Name)}
		}
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	slices.Reverse(seqs)
	return seqs, nil
}

func (s *Store) PutSnapshot(r journal.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writableLocked(); err != nil {
		return err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if _, err := s.obs.PutBytes(ctx, s.snapshotName(r.Seq), r.Data); err != nil {
		return fmt.Errorf("jetstream: agent %s: storing the snapshot at %d: %w", s.agent, r.Seq, err)
	}
	return nil
}

// Snapshots calls fn with the snapshots, newest first. A snapshot whose
// object cannot be read whole (its chunks fail their digest) is passed to fn
// with no bytes, which the Machine reports as damaged.
func (s *Store) Snapshots(fn func(journal.Record) error) error {
	ctx, cancel := s.ctx()
	defer cancel()
	seqs, err := s.snapshotSeqs(ctx)
	if err != nil {
		return err
	}
	for _, seq := range seqs {
		ctx, cancel := s.ctx()
		data, err := s.obs.GetBytes(ctx, s.snapshotName(seq))
		cancel()
		switch {
		case errors.Is(err, js.ErrObjectNotFound):
			continue // pruned meanwhile
		case errors.Is(err, js.ErrDigestMismatch):
			data = nil
		case err != nil:
			return fmt.Errorf("jetstream: agent %s: reading the snapshot at %d: %w", s.agent, seq, err)
		}
		if err := fn(journal.Record{Seq: seq, Data: data}); err != nil {
			if errors.Is(err, journal.ErrStop) {
				return nil
			}
			return err
		}
	}
	return nil
}

// Prune deletes as journal.Store says: snapshot objects, and the journal's
// messages (records and epoch records) before the first record it keeps,
// with one purge.
func (s *Store) Prune(snapshotsBefore, keepSnapshot, inputsBefore uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writableLocked(); err != nil {
		return err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	seqs, err := s.snapshotSeqs(ctx)
	if err != nil {
		return err
	}
	for _, seq := range seqs {
		if seq < snapshotsBefore && seq != keepSnapshot {
			if err := s.obs.Delete(ctx, s.snapshotName(seq)); err != nil && !errors.Is(err, js.ErrObjectNotFound) {
				return fmt.Errorf("jetstream: agent %s: deleting the snapshot at %d: %w", s.agent, seq, err)
			}
		}
	}
	if inputsBefore == 0 {
		return nil
	}
	var keep uint64 // stream sequence of the first message kept
	var cut bool    // it is a group that holds records before inputsBefore
	err = s.scan(ctx, inputsBefore, func(m message, _ []byte) error {
		if m.kind == 'r' && m.lastSeq() >= inputsBefore {
			keep, cut = m.stream, m.seq < inputsBefore
			return journal.ErrStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, journal.ErrStop) {
		return err
	}
	if cut {
		// Never lowered: records below an earlier, higher floor are gone.
		floor, err := s.loadFloor(ctx)
		if err != nil {
			return err
		}
		inputsBefore = max(inputsBefore, floor)
		// The records before inputsBefore in the group kept are below the
		// floor from now on, before anything is deleted.
		m := nats.NewMsg(s.floor)
		m.Header.Set(hdrSeq, strconv.FormatUint(inputsBefore, 10))
		ack, err := s.js.PublishMsg(ctx, m)
		if err != nil {
			return fmt.Errorf("jetstream: agent %s: pruning the journal before %d: its floor: %w", s.agent, inputsBefore, err)
		}
		if err := s.str.Purge(ctx, js.WithPurgeSubject(s.floor), js.WithPurgeSequence(ack.Sequence)); err != nil {
			return fmt.Errorf("jetstream: agent %s: pruning the journal before %d: its earlier floors: %w", s.agent, inputsBefore, err)
		}
	}
	opts := []js.StreamPurgeOpt{js.WithPurgeSubject(s.subj)}
	if keep != 0 {
		opts = append(opts, js.WithPurgeSequence(keep))
	}
	if err := s.str.Purge(ctx, opts...); err != nil {
		return fmt.Errorf("jetstream: agent %s: pruning the journal before %d: %w", s.agent, inputsBefore, err)
	}
	if keep == 0 {
		// Pruned empty: it starts again wherever the next append says,
		// below the floor perhaps. The floor goes after the records, so
		// that it still hides them should their purge fail.
		s.last, s.lastSeq = 0, 0
		if err := s.str.Purge(ctx, js.WithPurgeSubject(s.floor)); err != nil {
			return fmt.Errorf("jetstream: agent %s: pruning the journal before %d: its floor: %w", s.agent, inputsBefore, err)
		}
	}
	return nil
}

// Quarantine copies the record at seq to the agent's quarantine subject,
// with its stream sequence, and deletes it from the journal.
func (s *Store) Quarantine(seq uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writableLocked(); err != nil {
		return err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	var found *nats.Msg
	var at uint64
	var group message // the group that holds it, if one does
	var rest []byte   // the group's other records, as a group's data
	err := s.scan(ctx, seq, func(m message, data []byte) error {
		if m.kind != 'r' || seq < m.seq || seq > m.lastSeq() {
			return nil
		}
		rec := data
		if m.count > 1 {
			if seq != m.lastSeq() || seq != s.lastSeq {
				return fmt.Errorf("jetstream: agent %s: quarantine: record %d is inside a group commit (%d..%d) that does not end the journal (at %d): only the journal's last record can be taken out of a group", s.agent, seq, m.seq, m.lastSeq(), s.lastSeq)
			}
			var others []journal.Record
			err := unpackGroup(data, m.count, func(i uint64, r []byte) error {
				if m.seq+i == seq {
					rec = r
				} else {
					others = append(others, journal.Record{Seq: m.seq + i, Data: r})
				}
				return nil
			})
			if err != nil {
				return s.corrupt(m.stream, err)
			}
			group = m
			if len(others) > 1 {
				rest, _ = packGroup(others)
			} else {
				rest = others[0].Data
			}
		}
		found = nats.NewMsg(s.quar)
		found.Data = append([]byte(nil), rec...)
		found.Header.Set(hdrSeq, strconv.FormatUint(seq, 10))
		at = m.stream
		found.Header.Set(hdrFrom, strconv.FormatUint(at, 10))
		return journal.ErrStop
	})
	if err != nil && !errors.Is(err, journal.ErrStop) {
		return err
	}
	if found == nil {
		return fmt.Errorf("jetstream: agent %s: quarantine: no record %d", s.agent, seq)
	}
	if group.count > 1 {
		return s.quarantineFromGroup(ctx, found, group, rest)
	}
	if _, err := s.js.PublishMsg(ctx, found); err != nil {
		return fmt.Errorf("jetstream: agent %s: quarantine of record %d: %w", s.agent, seq, err)
	}
	if err := s.str.DeleteMsg(ctx, at); err != nil {
		return fmt.Errorf("jetstream: agent %s: quarantine of record %d: %w", s.agent, seq, err)
	}
	lastSeq := s.lastSeq
	if err := s.loadLast(ctx); err != nil {
		return err
	}
	// The journal now ends with the record before the quarantined one,
	// even if an epoch record written after it is the last message.
	if seq == lastSeq {
		s.lastSeq = seq - 1
	}
	return nil
}

// quarantineFromGroup takes the last record of group, the last of the
// journal, out of it: the record is copied to quarantine (found), the
// group's other records are appended as a group that replaces it (rest:
// one record's data, or a group's), and the group is deleted. A store that
// stops between the last two leaves both, which the next loadLast (an
// Open, a claim) finishes by deleting the replaced group.
func (s *Store) quarantineFromGroup(ctx context.Context, found *nats.Msg, group message, rest []byte) error {
	seq := group.lastSeq()
	if _, err := s.js.PublishMsg(ctx, found); err != nil {
		return fmt.Errorf("jetstream: agent %s: quarantine of record %d: %w", s.agent, seq, err)
	}
	m := nats.NewMsg(s.subj)
	m.Data = rest
	if group.count-1 > 1 {
		groupHeaders(m, group.seq, int(group.count-1))
	} else {
		m.Header.Set(hdrSeq, strconv.FormatUint(group.seq, 10))
	}
	m.Header.Set(hdrReplaces, strconv.FormatUint(group.stream, 10))
	m.Header.Set(js.ExpectedLastSubjSeqHeader, strconv.FormatUint(s.last, 10))
	m.Header.Set(js.MsgIDHeader, fmt.Sprintf("%s.replaces.%d.%s", s.agent, group.stream, s.nonce))
	ack, err := s.js.PublishMsg(ctx, m)
	if err != nil {
		if isWrongLast(err) {
			return s.fence(fmt.Errorf("quarantine of record %d: the journal has moved on: %w", seq, err))
		}
		return fmt.Errorf("jetstream: agent %s: quarantine of record %d: the records before it: %w", s.agent, seq, err)
	}
	s.last, s.lastSeq = ack.Sequence, seq-1
	if err := s.str.DeleteMsg(ctx, group.stream); err != nil {
		if _, gerr := s.str.GetMsg(ctx, group.stream); errors.Is(gerr, js.ErrMsgNotFound) {
			return nil // a reader's Open finished it meanwhile (finishReplace)
		}
		return fmt.Errorf("jetstream: agent %s: quarantine of record %d: deleting its group (the next Open finishes it): %w", s.agent, seq, err)
	}
	return nil
}

// Close stops renewing the lease, if the store holds one, and releases it
// unless the store was fenced. It does not close the connection.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if s.lease != nil {
		return s.lease.release(s.Err() == nil)
	}
	return nil
}

var _ journal.Store = (*Store)(nil)
