package automata_test

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
)

func TestAppendExtendsInPlaceOnlyAtTheTip(t *testing.T) {
	var s []int
	for i := range 100 {
		s = automata.Append(s, i)
	}
	want := make([]int, 100)
	for i := range want {
		want[i] = i
	}
	if !slices.Equal(s, want) {
		t.Fatalf("Append built %v", s)
	}
	// The tip extends in place while there is room.
	if cap(s) == len(s) {
		s = automata.Append(s, 100)
	}
	next := automata.Append(s, 101)
	if &next[0] != &s[0] {
		t.Error("appending to the newest state copied instead of extending in place")
	}
}

func TestAppendNeverClobbersASiblingState(t *testing.T) {
	base := automata.Append([]string(nil), "a", "b", "c")
	left := automata.Append(base, "left")
	right := automata.Append(base, "right") // same base: must not overwrite left's element
	if !slices.Equal(left, []string{"a", "b", "c", "left"}) || !slices.Equal(right, []string{"a", "b", "c", "right"}) {
		t.Fatalf("left = %v, right = %v", left, right)
	}
	shorter := left[:2]
	again := automata.Append(shorter, "x") // room past 2 is claimed by left
	if !slices.Equal(left, []string{"a", "b", "c", "left"}) || !slices.Equal(again, []string{"a", "b", "x"}) {
		t.Fatalf("after appending to a shorter view: left = %v, again = %v", left, again)
	}
	plain := make([]string, 1, 10)
	copied := automata.Append(plain, "y") // not Append's array: copied
	if &copied[0] == &plain[0] || plain[:2][1] != "" {
		t.Fatal("Append wrote into an array it does not own")
	}
}

func TestAppendConcurrentlyFromOneState(t *testing.T) {
	base := automata.Append([]int(nil), 0)
	base = automata.Append(base, 1) // room left in the array
	results := make([][]int, 16)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = automata.Append(base, 100+i) })
	}
	wg.Wait()
	inPlace := 0
	for i, r := range results {
		if !slices.Equal(r, []int{0, 1, 100 + i}) {
			t.Fatalf("result %d = %v", i, r)
		}
		if &r[0] == &base[0] {
			inPlace++
		}
	}
	if inPlace != 1 {
		t.Fatalf("%d results extended the shared array, want exactly 1", inPlace)
	}
}

type log struct{ Lines []string }

func TestCheckPureAcceptsAppendAndRejectsPlainAppendOnItsArrays(t *testing.T) {
	initial := func() log { return log{Lines: automata.Append([]string(nil), "start")} }
	withAppend := automata.Definition[log, string]{
		Initial:    initial,
		Transition: func(l log, in string) log { l.Lines = automata.Append(l.Lines, in); return l },
	}
	if err := automata.CheckPure(withAppend, "a", "b", "c", "d", "e", "f", "g", "h", "i"); err != nil {
		t.Fatalf("Append-based transition reported impure: %v", err)
	}
	plain := automata.Definition[log, string]{
		Initial:    initial,
		Transition: func(l log, in string) log { l.Lines = append(l.Lines, in); return l },
	}
	err := automata.CheckPure(plain, "a", "b")
	if err == nil {
		t.Fatal("plain append into an Append-owned array not caught")
	}
	if want := "state.Lines[1] changed"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

// The bookkeeping of an array goes when the array does.
func TestAppendForgetsCollectedArrays(t *testing.T) {
	before := automata.TrackedArrays()
	for i := range 1000 {
		s := automata.Append([]int(nil), i)
		_ = automata.Append(s, i)
	}
	deadline := time.Now().Add(10 * time.Second)
	for automata.TrackedArrays() > before+10 {
		if time.Now().After(deadline) {
			t.Fatalf("%d arrays still tracked after they were dropped (%d before)", automata.TrackedArrays(), before)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkAppend: adding one message to a conversation of n messages, the
// pure way. Append stays flat; copying grows with n.
func BenchmarkAppend(b *testing.B) {
	type message struct {
		ID, Content string
		Timestamp   int64
	}
	for _, n := range []int{100, 10_000, 1_000_000} {
		var s []message
		for i := range n {
			s = automata.Append(s, message{ID: fmt.Sprint(i)})
		}
		b.Run(fmt.Sprintf("Append/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			cur := s
			for b.Loop() {
				cur = automata.Append(cur, message{ID: "x"})
			}
		})
		b.Run(fmt.Sprintf("CloneAppend/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = append(slices.Clip(s), message{ID: "x"})
			}
		})
	}
}
