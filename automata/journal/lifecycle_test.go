package journal_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

type lifeState = []string

var lifeDef = automata.Definition[lifeState, string]{
	Initial:    func() lifeState { return nil },
	Transition: func(s lifeState, in string) lifeState { return automata.Append(s, in) },
}

func lifeOpen(t *testing.T, path string, opts journal.Options[lifeState, string], options ...automata.Option[lifeState, string]) *journal.Machine[lifeState, string] {
	t.Helper()
	store, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Codec == nil {
		opts.Codec = journal.JSON[lifeState, string](nil)
	}
	m, err := journal.Open[lifeState, string](store, lifeDef, opts, options...)
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	return m
}

func lifeLast(s lifeState) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

// TestRejectedInputOfAFailedBatchIsNotAcknowledged: Dispatch returns nil
// only once the input is on disk. Two inputs join one batch: "boom"
// (admitted, committed; its subscriber panics) and "bad" (rejected by
// admission, never journaled). The failure used to answer every input of the
// committed batch with nil, the rejected one too. (The sleeps only make the
// two likely to share a batch; the test cannot fail because of them.)
func TestRejectedInputOfAFailedBatchIsNotAcknowledged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	release := make(chan struct{})
	m := lifeOpen(t, path, journal.Options[lifeState, string]{},
		automata.WithAdmission(func(_ lifeState, in string) (string, error) {
			if in == "bad" {
				return in, errors.New("bad input")
			}
			return in, nil
		}))
	m.Subscribe(func(s lifeState) {
		switch lifeLast(s) {
		case "hold":
			<-release // keep the applying goroutine busy so that the next two batch together
		case "boom":
			panic("subscriber bug")
		}
	})
	go m.Dispatch(context.Background(), "hold")
	time.Sleep(100 * time.Millisecond)
	var wg sync.WaitGroup
	var errBoom, errBad error
	wg.Go(func() { errBoom = m.Dispatch(context.Background(), "boom") })
	time.Sleep(100 * time.Millisecond)
	wg.Go(func() { errBad = m.Dispatch(context.Background(), "bad") })
	time.Sleep(100 * time.Millisecond)
	close(release)
	wg.Wait()
	closeErr := m.Close(context.Background())
	t.Logf("Dispatch(boom)=%v Dispatch(bad)=%v Close=%v", errBoom, errBad, closeErr)

	m2 := lifeOpen(t, path, journal.Options[lifeState, string]{})
	journaled := m2.Current()
	m2.Close(context.Background())
	t.Logf("journaled after reopen: %q", journaled)
	if errBad == nil && !slices.Contains(journaled, "bad") {
		t.Fatalf("Dispatch(\"bad\") returned nil (acknowledged) but \"bad\" was rejected by admission and is not in the journal (%q)", journaled)
	}
}

// slowCodec takes a while to encode a state, as the close snapshot of a
// large state does (82 MB of gob for the chat test agent at 1,000,000 inputs).
type slowCodec struct {
	journal.Codec[lifeState, string]
}

func (c slowCodec) EncodeState(s lifeState) ([]byte, error) {
	time.Sleep(300 * time.Millisecond)
	return c.Codec.EncodeState(s)
}

// TestDoneMeansCloseFinished: Done is closed when Close has finished. It
// used to be the inner machine's, closed before Close took its snapshot and
// closed the store, so a supervisor that reopened the file on Done found it
// still locked.
func TestDoneMeansCloseFinished(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	m := lifeOpen(t, path, journal.Options[lifeState, string]{Codec: slowCodec{journal.JSON[lifeState, string](nil)}})
	if err := m.Dispatch(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- m.Close(context.Background()) }()
	select {
	case <-m.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done never closed")
	}
	errNow := m.Err()
	again, reopenErr := bolt.Open(path) // what a supervisor watching Done does
	if again != nil {
		again.Close()
	}
	<-closed
	if reopenErr != nil {
		t.Fatalf("Done was closed (Err=%v) while Close had not finished (snapshot being taken, store still open): reopening the store on Done failed: %v", errNow, reopenErr)
	}
}

// panicCodec panics when asked to encode a state: a user codec bug.
type panicCodec struct {
	journal.Codec[lifeState, string]
}

func (panicCodec) EncodeState(lifeState) ([]byte, error) { panic("codec bug") }

// TestCloseSnapshotCodecPanicIsAnError: a codec that panics encoding the
// close snapshot used to make Close panic and leave the store open; Close
// returns an error and closes the store.
func TestCloseSnapshotCodecPanicIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	m := lifeOpen(t, path, journal.Options[lifeState, string]{Codec: panicCodec{journal.JSON[lifeState, string](nil)}})
	if err := m.Dispatch(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	var closeErr error
	var panicked any
	func() {
		defer func() { panicked = recover() }()
		closeErr = m.Close(context.Background())
	}()
	if panicked != nil {
		_, reopenErr := bolt.Open(path)
		t.Fatalf("Close panicked (%v) instead of returning an error; the store was left open (reopen: %v)", panicked, reopenErr)
	}
	if closeErr == nil {
		t.Fatal("Close returned nil after the snapshot codec panicked")
	}
}

