package journal

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/moora-go/moora/automata/internal/frame"
	"github.com/moora-go/moora/automata/migrate"
)

// Limits of what a fork carries of the conversation it was forked from: the
// answers of its jobs after the fork's position, up to MaxForkAnswers inputs
// and MaxForkAnswerBytes bytes of them. What lies past either is not
// carried: those jobs run for real.
const (
	MaxForkAnswers     = 4096
	MaxForkAnswerBytes = 16 << 20
)

// ForkStats is what Fork wrote.
type ForkStats struct {
	// Seq is the position forked at: the fork's state is the one after
	// input Seq, and its journal goes on at Seq+1.
	Seq uint64
	// Answers is how many inputs of jobs the fork carries, to answer its
	// jobs with (see Fork).
	Answers int
	// Bytes is what was written to the fork's store: one snapshot record,
	// with the answers.
	Bytes int
}

// Fork starts a new agent on store (which must hold no records) as a fork of
// m at seq (0 < seq <= m.Seq()): Open of store, with m's definition, resumes
// from m's state after input seq, and the fork's journal goes on at seq+1,
// its own from then on. m is not touched.
//
// Nothing of m's journal is copied: the fork's store gets one snapshot
// record, of the state after seq, whatever the length of the conversation.
// Its inputs up to seq are m's, and stay in m's journal (a program keeps the
// relation, as the fleet's AgentInfo.Fork does; the fork's StateAt and
// Inputs reach back to seq, not before).
//
// The snapshot also carries what m's jobs answered after seq (the inputs
// they dispatched, by job key, as journaled with Options.JobKeys), up to
// m's first input after seq that no job dispatched: the point where the
// conversation's user spoke again. Until the fork departs from that record,
// a job the fork's state calls for under a key that answered in m is
// answered with what it answered there, without running: a fork of a
// conversation whose next input was the model's reply gets that reply, and
// calls no model, until an input comes that the record does not hold (a
// user's, or a job's that ran for real); from then on every job runs. The
// inputs a record answered are applied as they were recorded, past the
// admission steps (a clock an admission step stamps does not change them),
// journaled with Entry.Recorded set; a restart of the fork picks the record
// up where it was. Jobs are matched by key: a job whose key depends on
// something the fork does differently (a time stamped on its own inputs)
// finds no answer, and runs.
func (m *Machine[S, I]) Fork(seq uint64, store Store) (ForkStats, error) {
	stats := ForkStats{Seq: seq}
	if seq == 0 || seq > m.Seq() {
		return stats, fmt.Errorf("journal: fork at %d: the journal holds inputs 1 to %d", seq, m.Seq())
	}
	if err := emptyStore(store); err != nil {
		return stats, err
	}
	state, err := m.StateAt(seq)
	if err != nil {
		return stats, fmt.Errorf("journal: fork at %d: %w", seq, err)
	}
	payload, err := guard(m, "encoding the fork's state", func() ([]byte, error) { return m.opts.Codec.EncodeState(state) })
	if err != nil {
		return stats, fmt.Errorf("journal: fork at %d: encoding the state: %w", seq, err)
	}
	answers, err := m.answersAfter(seq)
	if err != nil {
		return stats, fmt.Errorf("journal: fork at %d: %w", seq, m.readErr(err))
	}
	data := frame.Append(nil, frame.Frame{Kind: frame.Snapshot, Seq: seq, UnixNano: m.opts.Now().UnixNano(), Version: m.version(), Fork: true, Answers: answers, Payload: payload})
	if err := store.PutSnapshot(Record{Seq: seq, Data: data}); err != nil {
		return stats, fmt.Errorf("journal: fork at %d: storing its snapshot: %w", seq, err)
	}
	stats.Answers, stats.Bytes = len(answers), len(data)
	return stats, nil
}

// emptyStore checks that store holds no record.
func emptyStore(store Store) error {
	errFull := errors.New("journal: fork: the store holds records already")
	err := store.Scan(0, func(Record) error { return errFull })
	if err == nil {
		err = store.Snapshots(func(Record) error { return errFull })
	}
	return err
}

