package journal_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/moora-go/moora/automata/journal"
)

// marshaled is an input whose MarshalJSON writes out, or fails with err.
type marshaled struct {
	out string
	err error
}

func (m marshaled) MarshalJSON() ([]byte, error) { return []byte(m.out), m.err }

// TestJSONEncodesAMarshalerAsMarshalDoes: the JSON codec takes a
// MarshalJSON's output as it is only when json.Marshal would write it
// unchanged; otherwise what it journals, and the error it returns, are
// json.Marshal's.
func TestJSONEncodesAMarshalerAsMarshalDoes(t *testing.T) {
	c := journal.JSON[struct{}, json.Marshaler](nil)
	for _, in := range []marshaled{
		{out: `{"type":"a","text":"plain words"}`},
		{out: `{"type":"a","text":"\u003cb\u003e"}`},
		{out: `{"type": "a"}`},                    // spaces: Marshal compacts
		{out: "{\"type\":\"a\"}\n"},               // a newline after it
		{out: `{"text":"<b>&"}`},                  // Marshal escapes HTML
		{out: "{\"text\":\"\u2028\"}"},            // and U+2028
		{out: `{"type":`},                         // not JSON: Marshal's error
		{out: `{"a":1}{"b":2}`},                   // two values
		{out: ``},                                 // nothing
		{out: `{"a":1}`, err: errors.New("boom")}, // MarshalJSON fails
	} {
		got, gotErr := c.EncodeInput(in)
		want, wantErr := json.Marshal(in)
		if !bytes.Equal(got, want) || (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Errorf("EncodeInput of MarshalJSON %q (err %v) = %q, %v; json.Marshal gives %q, %v", in.out, in.err, got, gotErr, want, wantErr)
		}
	}
	// MarshalJSON is called once, as Marshal calls it, whether its output
	// is taken as it is or compacted.
	for _, out := range []string{`{"n":1}`, `{"n": 1}`} {
		calls := 0
		counted := counting{out: out, calls: &calls}
		if got, err := c.EncodeInput(counted); err != nil || string(got) != `{"n":1}` || calls != 1 {
			t.Errorf("EncodeInput of MarshalJSON %q = %q, %v, with %d calls of it; want {\"n\":1} and one call", out, got, err, calls)
		}
	}
	// The bytes returned are the codec's own, as Marshal's are.
	out := []byte(`{"type":"a"}`)
	got, err := c.EncodeInput(sharedBytes{out})
	if err != nil {
		t.Fatal(err)
	}
	out[2] = 'X'
	if string(got) != `{"type":"a"}` {
		t.Errorf("EncodeInput returned the MarshalJSON's own slice: %q after it was written to", got)
	}
	// A nil pointer is written as null, as Marshal writes it, without
	// calling its MarshalJSON.
	var nilPtr *marshaled
	if got, err := c.EncodeInput(nilPtr); err != nil || string(got) != "null" {
		t.Errorf("EncodeInput of a nil *marshaled = %q, %v; want null", got, err)
	}
}

type sharedBytes struct{ b []byte }

// counting writes out and counts its calls.
type counting struct {
	out   string
	calls *int
}

func (c counting) MarshalJSON() ([]byte, error) {
	*c.calls++
	return []byte(c.out), nil
}

func (s sharedBytes) MarshalJSON() ([]byte, error) { return s.b, nil }

// BenchmarkEncodeInput: a starter agent's message through the JSON codec,
// which takes its generated MarshalJSON's output as it is, against
// json.Marshal, which checks and compacts that output again.
func BenchmarkEncodeInput(b *testing.B) {
	in := starterMessage(2)
	b.Run("codec", func(b *testing.B) {
		c := starterCodec()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.EncodeInput(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// rawInput is a json.Marshaler that writes its bytes.
type rawInput []byte

func (r rawInput) MarshalJSON() ([]byte, error) { return r, nil }

// FuzzJSONEncodesAsMarshal: whatever a MarshalJSON writes, the JSON codec
// journals the bytes json.Marshal would, or fails with its error.
func FuzzJSONEncodesAsMarshal(f *testing.F) {
	for _, seed := range []string{`{"type":"a"}`, `{"a": [1, 2]}`, "\"<\u2028>\"\n", `{"a":`, ``, `1 2`, `"\u00e9"`} {
		f.Add([]byte(seed))
	}
	c := journal.JSON[struct{}, rawInput](nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		got, gotErr := c.EncodeInput(rawInput(data))
		want, wantErr := json.Marshal(rawInput(data))
		if !bytes.Equal(got, want) || (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("EncodeInput of MarshalJSON %q = %q, %v; json.Marshal gives %q, %v", data, got, gotErr, want, wantErr)
		}
	})
}