// TestBackgroundSnapshotCodecPanicDoesNotCrash: a codec that panics
// encoding a periodic snapshot, on a goroutine of the journal's own, used to
// crash the process. The child is this test binary; the parent checks that
// it survived and reported the panic to OnError.
func TestBackgroundSnapshotCodecPanicDoesNotCrash(t *testing.T) {
	if dir := os.Getenv("JOURNAL_SNAPSHOT_PANIC_CHILD"); dir != "" {
		m := lifeOpen(t, filepath.Join(dir, "j.db"), journal.Options[lifeState, string]{
			Codec:             panicCodec{journal.JSON[lifeState, string](nil)},
			SnapshotEvery:     1,
			SkipCloseSnapshot: true,
			OnError: func(err error) {
				if strings.Contains(err.Error(), "codec panicked: codec bug") {
					os.Stdout.WriteString("reported\n")
				}
			},
		})
		for _, in := range []string{"a", "b", "c"} {
			m.Dispatch(context.Background(), in)
		}
		m.Close(context.Background()) // waits for the background snapshots
		os.Stdout.WriteString("child survived\n")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBackgroundSnapshotCodecPanicDoesNotCrash$", "-test.count=1")
	cmd.Env = append(os.Environ(), "JOURNAL_SNAPSHOT_PANIC_CHILD="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "child survived") {
		first := string(out)
		if i := strings.Index(first, "\n\ngoroutine"); i > 0 {
			first = first[:i]
		}
		t.Fatalf("the process crashed (%v) when the codec panicked in a background snapshot:\n%s", err, first)
	}
	if !strings.Contains(string(out), "reported") {
		t.Fatalf("the codec's panic was not reported to OnError:\n%s", out)
	}
}

// TestInputWhoseSubscriberPanickedIsJournaled: what the doc says of an
// input whose subscriber panics: it was committed before subscribers ran,
// so Dispatch acknowledged it, Current includes it, and the next Open
// applies it.
func TestInputWhoseSubscriberPanickedIsJournaled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	m := lifeOpen(t, path, journal.Options[lifeState, string]{})
	m.Subscribe(func(s lifeState) {
		if lifeLast(s) == "boom" {
			panic("subscriber bug")
		}
	})
	if err := m.Dispatch(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if err := m.Dispatch(context.Background(), "boom"); err != nil {
		t.Fatalf("Dispatch(boom) = %v, want nil: it was durable before its subscriber ran", err)
	}
	var f *automata.FailError
	if !errors.As(m.Err(), &f) || f.Where != "a subscriber" || f.Input != "boom" {
		t.Fatalf("Err() = %v, want a subscriber's failure on boom", m.Err())
	}
	current := m.Current()
	m.Close(context.Background())
	m2 := lifeOpen(t, path, journal.Options[lifeState, string]{})
	journaled := m2.Current()
	m2.Close(context.Background())
	want := lifeState{"a", "boom"}
	if !slices.Equal(current, want) || !slices.Equal(journaled, want) {
		t.Fatalf("Current after the failure %q, after reopening %q; want %q for both", current, journaled, want)
	}
}

type lifeMsg struct{ Text string }

// TestNilPointerInputIsRefusedAndTheMachineGoesOn: Dispatch(ctx, nil) is
// an error and the machine goes on, also for a pointer input type. nil used
// to be journaled as "null", decoded back as nil and handed to the
// transition, whose panic stopped the machine.
func TestNilPointerInputIsRefusedAndTheMachineGoesOn(t *testing.T) {
	def := automata.Definition[int, *lifeMsg]{
		Initial:    func() int { return 0 },
		Transition: func(s int, in *lifeMsg) int { return s + len(in.Text) },
	}
	path := filepath.Join(t.TempDir(), "j.db")
	store, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := journal.Open(store, def, journal.Options[int, *lifeMsg]{Codec: journal.JSON[int, *lifeMsg](nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	errNil := m.Dispatch(context.Background(), nil)
	t.Logf("Dispatch(nil) = %v; Err = %v", errNil, m.Err())
	if errNil == nil {
		t.Fatal("Dispatch(ctx, nil) returned nil: a nil input was acknowledged")
	}
	if m.Err() != nil {
		t.Fatalf("a nil input stopped the machine (Err = %v); it should be refused and the machine go on", m.Err())
	}
}

// panicDecodeCodec's DecodeInput panics: a decoder of today that cannot
// read an input journaled by the code of yesterday, and crashes on it.
type panicDecodeCodec struct {
	journal.Codec[lifeState, string]
}

func (panicDecodeCodec) DecodeInput([]byte) (string, error) { panic("decoder bug") }

// TestOpenDoesNotPanicOnADecoderPanic: a codec that panics decoding a
// journaled input used to make Open panic, crashing the program at every
// start. Open returns an error naming the input, and not a *CorruptError:
// the record is intact, the code is wrong.
func TestOpenDoesNotPanicOnADecoderPanic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	m := lifeOpen(t, path, journal.Options[lifeState, string]{SkipCloseSnapshot: true})
	if err := m.Dispatch(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	store, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var openErr error
	var panicked any
	func() {
		defer func() { panicked = recover() }()
		_, openErr = journal.Open[lifeState, string](store, lifeDef, journal.Options[lifeState, string]{Codec: panicDecodeCodec{journal.JSON[lifeState, string](nil)}})
	}()
	if panicked != nil {
		t.Fatalf("Open panicked (%v) instead of returning an error naming the input", panicked)
	}
	if openErr == nil {
		t.Fatal("Open succeeded although the input could not be decoded")
	}
	if !strings.Contains(openErr.Error(), "input 1") || !strings.Contains(openErr.Error(), "decoder bug") || errors.As(openErr, new(*journal.CorruptError)) {
		t.Fatalf("Open = %v, want an error naming input 1 and the panic, not a *CorruptError", openErr)
	}
}
