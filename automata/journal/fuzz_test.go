package journal_test

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/moora-go/moora/automata/journal"
)

func TestJSONGobRoundTripsAndRejectsGarbage(t *testing.T) {
	c := journal.JSONGob[state, input](nil)
	s := state{Notes: []string{"a", "b"}, Pending: []int{3}, Answers: []string{"x"}}
	data, err := c.EncodeState(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := c.DecodeState(data)
	if err != nil || !reflect.DeepEqual(back, s) {
		t.Fatalf("round trip = %+v, %v", back, err)
	}
	if _, err := c.DecodeState(append(data, 1, 2, 3)); err == nil {
		t.Error("trailing data accepted")
	}
	if _, err := c.DecodeState(data[:len(data)/2]); err == nil {
		t.Error("truncated state accepted")
	}
	in, err := c.EncodeInput(input{Note: "hi"})
	if err != nil || string(in) != `{"note":"hi"}` {
		t.Fatalf("inputs are not journaled as JSON: %s, %v", in, err)
	}
}

func TestReopenWithJSONGob(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	opts := journal.Options[state, input]{Codec: journal.JSONGob[state, input](nil), SnapshotEvery: 4}
	m := mustOpen(t, path, opts)
	ins := notes(0, 10)
	dispatchAll(t, m, ins)
	mustClose(t, m)
	m = mustOpen(t, path, opts)
	defer mustClose(t, m)
	if got := m.Current(); !reflect.DeepEqual(got.Notes, fold(ins).Notes) {
		t.Fatalf("reopened notes = %v", got.Notes)
	}
}
