package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

var (
	bucketInputs     = []byte("inputs")
	bucketSnapshots  = []byte("snapshots")
	bucketQuarantine = []byte("quarantine")
)

// BoltStore is the embedded Store: one bbolt file, ACID, no server. Each
// Append is one bbolt transaction, so one fsync commits a whole group of
// inputs.
type BoltStore struct {
	db *bolt.DB
}

// OpenBolt opens (creating if needed) the store file at path. It fails at
// once, rather than waiting, if another process has the file open.
func OpenBolt(path string) (*BoltStore, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout: 100 * time.Millisecond,
		// The free list is rebuilt on open instead of written on each
		// commit: commits are the hot path, opens are rare.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if err != nil {
		return nil, fmt.Errorf("journal: open %s: %w", path, err)
	}
	// Create the buckets on first use only: an Open that fails must leave
	// the file as it found it, and even an empty commit writes to it.
	missing := false
	db.View(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketInputs, bucketSnapshots, bucketQuarantine} {
			missing = missing || tx.Bucket(name) == nil
		}
		return nil
	})
	if missing {
		err = db.Update(func(tx *bolt.Tx) error {
			for _, name := range [][]byte{bucketInputs, bucketSnapshots, bucketQuarantine} {
				if _, err := tx.CreateBucketIfNotExists(name); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("journal: open %s: %w", path, err)
	}
	return &BoltStore{db: db}, nil
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

func (s *BoltStore) Append(records []Record) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketInputs)
		b.FillPercent = 1 // keys only ever grow: pack pages full
		if last, _ := b.Cursor().Last(); last != nil && len(records) > 0 {
			if want := binary.BigEndian.Uint64(last) + 1; records[0].Seq != want {
				return fmt.Errorf("journal: append seq %d, expected %d", records[0].Seq, want)
			}
		}
		for _, r := range records {
			if err := b.Put(seqKey(r.Seq), r.Data); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *BoltStore) Scan(from uint64, fn func(Record) error) error {
	return s.walk(bucketInputs, func(c *bolt.Cursor) ([]byte, []byte) { return c.Seek(seqKey(from)) }, (*bolt.Cursor).Next, fn)
}

// walk calls fn with the records of bucket from where first puts the cursor,
// moving it with next, until fn returns an error; ErrStop ends it quietly.
func (s *BoltStore) walk(bucket []byte, first, next func(*bolt.Cursor) ([]byte, []byte), fn func(Record) error) error {
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		for k, v := first(c); k != nil; k, v = next(c) {
			if err := fn(Record{Seq: binary.BigEndian.Uint64(k), Data: v}); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, ErrStop) {
		return nil
	}
	return err
}

func (s *BoltStore) PutSnapshot(r Record) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSnapshots).Put(seqKey(r.Seq), r.Data)
	})
}

func (s *BoltStore) Snapshots(fn func(Record) error) error {
	return s.walk(bucketSnapshots, (*bolt.Cursor).Last, (*bolt.Cursor).Prev, fn)
}

func (s *BoltStore) Prune(snapshotsBefore, inputsBefore uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		for _, p := range []struct {
			bucket []byte
			before uint64
		}{{bucketSnapshots, snapshotsBefore}, {bucketInputs, inputsBefore}} {
			c := tx.Bucket(p.bucket).Cursor()
			for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) < p.before; k, _ = c.Next() {
				if err := c.Delete(); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func (s *BoltStore) Quarantine(seq uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		key := seqKey(seq)
		v := tx.Bucket(bucketInputs).Get(key)
		if v == nil {
			return fmt.Errorf("journal: quarantine: no record %d", seq)
		}
		// Keyed by seq and the time it was moved, so that a seq reused
		// after a quarantine never overwrites an earlier one.
		qkey := binary.BigEndian.AppendUint64(key, uint64(time.Now().UnixNano()))
		if err := tx.Bucket(bucketQuarantine).Put(qkey, append([]byte(nil), v...)); err != nil {
			return err
		}
		return tx.Bucket(bucketInputs).Delete(key)
	})
}

// Close closes the bbolt file.
func (s *BoltStore) Close() error { return s.db.Close() }

// Size returns the bytes the store's live records take: keys and values of
// the journal and the snapshots, without bbolt's free pages.
func (s *BoltStore) Size() (journal, snapshots int64, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		for _, p := range []struct {
			bucket []byte
			n      *int64
		}{{bucketInputs, &journal}, {bucketSnapshots, &snapshots}} {
			err := tx.Bucket(p.bucket).ForEach(func(k, v []byte) error {
				*p.n += int64(len(k) + len(v))
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return journal, snapshots, err
}

var _ Store = (*BoltStore)(nil)
