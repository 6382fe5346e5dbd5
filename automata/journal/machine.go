package journal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moora-go/moora/automata"
)

// Options configure a durable machine. Codec is required.
type Options[S, I any] struct {
	// Codec turns inputs and states into bytes.
	Codec Codec[S, I]

	// Effect, Jobs and Events are as automata.WithEffect, WithJobs and
	// WithEvents. The dispatch they are handed journals the input before
	// it is applied, without waiting for the disk (they run where waiting
	// could deadlock); a job's dispatches are dropped once its context is
	// cancelled.
	// Events, like subscribers, run on the goroutine that journals and
	// applies inputs: they must not call Machine.Dispatch.
	Effect automata.Effect[S, I]
	Jobs   func(state S) map[string]automata.Job[I]
	Events func(automata.Event[S, I])

	// SnapshotEvery is how many inputs apart snapshots are taken (default
	// 10,000; negative: only on Close). A snapshot is also taken on Close,
	// unless SkipCloseSnapshot.
	SnapshotEvery int
	// SkipCloseSnapshot makes Close take no snapshot: the next Open
	// replays the journal since the last one, as after a crash.
	SkipCloseSnapshot bool
	// KeepSnapshots is how many snapshots are kept, newest first (default
	// 2: the newest and one to fall back on).
	KeepSnapshots int
	// Compact deletes journal records older than the oldest kept
	// snapshot. Without it the whole journal is kept, and StateAt can
	// reach any point of the history.
	Compact bool
	// VerifyReplay checks determinism at each snapshot: the state is
	// rebuilt from the previous snapshot and the journal, and must encode
	// to the same bytes as the live one. A mismatch (a transition that
	// reads the clock, or mutates shared state) is reported to OnError as
	// a *NondeterminismError.
	VerifyReplay bool

	// Logger receives warnings, such as a torn last record dropped on
	// Open. Default: slog.Default().
	Logger *slog.Logger
	// OnError receives errors that have no caller to return to: an input
	// dispatched by an effect or job that could not be journaled, a failed
	// snapshot, a determinism mismatch. Default: log them to Logger.
	OnError func(error)
	// Now stamps records with their time. Default: time.Now.
	Now func() time.Time
}

