package jetstream

import (
	"reflect"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/moora-go/moora/automata/journal"
	"github.com/nats-io/nats.go"
)

// FuzzParseMessage: the headers of a journal message read back from the
// server are a record, an epoch record, or a clear error; never a panic, and
// a record's number is exactly what its header says.
func FuzzParseMessage(f *testing.F) {
	f.Add("7", "", "", "")
	f.Add("", "12", "host-a", "3")
	f.Add("007", "", "", "")
	f.Add("18446744073709551616", "", "", "")
	f.Add("1", "2", "h", "0")
	f.Add("", "", "", "")
	f.Fuzz(func(t *testing.T, seq, epoch, owner, last string) {
		h := nats.Header{}
		for name, v := range map[string]string{hdrSeq: seq, hdrEpoch: epoch, hdrOwner: owner, hdrLast: last} {
			if v != "" {
				h.Set(name, v)
			}
		}
		m, err := parseMessage(h)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		switch m.kind {
		case 'r':
			if seq == "" || epoch != "" || strconv.FormatUint(m.seq, 10) != seq || m.seq == 0 {
				t.Fatalf("record %d from %q (epoch %q)", m.seq, seq, epoch)
			}
		case 'e':
			if seq != "" || strconv.FormatUint(m.epoch, 10) != epoch || strconv.FormatUint(m.seq, 10) != last || m.owner != owner || owner == "" {
				t.Fatalf("epoch %+v from %q %q %q", m, epoch, owner, last)
			}
		default:
			t.Fatalf("kind %q", m.kind)
		}
	})
}

