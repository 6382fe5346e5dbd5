package modeltest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Input is what the inputs of a generated agent are: decl.AgentInput.
type Input interface {
	// InputType returns the input's type discriminator.
	InputType() string
	// InputActor returns the spec name of the actor that dispatches it.
	InputActor() string
}

// Model is an agent's pure machine and what the laws need to know of it.
// agentgen's FuzzTransitions fills it from decl and impl.
type Model[S any, I Input] struct {
	// Initial and Transition are the agent's machine (impl/agent).
	Initial    func() S
	Transition func(state S, input I) S
	// Admit, when set, runs before each transition, as the agent's
	// automata.WithAdmission step does: it returns the input to apply, or
	// an error that rejects it. A rejected input is skipped, as the machine
	// skips it; it is no failure. It must be deterministic here.
	Admit func(state S, input I) (I, error)
	// Invariant, when set, is checked on the initial state and after each
	// applied input: an error is a broken invariant.
	Invariant func(state S) error
	// Schema is the JSON Schema of the inputs (decl.InputSchema), from which
	// the inputs are drawn, and Decode the decoder that validates them
	// against it (decl.DecodeInput).
	Schema []byte
	Decode func(data []byte) (I, error)
	// Actors are the actors in the order of the spec, each with the
	// projection of its state (StateOfX); the union of their states is the
	// agent's, and is what the laws compare.
	Actors []Actor[S]
}

// Actor is an actor of a Model: its spec name and the projection of the
// agent's state on the actor's, StateOfX.
type Actor[S any] struct {
	Name  string
	State func(state S) any
}

// Law names a law of the method that a sequence of inputs broke.
type Law string

// The laws Run checks, in the order it checks them at each input.
const (
	NoPanic      Law = "no panic"
	OwnStateOnly Law = "each transition changes only its actor's state"
	Codec        Law = "the state round-trips its codec (JSON)"
	Invariant    Law = "invariant"
	Determinism  Law = "determinism"
)

// Step is one input of a sequence, as it was dispatched (before admission).
type Step struct {
	Actor string          // the spec name of the actor that dispatches it
	Type  string          // its type discriminator
	JSON  json.RawMessage // the input as DecodeInput reads it
	// Rejected is the admission step's error, when it rejected the input.
	Rejected string
}

// Violation is a law a sequence of inputs broke.
type Violation struct {
	Law Law
	// At is the position of the input in Sequence (1 is the first) after
	// which the law was broken; 0 is the initial state.
	At       int
	Detail   string
	Sequence []Step
	// Panic is what the code panicked with, when Law is NoPanic.
	Panic any
	// Shrunk, when not 0, is the length of the sequence Fuzz decoded, of
	// which Sequence is the shortest part it found that breaks Law.
	Shrunk int
}

// Stub says whether the violation is a stub agentgen wrote that still
// panics "not implemented: ...": a function not written yet, which Fuzz
// skips rather than fails on.
func (v *Violation) Stub() bool {
	s, ok := v.Panic.(string)
	return v.Law == NoPanic && ok && strings.HasPrefix(s, "not implemented: ")
}

// Error says which law broke where, and lists the sequence, one input a
// line as ReadSequence reads it: the position, the actor and the input's
// JSON.
func (v *Violation) Error() string {
	var b strings.Builder
	where := "the initial state"
	if v.At > 0 {
		s := v.Sequence[v.At-1]
		where = fmt.Sprintf("input %d (%s %s)", v.At, s.Actor, s.Type)
	}
	fmt.Fprintf(&b, "law broken: %s, at %s: %s\n", v.Law, where, v.Detail)
	shrunk := ""
	if v.Shrunk > 0 {
		shrunk = fmt.Sprintf(", shrunk from %d", v.Shrunk)
	}
	fmt.Fprintf(&b, "the sequence (%d inputs%s; one a line: position, actor, the input as JSON):\n", len(v.Sequence), shrunk)
	b.WriteString(FormatSequence(v.Sequence))
	return b.String()
}

