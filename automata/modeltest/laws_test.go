package modeltest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/modeltest"
)

// A hand-made agent of two actors: a counter that adds, and a log that
// records words. Each test breaks one law in it.

type state struct {
	Count int      `json:"count"`
	Words []string `json:"words"`
}

type input interface {
	modeltest.Input
}

type add struct {
	N int `json:"n"`
}

func (add) InputType() string  { return "add" }
func (add) InputActor() string { return "counter" }
func (a add) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf(`{"type":"add","n":%d}`, a.N)), nil
}

type say struct {
	Word string `json:"word"`
}

func (say) InputType() string  { return "say" }
func (say) InputActor() string { return "log" }
func (s say) MarshalJSON() ([]byte, error) {
	w, _ := json.Marshal(s.Word)
	return []byte(`{"type":"say","word":` + string(w) + `}`), nil
}

const schema = `{
  "actors": {"counter": ["add"], "log": ["say"]},
  "inputs": {
    "add": {"type": "object", "properties": {"type": {"const": "add"}, "n": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["type", "n"]},
    "say": {"type": "object", "properties": {"type": {"const": "say"}, "word": {"type": "string", "enum": ["hi", "bye"]}}, "required": ["type", "word"]}
  }
}`

func decode(data []byte) (input, error) {
	var head struct {
		Type string  `json:"type"`
		N    *int    `json:"n"`
		Word *string `json:"word"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, err
	}
	switch {
	case head.Type == "add" && head.N != nil && *head.N >= 0 && *head.N <= 9:
		return add{N: *head.N}, nil
	case head.Type == "say" && head.Word != nil && (*head.Word == "hi" || *head.Word == "bye"):
		return say{Word: *head.Word}, nil
	}
	return nil, fmt.Errorf("invalid input %s", data)
}

func good() modeltest.Model[state, input] {
	return modeltest.Model[state, input]{
		Initial: func() state { return state{Words: []string{}} },
		Transition: func(s state, in input) state {
			switch in := in.(type) {
			case add:
				s.Count += in.N
			case say:
				s.Words = append(s.Words[:len(s.Words):len(s.Words)], in.Word)
			}
			return s
		},
		Schema: []byte(schema),
		Decode: decode,
		Actors: []modeltest.Actor[state]{
			{Name: "counter", State: func(s state) any { return s.Count }},
			{Name: "log", State: func(s state) any { return s.Words }},
		},
	}
}

var seq = []input{add{N: 1}, say{Word: "hi"}, add{N: 2}, say{Word: "bye"}, add{N: 0}}

func TestLaws(t *testing.T) {
	var leaked []string
	clock := 0
	tests := []struct {
		name    string
		breakIt func(m *modeltest.Model[state, input])
		law     modeltest.Law
		at      int
	}{
		{"a lawful agent", func(*modeltest.Model[state, input]) {}, "", 0},
		{"a transition that panics", func(m *modeltest.Model[state, input]) {
			tr := m.Transition
			m.Transition = func(s state, in input) state {
				if _, ok := in.(add); ok && s.Count == 3 {
					panic("three")
				}
				return tr(s, in)
			}
		}, modeltest.NoPanic, 5},
		{"a transition of the counter that writes the log", func(m *modeltest.Model[state, input]) {
			tr := m.Transition
			m.Transition = func(s state, in input) state {
				s = tr(s, in)
				if in, ok := in.(add); ok && in.N == 2 {
					s.Words = append(s.Words, "two")
				}
				return s
			}
		}, modeltest.OwnStateOnly, 3},
		{"a transition that reads a clock", func(m *modeltest.Model[state, input]) {
			tr := m.Transition
			m.Transition = func(s state, in input) state {
				s = tr(s, in)
				if _, ok := in.(say); ok {
					clock++
					s.Words = append(s.Words[:len(s.Words):len(s.Words)], fmt.Sprint(clock))
				}
				return s
			}
		}, modeltest.Determinism, 2},
		{"an initial state that is shared", func(m *modeltest.Model[state, input]) {
			m.Initial = func() state { leaked = append(leaked, "x"); return state{Words: leaked} }
		}, modeltest.Determinism, 0},
		{"a false invariant", func(m *modeltest.Model[state, input]) {
			m.Invariant = func(s state) error {
				if s.Count > 2 {
					return errors.New("count above 2")
				}
				return nil
			}
		}, modeltest.Invariant, 3},
		{"admission that rejects is no failure", func(m *modeltest.Model[state, input]) {
			m.Admit = func(s state, in input) (input, error) {
				if _, ok := in.(say); ok {
					return nil, errors.New("no words")
				}
				return in, nil
			}
			m.Invariant = func(s state) error {
				if len(s.Words) > 0 {
					return errors.New("a rejected word was applied")
				}
				return nil
			}
		}, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := good()
			tc.breakIt(&m)
			v := modeltest.Run(m, seq)
			if tc.law == "" {
				if v != nil {
					t.Fatalf("Run: %v", v)
				}
				return
			}
			if v == nil {
				t.Fatalf("Run found nothing, want %q at %d", tc.law, tc.at)
			}
			if v.Law != tc.law || v.At != tc.at {
				t.Fatalf("Run found %q at %d, want %q at %d:\n%v", v.Law, v.At, tc.law, tc.at, v)
			}
			msg := v.Error()
			if !strings.Contains(msg, "law broken: "+string(tc.law)) {
				t.Errorf("the message does not name the law:\n%s", msg)
			}
			// The printed sequence reads back as the sequence.
			back, err := modeltest.ReadSequence(msg, decode)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(back) != fmt.Sprint(seq) {
				t.Errorf("ReadSequence read %v, want %v", back, seq)
			}
		})
	}
}

// TestSequenceIsDeterministic: the same bytes give the same inputs, and
// every byte string gives inputs within their schema.
func TestSequenceIsDeterministic(t *testing.T) {
	m := good()
	data := []byte("some bytes the fuzzer made, 0123456789")
	a, err := modeltest.Sequence(m, data)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := modeltest.Sequence(m, data)
	if fmt.Sprint(a) != fmt.Sprint(b) || len(a) == 0 {
		t.Fatalf("two decodings of the same bytes: %v and %v", a, b)
	}
	if empty, _ := modeltest.Sequence(m, nil); len(empty) != 0 {
		t.Errorf("no bytes gave %v, want no inputs", empty)
	}
}

// TestStub: a stub agentgen wrote, still panicking "not implemented", is
// told apart from a panic of code that was written.
func TestStub(t *testing.T) {
	for _, tc := range []struct {
		panic any
		stub  bool
	}{
		{"not implemented: counter/add", true},
		{"index out of range", false},
		{errors.New("not implemented: counter/add"), false},
	} {
		m := good()
		m.Transition = func(state, input) state { panic(tc.panic) }
		v := modeltest.Run(m, seq)
		if v == nil || v.Law != modeltest.NoPanic || v.Stub() != tc.stub {
			t.Errorf("panic(%#v): Run returned %v, want a panic with Stub() %v", tc.panic, v, tc.stub)
		}
	}
}

// TestShrink: the sequence a violation names is cut down to the inputs
// that break the law.
func TestShrink(t *testing.T) {
	m := good()
	m.Invariant = func(s state) error {
		if s.Count > 2 {
			return errors.New("count above 2")
		}
		return nil
	}
	long := []input{say{Word: "hi"}, add{N: 1}, say{Word: "bye"}, add{N: 0}, add{N: 2}, say{Word: "hi"}, add{N: 5}}
	v := modeltest.Run(m, long)
	if v == nil {
		t.Fatal("Run found nothing")
	}
	short, v := modeltest.Shrink(m, long, v)
	if fmt.Sprint(short) != fmt.Sprint([]input{add{N: 5}}) || v.Law != modeltest.Invariant || v.At != 1 || len(v.Sequence) != 1 {
		t.Errorf("Shrink gave %v, %+v; want [add 5] breaking the invariant at 1", short, v)
	}
}