func TestParseMessageRejectsGarbage(t *testing.T) {
	tests := []struct {
		name string
		h    nats.Header
		want string
	}{
		{"no header", nats.Header{}, "neither"},
		{"not a number", nats.Header{hdrSeq: {"x1"}}, "not a decimal number"},
		{"leading zero", nats.Header{hdrSeq: {"01"}}, "not a decimal number"},
		{"sign", nats.Header{hdrSeq: {"+1"}}, "not a decimal number"},
		{"overflow", nats.Header{hdrSeq: {"18446744073709551616"}}, "out of range"},
		{"zero", nats.Header{hdrSeq: {"0"}}, "is 0"},
		{"twice", nats.Header{hdrSeq: {"1", "2"}}, "2 Moora-Seq headers"},
		{"both kinds", nats.Header{hdrSeq: {"1"}, hdrEpoch: {"2"}}, "both"},
		{"epoch without owner", nats.Header{hdrEpoch: {"2"}, hdrLast: {"0"}}, "Moora-Owner"},
		{"epoch without last", nats.Header{hdrEpoch: {"2"}, hdrOwner: {"h"}}, "Moora-Last"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseMessage(tt.h)
			if err == nil || !contains(err.Error(), tt.want) {
				t.Fatalf("parseMessage(%v) = %v, want an error containing %q", tt.h, err, tt.want)
			}
		})
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// FuzzFleetInfo: the value of an agent's key read back from the server is
// an AgentInfo, which encodes to a value that decodes to it again, or a
// clear error; never a panic. Every AgentInfo with a valid owner encodes and
// decodes to itself.
func FuzzFleetInfo(f *testing.F) {
	for _, seed := range []string{
		`{"owner":"ann","created":"2026-11-25T10:00:00Z"}`,
		`{"created":"2026-01-02T03:04:05.000000006+01:00","owner":""}`,
		`{"owner":"ann","created":"0001-01-01T00:00:00Z"} `,
		`{"owner":"ann"}`,
		`{"owner":"ann","created":"2026-11-25T10:00:00Z","x":1}`,
		`{"owner":"ann","owner":"bob","created":"2026-11-25T10:00:00Z"}`,
		`{"owner":null,"created":"2026-11-25T10:00:00Z"}`,
		`{"owner":1,"created":"2026-11-25T10:00:00Z"}`,
		`{"owner":{},"created":"2026-11-25T10:00:00Z"}`,
		`{"owner":"ann","created":"yesterday"}`,
		`{"owner":"ann","created":"2026-11-25T10:00:00Z"}{}`,
		`{"owner":"ann","created":"2026-11-25T10:00:00Z"`,
		`{"Owner":"ann","created":"2026-11-25T10:00:00Z"}`,
		`{"owner":"\u00e9\ud800","created":"9999-12-31T23:59:59.999999999-23:59"}`,
		`[]`, `null`, `""`, ``,
		`{"owner":"ann","created":"2026-11-25T10:00:00Z","fork":{"agent":"a-1","seq":12}}`,
		`{"owner":"ann","fork":{"agent":"a-1","seq":12},"created":"2026-11-25T10:00:00Z","fork":{"agent":"a-1","seq":12}}`,
		`{"owner":"ann","created":"2026-11-25T10:00:00Z","fork":{"agent":"a","seq":-1}}`,
		`{"owner":"ann","created":"2026-11-25T10:00:00Z","fork":[]}`,
		`{"owner":"ann","created":"2026-11-25T10:00:00Z","delegated":{"agent":"p","job":"work/1","depth":1}}`,
		`{"owner":"ann","delegated":{"agent":"p","job":"w","depth":3},"created":"2026-11-25T10:00:00Z","delegated":{"agent":"p","job":"w","depth":3}}`,
	} {
		f.Add([]byte(seed), "ann", int64(0))
	}
	f.Add([]byte(`{}`), "\xff", int64(-1))
	f.Fuzz(func(t *testing.T, data []byte, owner string, nanos int64) {
		info, err := decodeAgentInfo(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
		} else {
			enc, err := encodeAgentInfo(info)
			if err != nil {
				t.Fatalf("%q decodes to %+v, which does not encode: %v", data, info, err)
			}
			again, err := decodeAgentInfo(enc)
			if err != nil || again.Owner != info.Owner || !again.Created.Equal(info.Created) || !reflect.DeepEqual(again.Fork, info.Fork) || !reflect.DeepEqual(again.Delegated, info.Delegated) {
				t.Fatalf("%q decodes to %+v, encoded as %q, which decodes to %+v, %v", data, info, enc, again, err)
			}
		}
		if !utf8.ValidString(owner) {
			return // JSON replaces the bytes
		}
		in := journal.AgentInfo{Owner: owner, Created: time.Unix(0, nanos)}
		enc, err := encodeAgentInfo(in)
		if err != nil {
			t.Fatalf("%+v does not encode: %v", in, err)
		}
		out, err := decodeAgentInfo(enc)
		if err != nil || out.Owner != in.Owner || !out.Created.Equal(in.Created) {
			t.Fatalf("%+v encoded as %q decodes to %+v, %v", in, enc, out, err)
		}
	})
}

// FuzzMessageRecords: a record message with any Moora-Count and data is
// its records or a clear error, never a panic; the records a group holds
// are consecutive from its Moora-Seq and fill its data exactly; and any
// list of records packs into a group that unpacks to them.
func FuzzMessageRecords(f *testing.F) {
	f.Add("1", "", []byte("x"))
	f.Add("5", "3", []byte("\x01a\x01b\x01c"))
	f.Add("5", "3", []byte("\x01a\x01b"))
	f.Add("5", "2", []byte("\x01a\x01b\x00"))
	f.Add("5", "2", []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"))
	f.Add("18446744073709551615", "2", []byte("\x00\x00"))
	f.Add("1", "1", []byte(""))
	f.Add("1", "1001", []byte(""))
	f.Fuzz(func(t *testing.T, seq, count string, data []byte) {
		h := nats.Header{}
		h.Set(hdrSeq, seq)
		if count != "" {
			h.Set(hdrCount, count)
		}
		records, err := MessageRecords(h, data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		first, _ := strconv.ParseUint(seq, 10, 64)
		for i, r := range records {
			if r.Seq != first+uint64(i) {
				t.Fatalf("record %d has seq %d, want %d", i, r.Seq, first+uint64(i))
			}
		}
		if count == "" && (len(records) != 1 || string(records[0].Data) != string(data)) {
			t.Fatalf("a record message read as %d records", len(records))
		}
		if count != "" {
			if strconv.Itoa(len(records)) != count {
				t.Fatalf("%d records of a group of %s", len(records), count)
			}
			packed, ok := packGroup(records)
			if !ok || string(packed) != string(data) {
				t.Fatalf("the group's records pack to %q, not its data %q", packed, data)
			}
		}
	})
}

func TestGroupRejectsGarbage(t *testing.T) {
	tests := []struct {
		name  string
		count string
		data  string
		want  string
	}{
		{"count 1", "1", "x", "want 2 to 1000"},
		{"count 0", "0", "", "want 2 to 1000"},
		{"too many", "1001", "", "want 2 to 1000"},
		{"short", "3", "\x01a\x01b", "record 3 of 3"},
		{"long", "2", "\x01a\x01bc", "1 bytes after the 2 records"},
		{"length past the end", "2", "\x01a\x05b", "5 bytes, but 1 follow"},
		{"bad length", "2", "\x01a\xff", "a bad length at byte 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := nats.Header{}
			h.Set(hdrSeq, "7")
			h.Set(hdrCount, tt.count)
			_, err := MessageRecords(h, []byte(tt.data))
			if err == nil || !contains(err.Error(), tt.want) {
				t.Fatalf("MessageRecords(count %s, %q) = %v, want an error containing %q", tt.count, tt.data, err, tt.want)
			}
		})
	}
}

// TestParsePubAck: the acknowledgement's fast reading takes the sequence of
// a successful one only, and leaves anything else to encoding/json.
func TestParsePubAck(t *testing.T) {
	for _, c := range []struct {
		data string
		seq  uint64
		ok   bool
	}{
		{`{"stream":"MOORA_JOURNAL","seq":42}`, 42, true},
		{`{"stream":"MOORA_JOURNAL","domain":"hub","seq":7}`, 7, true},
		{`{"stream":"MOORA_JOURNAL","seq":9, "duplicate": true}`, 9, true},
		{`{"stream":"MOORA_JOURNAL","seq":18446744073709551615}`, 18446744073709551615, true},
		{`{"stream":"MOORA_JOURNAL","seq":18446744073709551616}`, 0, false},
		{`{"stream":"MOORA_JOURNAL","seq":}`, 0, false},
		{`{"stream":"MOORA_JOURNAL","seq":12`, 0, false},
		{`{"stream":"","seq":3}`, 0, false},
		{`{"stream":"MOORA_JOURNAL","seq":3,"seq":4}`, 0, false},
		{`{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 5"},"stream":"MOORA_JOURNAL","seq":0}`, 0, false},
		{`{"stream":"MOORA_JOURNAL","error":{"code":503},"seq":0}`, 0, false},
		{`{"seq":3,"stream":"MOORA_JOURNAL"}`, 0, false},
		{``, 0, false},
	} {
		seq, ok := parsePubAck([]byte(c.data))
		if seq != c.seq || ok != c.ok {
			t.Errorf("parsePubAck(%s) = %d, %v; want %d, %v", c.data, seq, ok, c.seq, c.ok)
		}
	}
}
