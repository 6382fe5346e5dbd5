package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/moora-go/moora/automata/journal"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

// NotOwnerError reports that an agent is owned by another process: Claim
// could not take its lease, or a Host was asked to dispatch to an agent it
// does not run.
type NotOwnerError struct {
	Agent string
	Owner string // the lease's holder; "" when no one holds it now
}

func (e *NotOwnerError) Error() string {
	if e.Owner == "" {
		return fmt.Sprintf("jetstream: agent %s is not run here, and no one owns it now (it is being claimed)", e.Agent)
	}
	return fmt.Sprintf("jetstream: agent %s is owned by %s, not here", e.Agent, e.Owner)
}

// lease is an owner's hold on an agent: a key of the leases bucket, which
// expires TTL after its last write. It is renewed every TTL/4; the owner may
// write only while less than TTL*3/4 has passed, on the monotonic clock,
// since the start of the last renewal that succeeded, which is before the
// server's write and so before the key can expire.
type lease struct {
	nc    *nats.Conn // for reads from the leader
	kv    js.KeyValue
	key   string
	owner string
	ttl   time.Duration
	lost  func(error) // called once, when the lease is lost

	mu       sync.Mutex // guards rev, renewed, err, notified
	rev      uint64     // the key's revision, as this owner last wrote it
	renewed  time.Time  // start of the last renewal that succeeded
	err      error      // why the lease is lost; then it stays lost
	notified bool       // lost has been called

	stop chan struct{}
	done chan struct{}
}

// validFor is how long after a renewal's start the owner may still write.
func (l *lease) validFor() time.Duration { return l.ttl * 3 / 4 }

// check returns nil while the lease is held and fresh.
func (l *lease) check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		if age := time.Since(l.renewed); age >= l.validFor() {
			l.err = fmt.Errorf("the lease was last renewed %v ago, past the %v it may be used for (TTL %v)", age.Round(time.Millisecond), l.validFor(), l.ttl)
		}
	}
	return l.err
}

func (l *lease) lose(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
	err = l.err
	first := !l.notified
	l.notified = true
	l.mu.Unlock()
	if first && l.lost != nil {
		l.lost(err)
	}
}

// run renews the lease until release, or until it is lost: the key was
// written by someone else, or no renewal succeeded in time.
func (l *lease) run() {
	defer close(l.done)
	tick := time.NewTicker(l.ttl / 4)
	defer tick.Stop()
	var unknown time.Time // start of the first renewal since the last success
	for {
		l.mu.Lock()
		deadline := l.renewed.Add(l.validFor())
		l.mu.Unlock()
		expire := time.NewTimer(time.Until(deadline))
		select {
		case <-l.stop:
			expire.Stop()
			return
		case <-expire.C:
			if err := l.check(); err != nil {
				l.lose(err)
				return
			}
			continue
		case <-tick.C:
		}
		expire.Stop()
		if err := l.check(); err != nil {
			l.lose(err)
			return
		}
		start := time.Now()
		if unknown.IsZero() {
			unknown = start
		}
		l.mu.Lock()
		rev := l.rev
		l.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), l.ttl/4)
		next, err := l.kv.Update(ctx, l.key, []byte(l.owner), rev)
		if errors.Is(err, js.ErrKeyRevisionMismatch) || isWrongLast(err) {
			next, start, err = l.moved(ctx, rev, unknown, err)
		}
		cancel()
		switch {
		case errors.Is(err, errTakenOver):
			l.lose(err)
			return
		case err != nil:
			continue // try again at the next tick, while time is left
		}
		unknown = time.Time{}
		l.mu.Lock()
		l.rev, l.renewed = next, start
		l.mu.Unlock()
	}
}

var errTakenOver = errors.New("the lease was taken over")