// FormatSequence prints steps one a line, "<position> <actor> <JSON>", with
// "# rejected: <error>" after an input the admission step rejected.
func FormatSequence(steps []Step) string {
	var b strings.Builder
	for i, s := range steps {
		fmt.Fprintf(&b, "%d %s %s", i+1, s.Actor, s.JSON)
		if s.Rejected != "" {
			fmt.Fprintf(&b, " # rejected: %s", s.Rejected)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// ReadSequence reads the inputs of a sequence printed by FormatSequence (a
// Violation's Error): each line that starts with a position and an actor,
// decoded with decode. Other lines (the law, blank ones) are skipped.
func ReadSequence[I Input](text string, decode func([]byte) (I, error)) ([]I, error) {
	var out []I
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 16<<20)
	for line := 1; sc.Scan(); line++ {
		fields := strings.SplitN(strings.TrimSpace(sc.Text()), " ", 3)
		if len(fields) < 3 || !strings.HasPrefix(fields[2], "{") {
			continue
		}
		if _, err := strconv.Atoi(fields[0]); err != nil {
			continue
		}
		data, _, _ := strings.Cut(fields[2], " # rejected: ")
		in, err := decode([]byte(data))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if in.InputActor() != fields[1] {
			return nil, fmt.Errorf("line %d: input %s is dispatched by %s, not %s", line, in.InputType(), in.InputActor(), fields[1])
		}
		out = append(out, in)
	}
	return out, sc.Err()
}

// Fuzz runs the fuzz target of m: each fuzz input is decoded into a
// sequence of valid inputs (Sequence), and Run checks the laws on it; a
// violation fails the test with its law and the shortest part of its
// sequence that still breaks it (Shrink), and the fuzzer saves the input
// that made it under testdata/fuzz. Its seed corpus (the empty sequence,
// and each input type once) runs in a plain go test.
func Fuzz[S any, I Input](f *testing.F, m Model[S, I]) {
	f.Helper()
	p, err := compile(m)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range p.seeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		seq, err := p.sequence(data)
		if err != nil {
			t.Fatal(err)
		}
		if v := Run(m, seq); v != nil {
			if n := len(seq); n > 1 {
				if _, v = Shrink(m, seq, v); len(v.Sequence) < n {
					v.Shrunk = n
				}
			}
			if v.Stub() {
				t.Skipf("%v: write the function's body", v.Panic)
			}
			t.Fatal(v)
		}
	})
}

// Sequence decodes a fuzz input into a sequence of inputs of m, each drawn
// from its JSON Schema and validated by m.Decode: at most 16 inputs, each
// of a type its first byte chooses. A drawn value the decoder refuses
// (the generator cannot draw every pattern) is left out.
func Sequence[S any, I Input](m Model[S, I], data []byte) ([]I, error) {
	p, err := compile(m)
	if err != nil {
		return nil, err
	}
	return p.sequence(data)
}

// maxSequence bounds the inputs of a sequence.
const maxSequence = 16

type plan[S any, I Input] struct {
	m     Model[S, I]
	types []string // the input types, by actor in spec order, then as the schema lists them
	gen   *generator
	mu    sync.Mutex // guards gen.patterns
}

var plans sync.Map // schema bytes -> *schemaDoc

func compile[S any, I Input](m Model[S, I]) (*plan[S, I], error) {
	if m.Initial == nil || m.Transition == nil || m.Decode == nil {
		return nil, errors.New("modeltest: the Model needs Initial, Transition and Decode")
	}
	var doc *schemaDoc
	if d, ok := plans.Load(string(m.Schema)); ok {
		doc = d.(*schemaDoc)
	} else {
		doc = new(schemaDoc)
		if err := json.Unmarshal(m.Schema, doc); err != nil {
			return nil, fmt.Errorf("modeltest: reading the input schema: %w", err)
		}
		plans.Store(string(m.Schema), doc)
	}
	p := &plan[S, I]{m: m, gen: &generator{doc: doc, patterns: map[string]*regexp.Regexp{}}}
	seen := map[string]bool{}
	for _, a := range m.Actors {
		for _, t := range doc.Actors[a.Name] {
			if _, ok := doc.Inputs[t]; !ok {
				return nil, fmt.Errorf("modeltest: input %s of actor %s has no schema under \"inputs\"", t, a.Name)
			}
			if !seen[t] {
				seen[t] = true
				p.types = append(p.types, t)
			}
		}
	}
	if len(p.types) == 0 {
		return nil, errors.New("modeltest: the input schema lists no inputs of the Model's actors")
	}
	return p, nil
}

func (p *plan[S, I]) sequence(data []byte) ([]I, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	src := &source{data: data}
	var seq []I
	for !src.empty() && len(seq) < maxSequence {
		// One byte for the type, even of one type: each input takes a
		// byte, so that the loop ends.
		t := p.types[int(src.byte())%len(p.types)]
		v, err := p.gen.value(src, p.gen.doc.Inputs[t], 0)
		if err != nil {
			return nil, fmt.Errorf("modeltest: drawing input %s: %w", t, err)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("modeltest: encoding input %s: %w", t, err)
		}
		in, err := p.m.Decode(raw)
		if err != nil {
			continue
		}
		seq = append(seq, in)
	}
	return seq, nil
}

