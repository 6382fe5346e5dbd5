package journal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moora-go/moora/automata"
)

// Options configure a durable machine. Codec is required. Everything else a
// machine can do — effects, jobs, events, admission, the purity check — is
// configured with automata options, given to Open after these.
type Options[S, I any] struct {
	// Codec turns inputs and states into bytes.
	Codec Codec[S, I]

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
	// QuarantineCorruptTail is the repair path for a damaged last journal
	// record, which Open otherwise refuses with a *CorruptError: Open moves
	// that record to the store's quarantine (its bytes are kept), warns,
	// and goes on without it. The record was acknowledged when it was
	// written, so this drops an input a caller was told is durable: set it
	// on purpose, for one Open, after reading the error.
	QuarantineCorruptTail bool

	// Logger receives warnings, such as a damaged snapshot passed over on
	// Open. Default: slog.Default().
	Logger *slog.Logger
	// OnError receives errors that have no caller to return to: a failed
	// snapshot, a determinism mismatch. (An input that effects or jobs
	// dispatched and that the journal rejected is reported as an
	// automata.InputRejected event.) Default: log them to Logger.
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

// ErrClosed is returned by Dispatch on a closed machine. It is
// automata.ErrClosed.
var ErrClosed = automata.ErrClosed

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

// Machine is a durable Moore machine: an automata machine whose every input
// is journaled before it is applied, and that Open rebuilds from the newest
// snapshot and the journal after it. Its methods are safe for concurrent use.
type Machine[S, I any] struct {
	store Store
	def   automata.Definition[S, I]
	opts  Options[S, I]
	inner *automata.Machine[S, I, S]
	log   *slog.Logger

	openSeq uint64 // the last input journaled before Open: inputs applied since are numbered after it

	// Owned by the goroutine applying inputs (the committer's Commit).
	seq      uint64 // last journaled
	frameBuf []byte
	ends     []int
	records  []Record

	journaled atomic.Uint64 // seq, for Seq

	closeOnce   sync.Once
	storeClosed atomic.Bool // Close has closed (or is closing) the store
	closeErr    error
	// done is closed when the inner machine fails, or when Close has
	// finished (snapshot taken, store closed): later than the inner
	// machine's, which closes before the snapshot.
	done     chan struct{}
	doneOnce sync.Once

	snapMu  sync.Mutex    // one snapshot at a time
	snapSeq atomic.Uint64 // newest snapshot taken
	snapWG  sync.WaitGroup
}

// Open recovers the machine stored in store — newest valid snapshot, then the
// journal after it — and starts it with options (automata.WithEffect,
// WithJobs, WithEvents, WithAdmission, WithPurityCheck …, exactly as
// automata.New takes them): the effects run and the jobs the recovered state
// calls for start again.
//
// Any damaged journal record stops Open with a *CorruptError naming its
// sequence number, the last one too: with bbolt a committed record cannot be
// torn, so a damaged one was acknowledged and dropping it would lose an
// input (Options.QuarantineCorruptTail is the operator's way out). A damaged
// snapshot is passed over, with a warning, for an older one if the journal
// still reaches back to it; otherwise it too is a *CorruptError. A failed
// Open writes nothing.
//
// On success the machine owns store, and Close closes it; on failure the
// caller still does.
func Open[S, I any](store Store, def automata.Definition[S, I], opts Options[S, I], options ...automata.Option[S, I]) (*Machine[S, I], error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	m := &Machine[S, I]{
		store: store,
		def:   def,
		opts:  opts,
		log:   opts.Logger,
		done:  make(chan struct{}),
	}
	state, seq, snapSeq, err := m.recover()
	if err != nil {
		return nil, err
	}
	m.seq, m.openSeq = seq, seq
	m.journaled.Store(seq)
	m.snapSeq.Store(snapSeq)
	restored := automata.Definition[S, I]{
		Initial:    func() S { return state },
		Transition: def.Transition,
	}
	options = append(options[:len(options):len(options)], automata.WithCommitter[S, I](committer[S, I]{m}))
	m.inner = automata.NewMoore(restored, func(s S) S { return s }, options...)
	go func() {
		<-m.inner.Done()
		if errors.As(m.inner.Err(), new(*automata.FailError)) {
			m.closeDone()
		} // else it was closed: Close closes done when it has finished
	}()
	return m, nil
}

func (m *Machine[S, I]) closeDone() { m.doneOnce.Do(func() { close(m.done) }) }

// committer journals the inputs of m's inner machine before they are applied.
type committer[S, I any] struct{ m *Machine[S, I] }

// Prepare encodes an input and decodes it again, as recovery will, so that
// an input that could not be read back is refused now rather than
// acknowledged and then fatal at the next Open. The transition is applied to
// the decoded input: the live state is the one replay rebuilds.
func (c committer[S, I]) Prepare(in I) (out I, payload []byte, err error) {
	if isNil(in) {
		return in, nil, errNilInput
	}
	codec, what := c.m.opts.Codec, "encoding the input"
	defer func() { // no closure per call, unlike guard: this is the hot path
		if p := recover(); p != nil {
			c.m.log.Error("journal: the codec panicked", "while", what, "panic", p, "stack", string(debug.Stack()))
			out, payload, err = in, nil, fmt.Errorf("journal: %s: %w", what, codecPanic{p})
		}
	}()
	if payload, err = codec.EncodeInput(in); err != nil {
		return in, nil, fmt.Errorf("journal: encoding the input: %w", err)
	}
	what = "decoding the input"
	decoded, err := codec.DecodeInput(payload)
	if err != nil {
		return in, nil, fmt.Errorf("journal: the input would not decode on recovery: %w", err)
	}
	if isNil(decoded) {
		return in, nil, errors.New("journal: the input would decode as nil on recovery")
	}
	return decoded, payload, nil
}

// errNilInput refuses a nil input: it would be journaled as nothing.
var errNilInput = fmt.Errorf("journal: %w", automata.ErrNilInput)

// isNil reports whether in is a nil pointer or interface.
func isNil[I any](in I) bool {
	v := reflect.ValueOf(&in).Elem()
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// codecPanic is the error of a codec that panicked: a bug in the code, not
// damage to the data, so never a *CorruptError.
type codecPanic struct{ value any }

func (e codecPanic) Error() string { return fmt.Sprintf("the codec panicked: %v", e.value) }

// guard calls f, a call of the codec, and turns a panic in it into an error
// (logged with the stack): a codec that panics on some input or state is a
// bug that must not crash the process, nor leave Open or Close half done.
func guard[T any, S, I any](m *Machine[S, I], what string, f func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			m.log.Error("journal: the codec panicked", "while", what, "panic", p, "stack", string(debug.Stack()))
			err = codecPanic{p}
		}
	}()
	return f()
}