// moved looks, on the leader, at a key whose renewal from rev was refused.
// The key is still this owner's if it holds this owner's value: under a
// newer revision when a renewal whose answer did not come in time was
// applied after all, which then counts from since, the start of the first
// renewal of unknown outcome; under rev itself when a replicated stream
// refused (10164) while such a renewal was still being applied, which the
// next renewal tries again. Otherwise the lease was taken over.
func (l *lease) moved(ctx context.Context, rev uint64, since time.Time, refused error) (uint64, time.Time, error) {
	e, err := kvLast(ctx, l.nc, l.kv.Bucket(), l.key)
	switch {
	case errors.Is(err, js.ErrKeyNotFound):
		return 0, since, fmt.Errorf("%w: the key is gone: %w", errTakenOver, refused)
	case err != nil:
		return 0, since, fmt.Errorf("reading the lease after a refused renewal: %w", err)
	case e.deleted || string(e.value) != l.owner:
		return 0, since, fmt.Errorf("%w: %w", errTakenOver, refused)
	case e.rev > rev:
		return e.rev, since, nil
	}
	return 0, since, refused
}

// release stops renewing, and with del deletes the key if it still holds
// this owner's revision, so that another owner may claim the agent at once.
func (l *lease) release(del bool) error {
	select {
	case <-l.stop:
		return nil
	default:
		close(l.stop)
	}
	<-l.done
	if !del || l.check() != nil {
		return nil
	}
	l.mu.Lock()
	rev := l.rev
	l.err = errors.New("released")
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), l.ttl/2)
	defer cancel()
	if err := l.kv.Delete(ctx, l.key, js.LastRevision(rev)); err != nil && !errors.Is(err, js.ErrKeyRevisionMismatch) && !isWrongLast(err) {
		return fmt.Errorf("jetstream: releasing the lease of %s: %w", l.key, err)
	}
	return nil
}

// Claim makes owner the owner of agent: it takes the agent's lease, which
// fails with a *NotOwnerError naming the holder while another owner's lease
// lives, and then fences the journal by appending an owner-epoch record
// with the expected last subject sequence. From then on an earlier owner's
// next append fails (it is fenced), whatever it believes about its lease.
//
// The returned store renews the lease in the background while it is open;
// it fences itself (Fenced, Err) if the lease is lost or cannot be renewed
// in time. Close releases the lease. Open the journal.Machine on it after
// Claim: recovery then reads every record written before the fence.
func Claim(ctx context.Context, nc *nats.Conn, cfg Config, agent, owner string) (*Store, error) {
	return claim(ctx, nc, cfg, agent, owner, false)
}

// Takeover is Claim for a caller that knows the lease's holder is dead: it
// deletes the lease before taking it, instead of waiting for it to expire.
// package embedded's OpenAgent does so on a server it runs in the process,
// whose files it holds the lock of: any other holder was an earlier process
// that died. A holder that is alive after all loses nothing acknowledged:
// the owner-epoch record fences it, and its next append fails.
func Takeover(ctx context.Context, nc *nats.Conn, cfg Config, agent, owner string) (*Store, error) {
	return claim(ctx, nc, cfg, agent, owner, true)
}

func claim(ctx context.Context, nc *nats.Conn, cfg Config, agent, owner string, takeover bool) (*Store, error) {
	if owner == "" {
		return nil, errors.New("jetstream: Claim needs an owner id")
	}
	s, err := newStore(ctx, nc, cfg, agent)
	if err != nil {
		return nil, err
	}
	kv, err := s.js.KeyValue(ctx, s.cfg.Leases)
	if err != nil {
		return nil, fmt.Errorf("jetstream: key-value bucket %s: %w", s.cfg.Leases, err)
	}
	if takeover {
		if err := kv.Delete(ctx, agent); err != nil && !errors.Is(err, js.ErrKeyNotFound) {
			return nil, fmt.Errorf("jetstream: taking over the lease of %s: %w", agent, err)
		}
	}
	l, err := takeLease(ctx, nc, kv, agent, owner, s.cfg.TTL, func(err error) { s.fence(fmt.Errorf("lost the lease: %w", err)) })
	if err != nil {
		return nil, err
	}
	s.lease = l
	if err := s.writeEpoch(ctx, l.rev, owner); err != nil {
		l.release(true)
		return nil, err
	}
	return s, nil
}

