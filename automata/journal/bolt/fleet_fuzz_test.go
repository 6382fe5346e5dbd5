package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/journal"
)

// FuzzFleetMeta: decodeAgentMeta never panics; what it refuses is a
// *CorruptError naming the file and the agent; what it accepts reads back
// the same once written again.
func FuzzFleetMeta(f *testing.F) {
	good, err := encodeAgentMeta(journal.AgentInfo{Owner: "ann", Created: time.Date(2026, 11, 25, 10, 0, 0, 5, time.UTC)})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(good),
		`{"owner":"","created":"0001-01-01T00:00:00Z"}`,
		`{"owner":"bob","created":"2026-01-02T03:04:05.123456789+05:30"}`,
		` {"created":"2026-01-02T03:04:05Z","owner":"bob"} ` + "\n",
		``, `null`, `[]`, `{}`, `"ann"`,
		`{"owner":"ann"}`,
		`{"owner":null,"created":"2026-01-02T03:04:05Z"}`,
		`{"owner":"ann","created":"2026-01-02T03:04:05Z","extra":1}`,
		`{"owner":"ann","created":"2026-01-02T03:04:05Z"}{}`,
		`{"owner":"ann","created":"2026-01-02T03:04:05Z"}}`,
		`{"owner":"ann","created":"yesterday"}`,
		`{"owner":"\xff\xfe","created":"2026-01-02T03:04:05Z"}`,
		`{"owner":"ann","created":"2026-01-02T03:04:05Z"`,
		`{"owner":"ann","created":"2026-01-02T03:04:05Z","fork":{"agent":"a-1","seq":12}}`,
		`{"owner":"ann","created":"2026-01-02T03:04:05Z","fork":{"agent":"a 1","seq":12}}`,
		`{"owner":"ann","created":"2026-01-02T03:04:05Z","fork":{"agent":"a","seq":0}}`,
		`{"owner":"ann","created":"2026-01-02T03:04:05Z","fork":{"agent":"a"}}`,
		`{"owner":"ann","created":"2026-01-02T03:04:05Z","fork":null}`,
		`{"owner":"ann","created":"2026-01-02T03:04:05Z","delegated":{"agent":"p","job":"work/1","depth":1}}`,
		`{"owner":"ann","created":"2026-01-02T03:04:05Z","delegated":{"agent":"p","job":"","depth":1}}`,
		`{"owner":"ann","created":"2026-01-02T03:04:05Z","delegated":{"agent":"p","job":"k","depth":0}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := decodeAgentMeta("fleet.db", "agent-7", data)
		if err != nil {
			var ce *journal.CorruptError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), `fleet.db: agent "agent-7": its meta`) {
				t.Fatalf("decodeAgentMeta(%q) = %v, want a *CorruptError naming the file and the agent", data, err)
			}
			return
		}
		again, err := encodeAgentMeta(info)
		if err != nil {
			t.Fatalf("decoded %+v from %q, which does not encode: %v", info, data, err)
		}
		back, err := decodeAgentMeta("fleet.db", "agent-7", again)
		if err != nil || back.Owner != info.Owner || !back.Created.Equal(info.Created) || !reflect.DeepEqual(back.Fork, info.Fork) || !reflect.DeepEqual(back.Delegated, info.Delegated) {
			t.Fatalf("decoded %+v from %q, written as %q, which reads back as %+v, %v", info, data, again, back, err)
		}
	})
}

// TestFleetMetaStrict: the meta decoder accepts what encodeAgentMeta writes,
// and refuses, saying why, what it never writes.
func TestFleetMetaStrict(t *testing.T) {
	created := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	good, _ := encodeAgentMeta(journal.AgentInfo{Owner: "ann", Created: created})
	if info, err := decodeAgentMeta("f.db", "a", good); err != nil || info.Owner != "ann" || !info.Created.Equal(created) {
		t.Fatalf("decodeAgentMeta(%s) = %+v, %v", good, info, err)
	}
	for _, c := range []struct{ data, want string }{
		{``, "is not a JSON object"},
		{`null`, "is not a JSON object"},
		{`[1]`, "is not a JSON object"},
		{`{"owner":"ann"`, "is not an AgentInfo"},
		{`{"owner":"ann","created":"2026-01-02T03:04:05Z","x":1}`, `unknown field "x"`},
		{`{"owner":"ann","created":"2026-01-02T03:04:05Z"} {}`, "more than one JSON object"},
		{`{"created":"2026-01-02T03:04:05Z"}`, "has no owner"},
		{`{"owner":"ann","created":null}`, "has no created time"},
		{`{"owner":"ann","created":"2026-13-02T03:04:05Z"}`, "is not an AgentInfo"},
	} {
		_, err := decodeAgentMeta("f.db", "a", []byte(c.data))
		var ce *journal.CorruptError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `f.db: agent "a"`) {
			t.Errorf("decodeAgentMeta(%q) = %v, want a *CorruptError naming the agent and saying %q", c.data, err, c.want)
		}
	}
}

// FuzzFleetLogEntry: decodeLogEntry never panics; what it refuses is a
// *CorruptError naming the file; what it accepts is written back as it was.
func FuzzFleetLogEntry(f *testing.F) {
	for _, records := range [][]journal.Record{
		{{Seq: 1, Data: []byte(`{"note":"hi"}`)}},
		{{Seq: 7, Data: nil}, {Seq: 8, Data: []byte("x")}, {Seq: 9, Data: make([]byte, 300)}},
	} {
		entry := appendLogEntry(nil, 42, "agent-7", records)
		f.Add(entry[:8+len("agent-7")], entry[8+len("agent-7"):])
	}
	f.Add([]byte("short"), []byte{})
	f.Add(append(seqKey(1), 'a'), []byte{0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		id, records, err := decodeLogEntry("fleet.db", key, value)
		if err != nil {
			var ce *journal.CorruptError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "fleet.db: ") {
				t.Fatalf("decodeLogEntry = %v, want a *CorruptError naming the file", err)
			}
			return
		}
		if again := appendLogEntry(nil, binary.BigEndian.Uint64(key), id, records); !bytes.Equal(again, append(bytes.Clone(key), value...)) {
			t.Fatalf("decoded %d records of agent %q from %x %x, which write back as %x", len(records), id, key, value, again)
		}
	})
}