// Commit appends the prepared inputs, one store transaction (one fsync) for
// the batch, and takes a snapshot when one is due.
func (c committer[S, I]) Commit(updates []automata.Update[S, I], payloads [][]byte) error {
	m := c.m
	now := m.opts.Now().UnixNano()
	buf, ends := m.frameBuf[:0], m.ends[:0]
	for i, payload := range payloads {
		buf = AppendFrame(buf, Frame{Kind: KindInput, Seq: m.seq + uint64(i) + 1, UnixNano: now, Payload: payload})
		ends = append(ends, len(buf))
	}
	// Slice the frames out of buf only now that it has stopped moving.
	records := m.records[:0]
	start := 0
	for i, end := range ends {
		records = append(records, Record{Seq: m.seq + uint64(i) + 1, Data: buf[start:end:end]})
		start = end
	}
	m.frameBuf, m.ends, m.records = buf, ends, records
	defer clear(records)
	if err := m.store.Append(records); err != nil {
		return fmt.Errorf("journal: appending inputs %d..%d: %w", m.seq+1, m.seq+uint64(len(records)), err)
	}
	m.seq += uint64(len(records))
	m.journaled.Store(m.seq)
	if m.opts.SnapshotEvery > 0 && m.seq-m.snapSeq.Load() >= uint64(m.opts.SnapshotEvery) {
		m.snapshotAsync(updates[len(updates)-1].State, m.seq)
	}
	return nil
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
			var ok bool
			if bad, ok = err.(*CorruptError); !ok {
				return err // the codec panicked: not the record's fault
			}
			return nil
		}
		if state, err = m.apply(state, in, r.Seq); err != nil {
			return err
		}
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
		if !m.opts.QuarantineCorruptTail {
			bad.Err = fmt.Errorf("%w (it is the last record; it was acknowledged when written, so Open will not drop it: to move it to quarantine and go on without it, open once with Options.QuarantineCorruptTail)", bad.Err)
			return state, 0, 0, bad
		}
		m.log.Warn("journal: moving a damaged last record to quarantine, as Options.QuarantineCorruptTail asks; the input it held is lost",
			"seq", bad.Seq, "err", bad.Err)
		if err := m.store.Quarantine(bad.Seq); err != nil {
			return state, 0, 0, fmt.Errorf("journal: quarantine damaged record %d: %w", bad.Seq, err)
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
	in, err := guard(m, "decoding an input", func() (I, error) { return m.opts.Codec.DecodeInput(payload) })
	if errors.As(err, new(codecPanic)) {
		return in, fmt.Errorf("journal: decoding input %d: %w", r.Seq, err)
	}
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
			d, ok := err.(*CorruptError)
			if !ok {
				return err // the codec panicked: not the record's fault
			}
			damaged = append(damaged, d)
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
	s, err := guard(m, "decoding a snapshot", func() (S, error) { return m.opts.Codec.DecodeState(payload) })
	if errors.As(err, new(codecPanic)) {
		return s, fmt.Errorf("journal: decoding the snapshot at %d: %w", r.Seq, err)
	}
	if err != nil {
		return s, &CorruptError{Kind: KindSnapshot, Seq: r.Seq, Err: fmt.Errorf("decoding the state: %w", err)}
	}
	return s, nil
}