// seeds are the seed corpus: the empty sequence, and each input type
// once, with its smallest value, on the initial state.
func (p *plan[S, I]) seeds() [][]byte {
	seeds := [][]byte{{}}
	for i := range p.types {
		seeds = append(seeds, []byte{byte(i)})
	}
	return seeds
}

// Shrink returns the shortest sequence it finds, by leaving inputs out of
// v's one at a time, that still breaks v's law, and its violation.
func Shrink[S any, I Input](m Model[S, I], seq []I, v *Violation) ([]I, *Violation) {
	for changed := true; changed; {
		changed = false
		for i := 0; i < len(seq); i++ {
			shorter := slices.Delete(slices.Clone(seq), i, i+1)
			if w := Run(m, shorter); w != nil && w.Law == v.Law {
				seq, v, changed = shorter, w, true
				i--
			}
		}
	}
	return seq, v
}

// Run applies seq to m's initial state, twice, and checks the laws: no
// panic (in Initial, Admit, Transition or Invariant); after each input, the
// state of every actor but the one that dispatched it is unchanged (as
// JSON); the state encodes as JSON, and decodes and encodes again to the
// same bytes; the invariant holds; and the second run computes the same
// state at every position as the first (as JSON), with the same inputs
// rejected. An input Admit rejects is skipped. Run returns the first law
// broken, or nil.
//
// The codec's round trip, the dearest check, is made on the initial and
// the last state; when the last fails, the sequence is run again with it
// at every input, to name the first that breaks it.
func Run[S any, I Input](m Model[S, I], seq []I) *Violation {
	steps := make([]Step, len(seq))
	for i, in := range seq {
		data, err := json.Marshal(in)
		if err != nil {
			data, _ = json.Marshal(fmt.Sprintf("cannot encode: %v", err))
		}
		steps[i] = Step{Actor: in.InputActor(), Type: in.InputType(), JSON: data}
	}
	r := &runner[S, I]{m: m, seq: seq, steps: steps, states: make([][]byte, len(seq)+1), rejected: make([]bool, len(seq))}
	v := r.run(1, false)
	if v != nil && v.Law == Codec {
		if again := r.run(1, true); again != nil && again.At <= v.At {
			v = again
		}
	}
	if v == nil {
		v = r.run(2, false)
	}
	return v
}

// runner runs a sequence. The first run records, at each position, the
// state's JSON (states[at], nil when admission rejected input at) and
// whether admission rejected the input; the second compares with them.
type runner[S any, I Input] struct {
	m        Model[S, I]
	seq      []I
	steps    []Step
	states   [][]byte
	rejected []bool
	panic    any // what the code panicked with, for a NoPanic violation
}

func (r *runner[S, I]) fail(law Law, at int, format string, args ...any) *Violation {
	v := &Violation{Law: law, At: at, Detail: fmt.Sprintf(format, args...), Sequence: r.steps}
	if law == NoPanic {
		v.Panic = r.panic
	}
	return v
}

// run applies the sequence once: pass 1 checks the laws at each input
// (the codec's round trip at each one when everyStep is set, else at the
// first and last state), pass 2 determinism. The state is compared as the
// JSON of each actor's state, the union of which is the agent's.
func (r *runner[S, I]) run(pass int, everyStep bool) *Violation {
	m := r.m
	var state S
	if p := r.catch(func() { state = m.Initial() }); p != "" {
		return r.fail(NoPanic, 0, "Initial panicked: %s", p)
	}
	if v := r.check(state, 0, pass == 1, pass == 1); v != nil {
		return v
	}
	cur, v := r.encode(state, 0)
	if v != nil {
		return v
	}
	if pass == 1 {
		r.states[0] = bytes.Join(cur, []byte("\n"))
	} else if data := bytes.Join(cur, []byte("\n")); !bytes.Equal(data, r.states[0]) {
		return r.fail(Determinism, 0, "Initial returned another state the second time:\nfirst:  %s\nsecond: %s", clip(r.states[0]), clip(data))
	}
	for i, in := range r.seq {
		at := i + 1
		if m.Admit != nil {
			var err error
			admitted := in
			if p := r.catch(func() { admitted, err = m.Admit(state, in) }); p != "" {
				return r.fail(NoPanic, at, "Admit panicked: %s", p)
			}
			if pass == 1 {
				r.rejected[i] = err != nil
				r.steps[i].Rejected = ""
				if err != nil {
					r.steps[i].Rejected = err.Error()
				}
			} else if (err != nil) != r.rejected[i] {
				return r.fail(Determinism, at, "Admit rejected the input in one run and not in the other (%v)", err)
			}
			if err != nil {
				continue
			}
			in = admitted
		}
		var next S
		if p := r.catch(func() { next = m.Transition(state, in) }); p != "" {
			return r.fail(NoPanic, at, "Transition panicked: %s", p)
		}
		after, v := r.encode(next, at)
		if v != nil {
			return v
		}
		if pass == 1 {
			// cur was encoded before the transition ran, so that a write
			// into memory that another actor's state shares shows too.
			for j, a := range m.Actors {
				if a.Name != in.InputActor() && !bytes.Equal(cur[j], after[j]) {
					return r.fail(OwnStateOnly, at, "an input of %s changed the state of %s:\nbefore: %s\nafter:  %s", in.InputActor(), a.Name, clip(cur[j]), clip(after[j]))
				}
			}
		}
		if v := r.check(next, at, pass == 1, pass == 1 && (everyStep || at == len(r.seq))); v != nil {
			return v
		}
		data := bytes.Join(after, []byte("\n"))
		if pass == 1 {
			r.states[at] = data
		} else if !bytes.Equal(data, r.states[at]) {
			return r.fail(Determinism, at, "the same inputs gave another state the second time:\nfirst:  %s\nsecond: %s", clip(r.states[at]), clip(data))
		}
		state, cur = next, after
	}
	return nil
}

