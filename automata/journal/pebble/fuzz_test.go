package pebble_test

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/internal/storetest"
	"github.com/moora-go/moora/automata/journal/pebble"

	pdb "github.com/cockroachdb/pebble/v2"
)

// FuzzStoreKeys writes keys and values of the fuzzer's choosing into a
// store's database, beside the records of a journal of 5 inputs, as another
// program or damage would, and opens it: Open, a Machine's Open and a Scan
// of the whole journal each return an error or succeed; none panics. The
// input is a list of (key length, key, value length, value), the lengths
// one byte each; an empty key is passed over (see below).
func FuzzStoreKeys(f *testing.F) {
	end := func(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }
	pair := func(k, v []byte) []byte {
		return append(append(append([]byte{byte(len(k))}, k...), byte(len(v))), v...)
	}
	f.Add(pair([]byte("e"), end(9)))
	f.Add(pair([]byte("e"), []byte("short")))
	f.Add(pair([]byte("i\x00\x00\x00\x00\x00\x00\x00\x06"), []byte("not a frame")))
	f.Add(pair([]byte("i\x00\x00"), []byte("x")))
	f.Add(pair([]byte("s\x00\x00\x00\x00\x00\x00\x00\x05"), end(1<<40)))
	f.Add(pair([]byte("\x00layout"), []byte("moora-go journal: fleet 1")))
	f.Add(append(pair([]byte("i\x00\x00\x00\x00\x00\x00\x00\x06"), []byte("x")), pair([]byte("e"), end(6))...))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := filepath.Join(t.TempDir(), "agent")
		s, err := pebble.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		m, err := journal.Open(s, storetest.Model, journal.Options[storetest.State, storetest.Input]{Codec: journal.JSON[storetest.State, storetest.Input](nil)})
		if err != nil {
			t.Fatal(err)
		}
		storetest.DispatchAll(t, m, storetest.Notes(0, 5))
		storetest.MustClose(t, m)

		db, err := pdb.Open(dir, &pdb.Options{Logger: quiet{}})
		if err != nil {
			t.Fatal(err)
		}
		for len(data) > 0 {
			n := int(data[0])
			if len(data) < 1+n+1 {
				break
			}
			k := data[1 : 1+n]
			m := int(data[1+n])
			v := data[2+n : min(len(data), 2+n+m)]
			data = data[min(len(data), 2+n+m):]
			if len(k) == 0 {
				// Pebble v2.1.7 itself panics flushing an empty key in
				// its newest format, on a goroutine of its own; no
				// journal writes one.
				continue
			}
			if err := db.Set(k, v, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}

		s, err = pebble.Open(dir)
		if err != nil {
			return
		}
		m, err = journal.Open(s, storetest.Model, journal.Options[storetest.State, storetest.Input]{Codec: journal.JSON[storetest.State, storetest.Input](nil)})
		if err != nil {
			s.Close()
			return
		}
		defer storetest.MustClose(t, m)
		m.Inputs(1, m.Seq())
	})
}