// answersAfter returns what m's jobs answered after seq, up to the first
// input no job dispatched (and within the fork limits), encoded under the
// current version.
func (m *Machine[S, I]) answersAfter(seq uint64) ([]frame.Answer, error) {
	var answers []frame.Answer
	size := 0
	errEnd := errors.New("end of the record")
	err := m.store.Scan(seq+1, func(r Record) error {
		in, f, err := m.decodeInput(r)
		if errors.As(err, new(*migrate.DroppedError)) {
			return nil
		}
		if err != nil {
			return err
		}
		if f.Job == "" || len(answers) == MaxForkAnswers {
			return errEnd
		}
		payload := f.Payload
		if f.Version != m.version() {
			if payload, err = guard(m, "encoding an input", func() ([]byte, error) { return m.opts.Codec.EncodeInput(in) }); err != nil {
				return fmt.Errorf("encoding input %d: %w", r.Seq, err)
			}
		}
		if size += len(payload); size > MaxForkAnswerBytes {
			return errEnd
		}
		answers = append(answers, frame.Answer{Job: f.Job, Payload: append([]byte(nil), payload...)})
		return nil
	})
	if errors.Is(err, errEnd) {
		err = nil
	}
	return answers, err
}

// record is what a fork answers its jobs with: the inputs, by job key, that
// the jobs of the conversation forked dispatched after the fork's position
// and that the fork has not yet taken.
type record[I any] struct {
	mu       sync.Mutex
	byKey    map[string][]I
	pending  map[string]int // inputs dispatched from the record and not yet journaled, by key
	departed bool
}

// loadRecord finds the snapshot that started the fork, if the store holds
// one, and the answers of its record that its journal has not taken: the
// journal after it is read while its inputs were answered from the record,
// each taking one of its key; one that was not means the fork departed.
func (m *Machine[S, I]) loadRecord() (*record[I], error) {
	var fork *frame.Frame
	defer func() {
		if fork != nil {
			m.forkedAt = fork.Seq
		}
	}()
	err := m.store.Snapshots(func(r Record) error {
		if !frame.MayBeFork(r.Data) {
			return nil // no fork: not decoded a second time at each Open
		}
		// The record's answers are used after the walk, where r.Data is
		// no longer valid (a store may have mapped it): decode a copy.
		f, err := frame.Decode(bytes.Clone(r.Data))
		if err == nil && f.Fork {
			fork = &f
			return ErrStop
		}
		return nil // a damaged snapshot is newestSnapshot's to report
	})
	if err != nil || fork == nil || len(fork.Answers) == 0 {
		return nil, err
	}
	rec := &record[I]{byKey: map[string][]I{}, pending: map[string]int{}}
	for i, a := range fork.Answers {
		out, err := m.opts.Versions.Input(int(fork.Version), a.Payload, func(b []byte) (any, error) {
			return guard(m, "decoding a fork's answer", func() (any, error) { return m.opts.Codec.DecodeInput(b) })
		})
		if errors.As(err, new(*migrate.DroppedError)) {
			continue
		}
		in, ok := out.(I)
		if err != nil || !ok {
			return nil, &CorruptError{Kind: KindSnapshot, Seq: fork.Seq, Err: fmt.Errorf("decoding the fork's answer %d (job %q): %v", i, a.Job, err)}
		}
		rec.byKey[a.Job] = append(rec.byKey[a.Job], in)
	}
	errDeparted := errors.New("departed")
	err = m.store.Scan(fork.Seq+1, func(r Record) error {
		f, err := frameOf(r, KindInput)
		if err != nil {
			return err
		}
		if !f.Recorded {
			return errDeparted
		}
		if q := rec.byKey[f.Job]; len(q) > 0 {
			rec.byKey[f.Job] = q[1:]
		}
		return nil
	})
	switch {
	case errors.Is(err, errDeparted):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return rec, nil
}

// answer stands in for the job under key (automata.WithJobAnswers) with
// the record's answers for it, if it holds any and the fork has not
// departed.
func (rec *record[I]) answer(key string) ([]I, bool) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	answers := rec.byKey[key]
	if rec.departed || len(answers) == 0 {
		return nil, false
	}
	delete(rec.byKey, key)
	rec.pending[key] = len(answers)
	return answers, true
}

// journaled says whether an input of job key, being journaled, came from the
// record; one that did not departs the fork from it.
func (rec *record[I]) journaled(key string) bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if n := rec.pending[key]; n > 0 && key != "" {
		rec.pending[key] = n - 1
		return true
	}
	if !rec.departed {
		rec.departed = true
		clear(rec.byKey)
	}
	return false
}

// ForkedAt is the position m was forked at (see Fork): its history starts
// after it. It is 0 for an agent that is no fork. (The snapshot Fork wrote
// is kept for the fork's life, whatever snapshots follow: it is the base of
// its history, and holds its record.)
func (m *Machine[S, I]) ForkedAt() uint64 { return m.forkedAt }

// Departed says whether a fork's jobs run for real: true for a machine that
// is no fork, or whose fork carried no answers, and for a fork once an input
// came that its record did not hold.
func (m *Machine[S, I]) Departed() bool {
	if m.rec == nil {
		return true
	}
	m.rec.mu.Lock()
	defer m.rec.mu.Unlock()
	return m.rec.departed
}