// takeLease creates the lease key of agent for owner, which fails with a
// *NotOwnerError naming the holder while another owner's lease lives, and
// renews it in the background until release; lost, if not nil, is called
// once if the lease is lost.
func takeLease(ctx context.Context, nc *nats.Conn, kv js.KeyValue, agent, owner string, ttl time.Duration, lost func(error)) (*lease, error) {
	start := time.Now()
	rev, err := kv.Create(ctx, agent, []byte(owner))
	if isWrongLast(err) {
		// A replicated bucket refuses a create that races another
		// process's with 10164, which the client does not read as
		// ErrKeyExists: the key exists.
		err = js.ErrKeyExists
	}
	var last kvEntry
	if errors.Is(err, js.ErrKeyExists) {
		// Create finds the marker of a released or expired lease with a
		// direct get, which a replica that has not applied the marker yet
		// may answer, just after a release on a cluster: the leader says.
		var lerr error
		last, lerr = kvLast(ctx, nc, kv.Bucket(), agent)
		if lerr == nil && last.deleted {
			rev, err = kv.Update(ctx, agent, []byte(owner), last.rev)
			if err != nil && (errors.Is(err, js.ErrKeyRevisionMismatch) || isWrongLast(err)) {
				last, _ = kvLast(ctx, nc, kv.Bucket(), agent) // taken meanwhile: by whom
				err = js.ErrKeyExists
			}
		}
	}
	if errors.Is(err, js.ErrKeyExists) {
		holder := ""
		if !last.deleted {
			holder = string(last.value)
		}
		return nil, &NotOwnerError{Agent: agent, Owner: holder}
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: taking the lease of %s: %w", agent, err)
	}
	l := &lease{nc: nc, kv: kv, key: agent, owner: owner, ttl: ttl, rev: rev, renewed: start, lost: lost,
		stop: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	return l, nil
}

// kvEntry is the last message on a key of a key-value bucket.
type kvEntry struct {
	rev     uint64
	value   []byte
	deleted bool // a delete or purge marker, or one the server left
}

// kvLast reads key of bucket from the leader of the bucket's stream
// (STREAM.MSG.GET); js.ErrKeyNotFound if the key has no message. The
// key-value store's own reads are direct gets, which any replica may
// answer, one that has not yet applied a write the leader acknowledged
// included: a released lease would look held, an agent just created
// absent.
func kvLast(ctx context.Context, nc *nats.Conn, bucket, key string) (kvEntry, error) {
	req, err := json.Marshal(struct {
		LastFor string `json:"last_by_subj"`
	}{"$KV." + bucket + "." + key})
	if err != nil {
		return kvEntry{}, err
	}
	msg, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET.KV_"+bucket, req)
	if err != nil {
		return kvEntry{}, err
	}
	var resp struct {
		Error   *js.APIError `json:"error"`
		Message *struct {
			Seq    uint64 `json:"seq"`
			Header []byte `json:"hdrs"`
			Data   []byte `json:"data"`
		} `json:"message"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return kvEntry{}, fmt.Errorf("the answer %q: %w", msg.Data, err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == js.JSErrCodeMessageNotFound:
		return kvEntry{}, js.ErrKeyNotFound
	case resp.Error != nil:
		return kvEntry{}, resp.Error
	case resp.Message == nil:
		return kvEntry{}, fmt.Errorf("the answer %q has no message", msg.Data)
	}
	e := kvEntry{rev: resp.Message.Seq, value: resp.Message.Data}
	if len(resp.Message.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(resp.Message.Header)
		if err != nil {
			return kvEntry{}, err
		}
		// As the key-value store reads them.
		e.deleted = h.Get("KV-Operation") == "DEL" || h.Get("KV-Operation") == "PURGE" || h.Get(js.MarkerReasonHeader) != ""
	}
	return e, nil
}

// writeEpoch appends the owner-epoch record after whatever the journal
// holds; an earlier owner that writes meanwhile makes it read the end again.
func (s *Store) writeEpoch(ctx context.Context, epoch uint64, owner string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if err := s.lease.check(); err != nil {
			// This process was too slow to use the lease it took (starved
			// of CPU, or its renewals answered late): the claim may succeed
			// if made again.
			return fmt.Errorf("jetstream: claiming %s: %w (%w)", s.agent, err, journal.ErrUnavailable)
		}
		if err := s.loadLast(ctx); err != nil {
			return err
		}
		m := nats.NewMsg(s.subj)
		m.Header.Set(hdrEpoch, strconv.FormatUint(epoch, 10))
		m.Header.Set(hdrOwner, owner)
		m.Header.Set(hdrLast, strconv.FormatUint(s.lastSeq, 10))
		m.Header.Set(js.ExpectedLastSubjSeqHeader, strconv.FormatUint(s.last, 10))
		ack, err := s.js.PublishMsg(ctx, m)
		if isWrongLast(err) {
			continue // the earlier owner wrote meanwhile: read the end again
		}
		if err != nil {
			return fmt.Errorf("jetstream: claiming %s: appending the owner-epoch record: %w", s.agent, err)
		}
		s.last = ack.Sequence
		return nil
	}
}

// ClaimWait claims agent as Claim does, but while another owner holds the
// agent's lease it waits, up to wait after it first finds the lease held,
// for the lease to be released or to expire, and tries again. Each time it
// finds the lease held it calls waiting, if not nil, with the holder's id.
// When the wait is over it returns the *NotOwnerError naming the holder.
//
// A crashed owner's lease expires at most cfg.TTL after its last renewal.
// A wait of 0 means 3/2 of the TTL: enough for a program that runs one
// agent, restarted after a crash, to wait out its earlier run's lease, and
// short enough to fail when a live process holds the agent.
//
// ClaimWait learns that the lease is gone by watching its key (a release
// or an expiry leaves a delete marker) and, in case it misses the marker,
// by trying again every TTL/4. ctx bounds the whole claim.
func ClaimWait(ctx context.Context, nc *nats.Conn, cfg Config, agent, owner string, wait time.Duration, waiting func(holder string)) (*Store, error) {
	if err := checkAgent(agent); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if wait <= 0 {
		wait = cfg.TTL * 3 / 2
	}
	res, err := setup(ctx, nc, cfg)
	if err != nil {
		return nil, err
	}
	// Watch before the first attempt, so that a release between an
	// attempt and the wait after it is not missed.
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	w, err := res.leases.Watch(wctx, agent, js.MetaOnly(), js.UpdatesOnly())
	if err != nil {
		return nil, fmt.Errorf("jetstream: watching the lease of %s: %w", agent, err)
	}
	defer w.Stop()
	updates := w.Updates()
	var first time.Time // when the lease was first found held
	for {
		s, err := Claim(ctx, nc, cfg, agent, owner)
		var held *NotOwnerError
		if !errors.As(err, &held) {
			return s, err
		}
		if first.IsZero() {
			first = time.Now()
		}
		left := wait - time.Since(first)
		if left <= 0 {
			return nil, fmt.Errorf("%w (waited %v for its lease to end)", held, time.Since(first).Round(time.Millisecond))
		}
		if waiting != nil {
			waiting(held.Owner)
		}
		retry := time.NewTimer(min(cfg.TTL/4, left))
	sleep:
		for {
			select {
			case <-ctx.Done():
				retry.Stop()
				return nil, fmt.Errorf("%w; waiting for its lease to end: %w", held, ctx.Err())
			case <-retry.C:
				break sleep
			case e, ok := <-updates:
				if !ok {
					updates = nil // the watch ended: the timer alone, then
					continue
				}
				if e != nil && e.Operation() != js.KeyValuePut {
					retry.Stop()
					break sleep
				}
			}
		}
	}
}