// apply is the transition during recovery and replay: a panic there (an
// input the code of today cannot apply) is an error naming the input, not a
// crash.
func (m *Machine[S, I]) apply(state S, in I, seq uint64) (next S, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("journal: replaying input %d: the transition panicked: %v", seq, v)
		}
	}()
	return m.def.Transition(state, in), nil
}

// Dispatch journals input and applies it, and returns nil once it is both:
// on disk (fsync'd; concurrent calls share one fsync) and applied to the
// state.
//
// The rule for callers: an error means the input is not in the journal, and
// never will be, so a retry cannot duplicate it. Dispatch refuses an input
// (and writes nothing) when an admission step (automata.WithAdmission)
// rejects it, when it does not survive the codec's round trip (encoded, then
// decoded and validated as recovery will: the error names the field; a codec
// that panics is an error too), when it is nil (a nil pointer or interface:
// the error wraps automata.ErrNilInput), when the store fails to append it,
// and when the machine is closed or failed; the machine keeps running after
// all but the last two.
// If ctx ends before the input is taken up for journaling, Dispatch returns
// ctx.Err() and the input is dropped; once it is taken up, Dispatch waits for
// the outcome whatever ctx does.
//
// Dispatch must not be called from a subscriber, effect or event handler:
// they run on the goroutine that journals and applies inputs, which it would
// wait for. Effects and jobs dispatch with the Dispatch they are handed,
// which journals without waiting.
func (m *Machine[S, I]) Dispatch(ctx context.Context, input I) error {
	_, err := m.DispatchSeq(ctx, input)
	return err
}

// DispatchSeq is Dispatch that also returns, with nil, the input's sequence
// number in the journal: the state after it is StateAt(seq).
func (m *Machine[S, I]) DispatchSeq(ctx context.Context, input I) (uint64, error) {
	if isNil(input) {
		return 0, errNilInput // before admission steps see it
	}
	n, err := m.inner.DispatchWaitPos(ctx, input)
	if err != nil {
		return 0, err
	}
	return m.openSeq + n, nil
}

// snapshotAsync takes a snapshot of state, the state after input seq, in the
// background, unless one is running.
func (m *Machine[S, I]) snapshotAsync(state S, seq uint64) {
	if !m.snapMu.TryLock() {
		return
	}
	m.snapWG.Add(1)
	go func() {
		defer m.snapWG.Done()
		defer m.snapMu.Unlock()
		if err := m.snapshot(state, seq); err != nil {
			m.opts.OnError(err)
		}
	}()
}

// snapshot stores state, the state after input seq; m.snapMu must be held.
func (m *Machine[S, I]) snapshot(state S, seq uint64) error {
	prev := m.snapSeq.Load()
	if seq == prev {
		return nil
	}
	payload, err := guard(m, "encoding a snapshot", func() ([]byte, error) { return m.opts.Codec.EncodeState(state) })
	if err != nil {
		return fmt.Errorf("journal: encoding the state at %d: %w", seq, err)
	}
	if m.opts.VerifyReplay {
		if err := m.verifyReplay(prev, seq, payload); err != nil {
			m.opts.OnError(err)
		}
	}
	data := AppendFrame(nil, Frame{Kind: KindSnapshot, Seq: seq, UnixNano: m.opts.Now().UnixNano(), Payload: payload})
	if err := m.store.PutSnapshot(Record{Seq: seq, Data: data}); err != nil {
		return fmt.Errorf("journal: storing the snapshot at %d: %w", seq, err)
	}
	m.snapSeq.Store(seq)
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
	got, err := guard(m, "encoding a snapshot", func() ([]byte, error) { return m.opts.Codec.EncodeState(state) })
	if err != nil {
		return fmt.Errorf("journal: verifying replay %d..%d: %w", from, to, err)
	}
	if string(got) != string(want) {
		return &NondeterminismError{From: from, To: to}
	}
	return nil
}