func (o *Options[S, I]) setDefaults() error {
	if o.Codec == nil {
		return errors.New("journal: Options.Codec is required")
	}
	if o.SnapshotEvery == 0 {
		o.SnapshotEvery = 10_000
	}
	if o.KeepSnapshots <= 0 {
		o.KeepSnapshots = 2
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.OnError == nil {
		logger := o.Logger
		o.OnError = func(err error) { logger.Error("journal", "err", err) }
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// ErrClosed is returned by Dispatch on a closed machine.
var ErrClosed = errors.New("journal: machine closed")

// CorruptError reports damage that Open will not pass over: a damaged record,
// or damage to the store itself (its file's structure), when Kind is 0.
type CorruptError struct {
	Kind Kind   // KindInput or KindSnapshot; 0: the store itself
	Seq  uint64 // the record's sequence number; 0 when Kind is 0
	Err  error  // what is wrong
}

func (e *CorruptError) Error() string {
	if e.Kind == 0 {
		return fmt.Sprintf("journal: the store is corrupt: %v", e.Err)
	}
	return fmt.Sprintf("journal: %v record %d is corrupt: %v", e.Kind, e.Seq, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// NondeterminismError reports that replaying the journal from one snapshot
// did not reproduce the next.
type NondeterminismError struct {
	From, To uint64 // the snapshots compared
}

func (e *NondeterminismError) Error() string {
	return fmt.Sprintf("journal: replaying inputs %d..%d from the snapshot at %d does not reproduce the state at %d: a transition is not deterministic (it reads the clock, randomness or shared mutable state)", e.From+1, e.To, e.From, e.To)
}

// versioned is the inner machine's state: the user's state and the number of
// journaled inputs it reflects.
type versioned[S any] struct {
	state S
	seq   uint64
}

type request[I any] struct {
	input I
	done  chan error // nil: nobody waits (an effect's or job's dispatch)
}

// Machine is a durable Moore machine: every input is journaled before it is
// applied, and Open rebuilds the state from the newest snapshot and the
// journal after it. Its methods are safe for concurrent use.
type Machine[S, I any] struct {
	store Store
	def   automata.Definition[S, I]
	opts  Options[S, I]
	inner *automata.Machine[versioned[S], I, versioned[S]]
	log   *slog.Logger

	mu      sync.Mutex
	pending []request[I]
	closing bool
	wake    chan struct{} // a request is pending
	stopped chan struct{} // the committer has exited
	closed  chan struct{} // Close has finished; closeErr is set
	submitF automata.Dispatch[I]

	// Owned by the committer.
	seq      uint64 // last journaled
	spare    []request[I]
	records  []Record
	frameBuf []byte
	ends     []int

	snapMu   sync.Mutex    // one snapshot at a time
	snapSeq  atomic.Uint64 // newest snapshot taken
	snapWG   sync.WaitGroup
	closeErr error
}

// Open recovers the machine stored in store — newest valid snapshot, then the
// journal after it — and starts it: the effect runs and the jobs the
// recovered state calls for start again.
//
// A last journal record that fails its checksum is a write torn by a crash;
// it was never acknowledged, so Open moves it to quarantine and warns. Any
// other damaged record stops Open with a *CorruptError naming its sequence
// number. A damaged snapshot is passed over, with a warning, for an older one
// if the journal still reaches back to it; otherwise it too is a
// *CorruptError. Nothing is overwritten.
func Open[S, I any](store Store, def automata.Definition[S, I], opts Options[S, I]) (*Machine[S, I], error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	m := &Machine[S, I]{
		store:   store,
		def:     def,
		opts:    opts,
		log:     opts.Logger,
		wake:    make(chan struct{}, 1),
		stopped: make(chan struct{}),
		closed:  make(chan struct{}),
	}
	m.submitF = m.submit
	state, seq, snapSeq, err := m.recover()
	if err != nil {
		return nil, err
	}
	m.seq = seq
	m.snapSeq.Store(snapSeq)
	restored := versioned[S]{state, seq}
	inner := automata.Definition[versioned[S], I]{
		Initial: func() versioned[S] { return restored },
		Transition: func(v versioned[S], in I) versioned[S] {
			return versioned[S]{def.Transition(v.state, in), v.seq + 1}
		},
	}
	var innerOpts []automata.Option[versioned[S], I]
	if opts.Effect != nil {
		eff := opts.Effect
		innerOpts = append(innerOpts, automata.WithEffect(func(v versioned[S], _ automata.Dispatch[I]) {
			eff(v.state, m.submitF)
		}))
	}
	if opts.Jobs != nil {
		innerOpts = append(innerOpts, automata.WithJobs(m.jobsAt))
	}
	if opts.Events != nil {
		events := opts.Events
		innerOpts = append(innerOpts, automata.WithEvents(func(e automata.Event[versioned[S], I]) {
			events(automata.Event[S, I]{Kind: e.Kind, Input: e.Input, Key: e.Key, Err: e.Err, State: e.State.state})
		}))
	}
	m.inner = automata.NewMoore(inner, func(v versioned[S]) versioned[S] { return v }, innerOpts...)
	// Only now: the committer applies inputs to m.inner. Inputs that the
	// jobs of the restored state dispatch meanwhile wait in m.pending.
	go m.commitLoop()
	return m, nil
}

// jobsAt hands each job a dispatch that journals its inputs and drops them
// once the job's context is cancelled.
func (m *Machine[S, I]) jobsAt(v versioned[S]) map[string]automata.Job[I] {
	jobs := m.opts.Jobs(v.state)
	wrapped := make(map[string]automata.Job[I], len(jobs))
	for key, job := range jobs {
		wrapped[key] = func(ctx context.Context, _ automata.Dispatch[I]) error {
			return job(ctx, func(in I) {
				if ctx.Err() == nil {
					m.submit(in)
				}
			})
		}
	}
	return wrapped
}

// recover rebuilds the state: newest usable snapshot, then the journal.
func (m *Machine[S, I]) recover() (state S, seq, snapSeq uint64, err error) {
	var damaged []*CorruptError
	state, snapSeq, damaged, err = m.newestSnapshot()
	if err != nil {
		return state, 0, 0, err
	}
	seq = snapSeq
	var bad *CorruptError // a damaged record, fatal unless it is the last
	err = m.store.Scan(snapSeq+1, func(r Record) error {
		if bad != nil {
			return bad // a record follows the damaged one
		}
		if r.Seq != seq+1 {
			return &CorruptError{Kind: KindInput, Seq: seq + 1, Err: fmt.Errorf("missing (the next record is %d)", r.Seq)}
		}
		in, err := m.decodeInput(r)
		if err != nil {
			bad = err.(*CorruptError)
			return nil
		}
		state = m.def.Transition(state, in)
		seq = r.Seq
		return nil
	})
	if err != nil {
		return state, 0, 0, err
	}
	// A snapshot, even a damaged one, proves that the inputs up to its seq
	// existed: the rebuilt state must reach it.
	for _, d := range damaged {
		if d.Seq > seq {
			return state, 0, 0, d
		}
	}
	if bad != nil {
		m.log.Warn("journal: dropping a torn last record (a write cut short by a crash; it was never acknowledged); its bytes are kept in quarantine",
			"seq", bad.Seq, "err", bad.Err)
		if err := m.store.Quarantine(bad.Seq); err != nil {
			return state, 0, 0, fmt.Errorf("journal: quarantine torn record %d: %w", bad.Seq, err)
		}
	}
	return state, seq, snapSeq, nil
}

func (m *Machine[S, I]) decodeInput(r Record) (I, error) {
	payload, err := framePayload(r, KindInput)
	if err != nil {
		var zero I
		return zero, err
	}
	in, err := m.opts.Codec.DecodeInput(payload)
	if err != nil {
		return in, &CorruptError{Kind: KindInput, Seq: r.Seq, Err: fmt.Errorf("decoding the input: %w", err)}
	}
	return in, nil
}

// framePayload checks that r holds an intact frame of kind for its seq, and
// returns the frame's payload.
func framePayload(r Record, kind Kind) ([]byte, error) {
	f, err := DecodeFrame(r.Data)
	if err == nil && (f.Kind != kind || f.Seq != r.Seq) {
		err = fmt.Errorf("stored under %d, but the frame holds %v %d", r.Seq, f.Kind, f.Seq)
	}
	if err != nil {
		return nil, &CorruptError{Kind: kind, Seq: r.Seq, Err: err}
	}
	return f.Payload, nil
}

// newestSnapshot decodes the newest snapshot that is intact and that the
// journal can continue from. It returns the damaged snapshots it passed over.
func (m *Machine[S, I]) newestSnapshot() (state S, seq uint64, damaged []*CorruptError, err error) {
	first, err := m.firstJournalSeq()
	if err != nil {
		return state, 0, nil, err
	}
	found := false
	err = m.store.Snapshots(func(r Record) error {
		s, err := m.decodeSnapshot(r)
		if err != nil {
			damaged = append(damaged, err.(*CorruptError))
			return nil
		}
		state, seq, found = s, r.Seq, true
		return ErrStop
	})
	if err != nil {
		return state, 0, nil, err
	}
	if !found {
		state, seq = m.def.Initial(), 0
	}
	// The journal must pick up right after the snapshot (or from the
	// beginning), or inputs are missing.
	if first != 0 && first > seq+1 {
		if len(damaged) > 0 {
			return state, 0, nil, damaged[0]
		}
		return state, 0, nil, &CorruptError{Kind: KindInput, Seq: seq + 1, Err: fmt.Errorf("missing: the journal starts at %d and no snapshot covers what precedes it", first)}
	}
	for _, d := range damaged {
		m.log.Warn("journal: passing over a damaged snapshot; the state is rebuilt from an older one and the journal",
			"seq", d.Seq, "err", d.Err, "using", seq)
	}
	return state, seq, damaged, nil
}

func (m *Machine[S, I]) firstJournalSeq() (uint64, error) {
	var first uint64
	err := m.store.Scan(0, func(r Record) error {
		first = r.Seq
		return ErrStop
	})
	return first, err
}

func (m *Machine[S, I]) decodeSnapshot(r Record) (S, error) {
	payload, err := framePayload(r, KindSnapshot)
	if err != nil {
		var zero S
		return zero, err
	}
	s, err := m.opts.Codec.DecodeState(payload)
	if err != nil {
		return s, &CorruptError{Kind: KindSnapshot, Seq: r.Seq, Err: fmt.Errorf("decoding the state: %w", err)}
	}
	return s, nil
}

// Dispatch journals input and applies it. It returns nil once the input is
// on disk (fsync'd) and handed to the machine; concurrent calls share one
// fsync. If ctx ends first, Dispatch returns ctx.Err(), and the input may or
// may not have been journaled. An input that cannot be encoded is not
// journaled, and its error is returned.
func (m *Machine[S, I]) Dispatch(ctx context.Context, input I) error {
	done := make(chan error, 1)
	if !m.enqueue(request[I]{input, done}) {
		return ErrClosed
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// submit is the dispatch of effects and jobs: journal and apply, without
// waiting. Errors go to OnError.
func (m *Machine[S, I]) submit(input I) {
	m.enqueue(request[I]{input: input})
}

func (m *Machine[S, I]) enqueue(r request[I]) bool {
	m.mu.Lock()
	if m.closing {
		m.mu.Unlock()
		return false
	}
	m.pending = append(m.pending, r)
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
	return true
}

// commitLoop journals pending inputs in groups, one Append (one fsync) per
// group, and applies them in journal order.
func (m *Machine[S, I]) commitLoop() {
	defer close(m.stopped)
	last := 0 // size of the previous group
	for {
		<-m.wake
		for {
			// Producers acknowledged by the previous commit are
			// about to dispatch again: give them a moment to join
			// this group rather than the next. A yield costs far
			// less than the fsync it saves.
			for range 4 {
				m.mu.Lock()
				n := len(m.pending)
				m.mu.Unlock()
				if n == 0 || n >= last {
					break
				}
				runtime.Gosched()
			}
			m.mu.Lock()
			batch := m.pending
			m.pending = m.spare[:0]
			closing := m.closing
			m.mu.Unlock()
			if len(batch) == 0 {
				m.spare = batch
				if closing {
					return
				}
				break
			}
			last = len(batch)
			m.commit(batch)
			clear(batch)
			m.spare = batch[:0]
		}
	}
}

func (m *Machine[S, I]) commit(batch []request[I]) {
	now := m.opts.Now().UnixNano()
	records := m.records[:0]
	buf := m.frameBuf[:0]
	ends := m.ends[:0]
	ok := batch[:0] // the requests that encoded, in order
	for _, r := range batch {
		payload, err := m.opts.Codec.EncodeInput(r.input)
		if err != nil {
			m.reply(r, fmt.Errorf("journal: encoding input: %w", err))
			continue
		}
		seq := m.seq + uint64(len(ok)) + 1
		buf = AppendFrame(buf, Frame{Kind: KindInput, Seq: seq, UnixNano: now, Payload: payload})
		ends = append(ends, len(buf))
		records = append(records, Record{Seq: seq})
		ok = append(ok, r)
	}
	// Slice the frames out of buf only now that it has stopped moving.
	start := 0
	for i, end := range ends {
		records[i].Data = buf[start:end:end]
		start = end
	}
	m.records, m.frameBuf, m.ends = records, buf, ends
	if len(ok) == 0 {
		return
	}
	if err := m.store.Append(records); err != nil {
		err = fmt.Errorf("journal: appending inputs %d..%d: %w", m.seq+1, m.seq+uint64(len(ok)), err)
		for _, r := range ok {
			m.reply(r, err)
		}
		return
	}
	m.seq += uint64(len(ok))
	for _, r := range ok {
		m.inner.Dispatch(r.input)
	}
	for _, r := range ok {
		m.reply(r, nil)
	}
	if m.opts.SnapshotEvery > 0 && m.seq-m.snapSeq.Load() >= uint64(m.opts.SnapshotEvery) {
		m.snapshotAsync()
	}
}

func (m *Machine[S, I]) reply(r request[I], err error) {
	if r.done != nil {
		r.done <- err
	} else if err != nil {
		m.opts.OnError(err)
	}
}

// snapshotAsync takes a snapshot in the background, unless one is running.
func (m *Machine[S, I]) snapshotAsync() {
	if !m.snapMu.TryLock() {
		return
	}
	m.snapWG.Add(1)
	go func() {
		defer m.snapWG.Done()
		defer m.snapMu.Unlock()
		if err := m.snapshot(); err != nil {
			m.opts.OnError(err)
		}
	}()
}

// snapshot stores the current state; m.snapMu must be held.
func (m *Machine[S, I]) snapshot() error {
	v := m.inner.Current() // the state and its seq, consistently
	prev := m.snapSeq.Load()
	if v.seq == prev {
		return nil
	}
	payload, err := m.opts.Codec.EncodeState(v.state)
	if err != nil {
		return fmt.Errorf("journal: encoding the state at %d: %w", v.seq, err)
	}
	if m.opts.VerifyReplay {
		if err := m.verifyReplay(prev, v.seq, payload); err != nil {
			m.opts.OnError(err)
		}
	}
	data := AppendFrame(nil, Frame{Kind: KindSnapshot, Seq: v.seq, UnixNano: m.opts.Now().UnixNano(), Payload: payload})
	if err := m.store.PutSnapshot(Record{Seq: v.seq, Data: data}); err != nil {
		return fmt.Errorf("journal: storing the snapshot at %d: %w", v.seq, err)
	}
	m.snapSeq.Store(v.seq)
	return m.prune()
}

// prune keeps the newest KeepSnapshots snapshots, and with Compact the
// journal from the oldest of them on.
func (m *Machine[S, I]) prune() error {
	var kept []uint64
	err := m.store.Snapshots(func(r Record) error {
		kept = append(kept, r.Seq)
		if len(kept) == m.opts.KeepSnapshots {
			return ErrStop
		}
		return nil
	})
	if err != nil || len(kept) < m.opts.KeepSnapshots {
		return err
	}
	oldest := kept[len(kept)-1]
	var inputsBefore uint64
	if m.opts.Compact {
		inputsBefore = oldest + 1
	}
	return m.store.Prune(oldest, inputsBefore)
}

func (m *Machine[S, I]) verifyReplay(from, to uint64, want []byte) error {
	state, err := m.replay(from, to)
	if err != nil {
		return fmt.Errorf("journal: verifying replay %d..%d: %w", from, to, err)
	}
	got, err := m.opts.Codec.EncodeState(state)
	if err != nil {
		return fmt.Errorf("journal: verifying replay %d..%d: %w", from, to, err)
	}
	if string(got) != string(want) {
		return &NondeterminismError{From: from, To: to}
	}
	return nil
}

// Subscribe calls fn with the current state, then with the state after each
// applied input, as automata.Machine.Subscribe does.
//
// fn runs on the goroutine that journals and applies inputs, so it must not
// call Dispatch, which waits for that goroutine to write the input: it would
// wait for itself. To dispatch in response to a state, use an Effect (or a
// job), whose dispatch journals without waiting.
func (m *Machine[S, I]) Subscribe(fn func(state S)) (unsubscribe func()) {
	return m.inner.Subscribe(func(v versioned[S]) { fn(v.state) })
}

// Current returns the state after the latest applied input.
func (m *Machine[S, I]) Current() S { return m.inner.Current().state }

// Seq returns the sequence number of the latest applied input: the number of
// inputs the state reflects.
func (m *Machine[S, I]) Seq() uint64 { return m.inner.Current().seq }

// Close stops taking inputs, journals and applies the ones already
// dispatched, closes the inner machine (cancelling its jobs), takes a
// snapshot and closes the store. Inputs that jobs and effects dispatch while
// Close runs are dropped; their work is redone after the next Open, as the
// state still calls for it.
func (m *Machine[S, I]) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closing {
		m.mu.Unlock()
		<-m.closed
		return m.closeErr
	}
	m.closing = true
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
	<-m.stopped
	errs := []error{m.inner.Close(ctx)}
	m.snapWG.Wait()
	if !m.opts.SkipCloseSnapshot {
		m.snapMu.Lock()
		errs = append(errs, m.snapshot())
		m.snapMu.Unlock()
	}
	errs = append(errs, m.store.Close())
	m.closeErr = errors.Join(errs...)
	close(m.closed)
	return m.closeErr
}

// Entry is a journaled input.
type Entry[I any] struct {
	Seq   uint64
	Time  time.Time // when it was journaled
	Input I
}

// Inputs returns the journaled inputs with from <= Seq <= to, for debugging
// and tests. With Compact, inputs older than the oldest kept snapshot are
// gone.
func (m *Machine[S, I]) Inputs(from, to uint64) ([]Entry[I], error) {
	var entries []Entry[I]
	err := m.store.Scan(from, func(r Record) error {
		if r.Seq > to {
			return ErrStop
		}
		in, err := m.decodeInput(r)
		if err != nil {
			return err
		}
		f, _ := DecodeFrame(r.Data) // decodeInput checked it
		entries = append(entries, Entry[I]{Seq: r.Seq, Time: time.Unix(0, f.UnixNano), Input: in})
		return nil
	})
	return entries, err
}

// StateAt rebuilds the state after input seq (0: the initial state) from
// the newest kept snapshot at or before it and the journal: time travel, for
// debugging and tests.
func (m *Machine[S, I]) StateAt(seq uint64) (S, error) {
	var base uint64
	err := m.store.Snapshots(func(r Record) error {
		if r.Seq <= seq {
			base = r.Seq
			return ErrStop
		}
		return nil
	})
	if err != nil {
		var zero S
		return zero, err
	}
	return m.replay(base, seq)
}

// replay rebuilds the state at seq from the snapshot at base (0: the initial
// state) and the journal after it.
func (m *Machine[S, I]) replay(base, seq uint64) (S, error) {
	state := m.def.Initial()
	if base > 0 {
		found := false
		err := m.store.Snapshots(func(r Record) error {
			if r.Seq != base {
				return nil
			}
			s, err := m.decodeSnapshot(r)
			state, found = s, err == nil
			if err != nil {
				return err
			}
			return ErrStop
		})
		if err != nil {
			return state, err
		}
		if !found {
			return state, fmt.Errorf("journal: no snapshot at %d", base)
		}
	}
	next := base + 1
	err := m.store.Scan(next, func(r Record) error {
		if r.Seq > seq {
			return ErrStop
		}
		if r.Seq != next {
			return &CorruptError{Kind: KindInput, Seq: next, Err: fmt.Errorf("missing (the next record is %d)", r.Seq)}
		}
		in, err := m.decodeInput(r)
		if err != nil {
			return err
		}
		state = m.def.Transition(state, in)
		next++
		return nil
	})
	if err == nil && next <= seq {
		err = fmt.Errorf("journal: the journal ends at %d, before %d", next-1, seq)
	}
	return state, err
}
