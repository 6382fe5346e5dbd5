package automata

import (
	"context"
	"runtime"
	"slices"
	"testing"
)

// A job that hands in its result and returns while another goroutine is
// applying inputs: its input arrived before its end, and must be applied
// before its end is reported, whatever the scheduling.
func TestJobInputIsAppliedBeforeItsEnd(t *testing.T) {
	type in struct{ add, done string }
	def := Definition[[]string, in]{
		Initial: func() []string { return nil },
		Transition: func(s []string, x in) []string {
			if x.add != "" {
				return Append(s, x.add)
			}
			return slices.DeleteFunc(slices.Clone(s), func(k string) bool { return k == x.done })
		},
	}
	release := make(chan struct{})
	jobsAt := func(s []string) map[string]Job[in] {
		jobs := map[string]Job[in]{}
		for _, k := range s {
			jobs[k] = func(ctx context.Context, dispatch Dispatch[in]) error {
				<-release
				dispatch(in{done: k})
				return nil
			}
		}
		return jobs
	}
	var events []string
	m := NewMoore(def, func(s []string) []string { return s }, WithJobs(jobsAt),
		WithEvents(func(e Event[[]string, in]) { events = append(events, e.Kind.String()) }))
	m.Dispatch(in{add: "k"})

	// Hold the processing role, as a goroutine busy applying inputs would.
	m.mu.Lock()
	m.processing = true
	m.mu.Unlock()
	close(release)
	// Wait until the job has queued its input and then its end.
	for {
		m.mu.Lock()
		queued := len(m.inputs) == 1 && len(m.ctrl) == 1
		m.mu.Unlock()
		if queued {
			break
		}
		runtime.Gosched()
	}
	events = nil
	m.run(queued[in]{}, false)
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"input-received", "state-updated", "effect-completed"}
	if !slices.Equal(events, want) {
		t.Fatalf("events = %v, want %v: the job's input before its end", events, want)
	}
}