// Subscribe calls fn with the current state, then with the state after each
// applied input, as automata.Machine.Subscribe does. The first call comes
// between two commits: Seq, read in it, is the sequence number of the state
// it is given, and each later call is the state after the next one.
//
// fn runs on the goroutine that journals and applies inputs, so it must not
// call Dispatch, which waits for that goroutine to write the input: it would
// wait for itself. To dispatch in response to a state, use an effect (or a
// job), whose dispatch journals without waiting.
func (m *Machine[S, I]) Subscribe(fn func(state S)) (unsubscribe func()) {
	return m.inner.Subscribe(fn)
}

// Current returns the state after the latest applied input.
func (m *Machine[S, I]) Current() S { return m.inner.Current() }

// Seq returns the sequence number of the latest journaled input: the number
// of inputs in the journal, which the state reflects once Dispatch of that
// input has returned.
func (m *Machine[S, I]) Seq() uint64 { return m.journaled.Load() }

// Err returns nil while the machine runs, the *automata.FailError once it
// has failed (fail-stop: a transition, subscriber, effect or other user code
// panicked), and ErrClosed once Close has finished. Inputs journaled before
// a failure are kept, and the next Open applies them.
func (m *Machine[S, I]) Err() error {
	if err := m.inner.Err(); err != ErrClosed {
		return err // nil, or the failure
	}
	select {
	case <-m.done:
		return ErrClosed
	default:
		return nil // Close has not finished
	}
}

// Done returns a channel that is closed when the machine fails, or when
// Close has finished: the snapshot taken and the store closed, so that a
// supervisor watching Done may open the store again.
func (m *Machine[S, I]) Done() <-chan struct{} { return m.done }

// Close stops taking inputs, journals and applies the ones already
// dispatched, closes the inner machine (cancelling its jobs), takes a
// snapshot (not after a failure, when the state may lag the journal, nor
// when ctx ended before the jobs did) and closes the store. Inputs that jobs and effects dispatch while Close runs
// are dropped; their work is redone after the next Open, as the state still
// calls for it. Close returns the machine's *automata.FailError if it failed,
// with any error of its own.
func (m *Machine[S, I]) Close(ctx context.Context) error {
	m.closeOnce.Do(func() {
		// A snapshot needs the machine stopped cleanly: not failed (its
		// state may lag the journal) and not still running jobs past ctx.
		err := m.inner.Close(ctx)
		errs := []error{err}
		m.snapWG.Wait()
		if !m.opts.SkipCloseSnapshot && err == nil {
			m.snapMu.Lock()
			errs = append(errs, m.snapshot(m.inner.Current(), m.seq))
			m.snapMu.Unlock()
		}
		m.storeClosed.Store(true)
		errs = append(errs, m.store.Close())
		m.closeErr = errors.Join(errs...)
		m.closeDone()
	})
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
// gone. Once Close closes the store, Inputs and StateAt fail with an error
// that wraps ErrClosed.
func (m *Machine[S, I]) Inputs(from, to uint64) ([]Entry[I], error) {
	entries, err := m.inputs(from, to)
	return entries, m.readErr(err)
}

// readErr is err of a read of the store, wrapping ErrClosed when Close
// has closed the store: a reader racing Close is told why.
func (m *Machine[S, I]) readErr(err error) error {
	if err != nil && m.storeClosed.Load() {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return err
}

func (m *Machine[S, I]) inputs(from, to uint64) ([]Entry[I], error) {
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
	s, err := m.stateAt(seq)
	return s, m.readErr(err)
}

func (m *Machine[S, I]) stateAt(seq uint64) (S, error) {
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
		if state, err = m.apply(state, in, r.Seq); err != nil {
			return err
		}
		next++
		return nil
	})
	if err == nil && next <= seq {
		err = fmt.Errorf("journal: the journal ends at %d, before %d", next-1, seq)
	}
	return state, err
}
