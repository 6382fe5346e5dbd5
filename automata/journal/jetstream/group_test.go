package jetstream_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/jetstream"
	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

func groupRecords(from, to uint64) []journal.Record {
	var rs []journal.Record
	for i := from; i <= to; i++ {
		rs = append(rs, journal.Record{Seq: i, Data: []byte(fmt.Sprintf("record %d", i))})
	}
	return rs
}

func scanSeqs(t *testing.T, s journal.Store, from uint64) []uint64 {
	t.Helper()
	var got []uint64
	if err := s.Scan(from, func(r journal.Record) error {
		if want := fmt.Sprintf("record %d", r.Seq); string(r.Data) != want {
			t.Errorf("record %d holds %q", r.Seq, r.Data)
		}
		got = append(got, r.Seq)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// subjectMessages returns the number of messages on an agent's subject.
func subjectMessages(t *testing.T, nc *nats.Conn, subj string) uint64 {
	t.Helper()
	j, _ := js.New(nc)
	str, err := j.Stream(context.Background(), "MOORA_JOURNAL")
	if err != nil {
		t.Fatal(err)
	}
	info, err := str.Info(context.Background(), js.WithSubjectFilter(subj))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subj]
}

// TestAGroupCommitIsOneMessage: an Append of several records is one
// message, which Scan reads back record by record, from any of them.
func TestAGroupCommitIsOneMessage(t *testing.T) {
	_, nc := startServer(t, false)
	s, err := jetstream.Open(context.Background(), nc, jetstream.Config{}, "g")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(groupRecords(1, 5)); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(groupRecords(6, 6)); err != nil {
		t.Fatal(err)
	}
	if n := subjectMessages(t, nc, "moora.journal.in.g"); n != 2 {
		t.Errorf("%d messages for an Append of 5 and one of 1, want 2", n)
	}
	if got := scanSeqs(t, s, 3); !reflect.DeepEqual(got, []uint64{3, 4, 5, 6}) {
		t.Errorf("Scan(3) = %v", got)
	}
}

// TestPruneInsideAGroup: a Prune whose first record kept is inside a group
// commit keeps the group's message and hides the records before it, also
// from a store opened again.
func TestPruneInsideAGroup(t *testing.T) {
	_, nc := startServer(t, false)
	ctx := context.Background()
	s, err := jetstream.Open(ctx, nc, jetstream.Config{}, "g")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(groupRecords(1, 10)); err != nil {
		t.Fatal(err)
	}
	if err := s.Prune(0, 0, 4); err != nil {
		t.Fatal(err)
	}
	if got := scanSeqs(t, s, 0); !reflect.DeepEqual(got, []uint64{4, 5, 6, 7, 8, 9, 10}) {
		t.Errorf("after Prune(0, 4): %v", got)
	}
	if err := s.Prune(0, 0, 7); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = jetstream.Open(ctx, nc, jetstream.Config{}, "g")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := scanSeqs(t, s, 0); !reflect.DeepEqual(got, []uint64{7, 8, 9, 10}) {
		t.Errorf("after Prune(0, 7), opened again: %v", got)
	}
	if n := subjectMessages(t, nc, "moora.journal.floor.g"); n != 1 {
		t.Errorf("%d floor messages, want the last one only", n)
	}
	if err := s.Append(groupRecords(11, 12)); err != nil {
		t.Fatal(err)
	}
	if got := scanSeqs(t, s, 9); !reflect.DeepEqual(got, []uint64{9, 10, 11, 12}) {
		t.Errorf("Scan(9) = %v", got)
	}
}

// TestQuarantineOfAGroupsLastRecordIsFinishedAtOpen: taking the journal's
// last record out of a group commit appends the group's other records as
// one that replaces it, and deletes it; a store that stopped in between
// leaves both, and the next Open deletes the replaced one.
func TestQuarantineOfAGroupsLastRecordIsFinishedAtOpen(t *testing.T) {
	_, nc := startServer(t, false)
	ctx := context.Background()
	s, err := jetstream.Open(ctx, nc, jetstream.Config{}, "g")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(groupRecords(1, 3)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// What Quarantine(3) writes before it deletes the group (stream
	// sequence 1): the records 1 and 2, replacing it.
	j, _ := js.New(nc)
	m := nats.NewMsg("moora.journal.in.g")
	m.Header.Set("Moora-Seq", "1")
	m.Header.Set("Moora-Count", "2")
	m.Header.Set("Moora-Replaces", "1")
	m.Data = []byte("\x08record 1\x08record 2")
	if _, err := j.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	s, err = jetstream.Open(ctx, nc, jetstream.Config{}, "g")
	if err != nil {
		t.Fatal(err)
	}
	if got := scanSeqs(t, s, 0); !reflect.DeepEqual(got, []uint64{1, 2}) {
		t.Errorf("opened after a quarantine that stopped midway: %v", got)
	}
	if err := s.Append(groupRecords(3, 4)); err != nil {
		t.Fatal(err)
	}
	if got := scanSeqs(t, s, 0); !reflect.DeepEqual(got, []uint64{1, 2, 3, 4}) {
		t.Errorf("then appended 3, 4: %v", got)
	}
	// A record inside a group that does not end the journal stays.
	if err := s.Quarantine(2); err == nil || !strings.Contains(err.Error(), "only the journal's last record") {
		t.Errorf("Quarantine(2) inside an earlier group: %v", err)
	}
	if err := s.Quarantine(4); err != nil {
		t.Fatal(err)
	}
	if got := scanSeqs(t, s, 0); !reflect.DeepEqual(got, []uint64{1, 2, 3}) {
		t.Errorf("after Quarantine(4): %v", got)
	}
	// Opened again after a quarantine that finished: the replacement is
	// the last message, and the group it replaced is gone.
	s.Close()
	s, err = jetstream.Open(ctx, nc, jetstream.Config{}, "g")
	if err != nil {
		t.Fatalf("Open after a quarantine out of a group: %v", err)
	}
	defer s.Close()
	if got := scanSeqs(t, s, 0); !reflect.DeepEqual(got, []uint64{1, 2, 3}) {
		t.Errorf("opened again: %v", got)
	}
	if err := s.Append(groupRecords(4, 4)); err != nil {
		t.Fatal(err)
	}
}

// TestPruneNeverLowersTheFloor: a Prune asking for less than an earlier
// one inside the same group leaves what that one pruned pruned.
func TestPruneNeverLowersTheFloor(t *testing.T) {
	_, nc := startServer(t, false)
	s, err := jetstream.Open(context.Background(), nc, jetstream.Config{}, "g")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(groupRecords(1, 10)); err != nil {
		t.Fatal(err)
	}
	if err := s.Prune(0, 0, 7); err != nil {
		t.Fatal(err)
	}
	if err := s.Prune(0, 0, 5); err != nil {
		t.Fatal(err)
	}
	if got := scanSeqs(t, s, 0); !reflect.DeepEqual(got, []uint64{7, 8, 9, 10}) {
		t.Errorf("after Prune(0, 7) and Prune(0, 5): %v", got)
	}
}

// TestDamagedGroupIsCorrupt: a group message whose data is not its records
// stops a Scan with a *journal.CorruptError naming the message.
func TestDamagedGroupIsCorrupt(t *testing.T) {
	_, nc := startServer(t, false)
	ctx := context.Background()
	s, err := jetstream.Open(ctx, nc, jetstream.Config{}, "g")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	j, _ := js.New(nc)
	m := nats.NewMsg("moora.journal.in.g")
	m.Header.Set("Moora-Seq", "1")
	m.Header.Set("Moora-Count", "2")
	m.Data = []byte("\x08record 1\x09record 2")
	if _, err := j.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	err = s.Scan(0, func(journal.Record) error { return nil })
	var ce *journal.CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "record 2 of 2 of the group: 9 bytes, but 8 follow") || !strings.Contains(err.Error(), "message 1") {
		t.Errorf("Scan of a damaged group: %v", err)
	}
}
