package devpanel

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/journal"
)

// TestDiff: the JSON Patch of a change, as the timeline shows it.
func TestDiff(t *testing.T) {
	type s struct {
		A []int           `json:"a"`
		M map[string]int  `json:"m"`
		P *string         `json:"p"`
		N int             `json:"n"`
		O map[string]bool `json:"o,omitempty"`
	}
	x := "x"
	cases := []struct {
		name          string
		before, after s
		want          string
	}{
		{"nothing", s{N: 1}, s{N: 1}, `[]`},
		{"a first element of a nil slice", s{}, s{A: []int{1}}, `[{"op":"add","path":"/a/-","value":1}]`},
		{"grown", s{A: []int{1}}, s{A: []int{1, 2, 3}}, `[{"op":"add","path":"/a/-","value":2},{"op":"add","path":"/a/-","value":3}]`},
		{"shrunk from the end", s{A: []int{1, 2, 3}}, s{A: []int{1}}, `[{"op":"remove","path":"/a/2"},{"op":"remove","path":"/a/1"}]`},
		{"an element changed", s{A: []int{1, 2}}, s{A: []int{1, 5}}, `[{"op":"replace","path":"/a/1","value":5}]`},
		{"map keys, escaped", s{M: map[string]int{"a/b": 1, "c~": 2}}, s{M: map[string]int{"c~": 3, "d": 4}}, `[{"op":"remove","path":"/m/a~1b"},{"op":"replace","path":"/m/c~0","value":3},{"op":"add","path":"/m/d","value":4}]`},
		{"to null", s{P: &x}, s{}, `[{"op":"replace","path":"/p","value":null}]`},
		{"an omitted field appears", s{}, s{O: map[string]bool{"k": true}}, `[{"op":"add","path":"/o","value":{"k":true}}]`},
	}
	for _, c := range cases {
		ops, err := Diff(c.before, c.after)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(ops)
		if string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// FuzzParseEventID: an id is read back only as the panel writes it, and
// garbage gets an error, never a panic.
func FuzzParseEventID(f *testing.F) {
	for _, s := range []string{"0", "1", "42.3", "18446744073709551615", "1.0", "01", "", ".", "1.2.3", "-1", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pos, err := parseEventID(s)
		if err != nil {
			return
		}
		if got := (entry{seq: pos.seq, n: pos.n}).id(); got != s {
			t.Fatalf("%q read as %+v, written back as %q", s, pos, got)
		}
	})
}

// TestRowCostFollowsTheChange: the timeline's row of an input costs what
// the input changed, not the state, which grows with the history: one
// message more after 2,000 costs the same as after 10 (the diff on the
// JSON of both states cost them whole, twice, per input).
func TestRowCostFollowsTheChange(t *testing.T) {
	p := &Panel[decl.AgentState, decl.AgentInput]{}
	rowBytes := func(history int) uint64 {
		var s decl.AgentState
		for i := range history {
			s.UserMessages = automata.Append(s.UserMessages, decl.UserMessage{ID: fmt.Sprint("m", i), Content: strings.Repeat("a chat message ", 10), Timestamp: int64(i)})
		}
		in := decl.SendUserMessage{ID: "new", Content: "one more", Timestamp: int64(history)}
		after := s
		after.UserMessages = automata.Append(s.UserMessages, decl.UserMessage{ID: in.ID, Content: in.Content, Timestamp: in.Timestamp})
		e := journal.Entry[decl.AgentInput]{Seq: uint64(history + 1), Input: in}
		var before, done runtime.MemStats
		runtime.ReadMemStats(&before)
		const runs = 20
		for range runs {
			if _, err := p.row(e, s, after); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&done)
		return (done.TotalAlloc - before.TotalAlloc) / runs
	}
	short, long := rowBytes(10), rowBytes(2000)
	t.Logf("a row allocates %d bytes after 10 messages, %d after 2,000", short, long)
	if long > 2*short {
		t.Errorf("a row after 2,000 messages allocates %d bytes, after 10 %d: its cost grows with the state", long, short)
	}
}