// encode returns the JSON of each actor's state, or of the whole state
// when the Model names no actors.
func (r *runner[S, I]) encode(state S, at int) ([][]byte, *Violation) {
	if len(r.m.Actors) == 0 {
		data, err := json.Marshal(state)
		if err != nil {
			return nil, r.fail(Codec, at, "the state does not encode as JSON: %v", err)
		}
		return [][]byte{data}, nil
	}
	out := make([][]byte, len(r.m.Actors))
	for j, a := range r.m.Actors {
		data, err := json.Marshal(a.State(state))
		if err != nil {
			return nil, r.fail(Codec, at, "the state of %s does not encode as JSON: %v", a.Name, err)
		}
		out[j] = data
	}
	return out, nil
}

// check checks the codec's round trip of state when roundTrip is set, and
// the invariant when first (the first pass) is.
func (r *runner[S, I]) check(state S, at int, first, roundTrip bool) *Violation {
	if roundTrip {
		data, err := json.Marshal(state)
		if err != nil {
			return r.fail(Codec, at, "the state does not encode as JSON: %v", err)
		}
		var back S
		if err := json.Unmarshal(data, &back); err != nil {
			return r.fail(Codec, at, "the state's JSON does not decode: %v\nstate: %s", err, clip(data))
		}
		again, err := json.Marshal(back)
		if err != nil {
			return r.fail(Codec, at, "the decoded state does not encode as JSON: %v", err)
		}
		if !bytes.Equal(data, again) {
			return r.fail(Codec, at, "the state decoded from its JSON encodes otherwise:\nstate:   %s\ndecoded: %s", clip(data), clip(again))
		}
	}
	if r.m.Invariant != nil && first {
		var err error
		if p := r.catch(func() { err = r.m.Invariant(state) }); p != "" {
			return r.fail(NoPanic, at, "Invariant panicked: %s", p)
		}
		if err != nil {
			return r.fail(Invariant, at, "%v", err)
		}
	}
	return nil
}

// catch runs f and returns what it panicked with, and where, or "".
func (r *runner[S, I]) catch(f func()) (panicked string) {
	defer func() {
		if p := recover(); p != nil {
			r.panic = p
			panicked = fmt.Sprintf("%v\n%s", p, trimStack(debug.Stack()))
		}
	}()
	f()
	return ""
}

// trimStack keeps the frames of a panic's stack below the panic itself and
// above modeltest's own.
func trimStack(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	start := 0
	for i, l := range lines {
		if strings.HasPrefix(l, "panic(") {
			start = i + 2
			break
		}
	}
	end := len(lines)
	for i := start; i < len(lines); i++ {
		if strings.Contains(lines[i], "automata/modeltest.(*runner") {
			end = i
			break
		}
	}
	if start >= end {
		return string(stack)
	}
	return strings.Join(slices.Clip(lines[start:end]), "\n")
}

// clip shortens a state's JSON for a message.
func clip(data []byte) string {
	const max = 2000
	if len(data) <= max {
		return string(data)
	}
	return string(data[:max]) + fmt.Sprintf("... (%d bytes)", len(data))
}
