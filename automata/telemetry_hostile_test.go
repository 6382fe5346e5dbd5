package automata_test

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/internal/testbuf"
	"go.opentelemetry.io/otel/codes"

	"github.com/moora-go/moora/automata"
)

// Hostile tests of the telemetry: each failed on the code before its fix,
// and its comment says, in parentheses, what was wrong. None asserts a
// duration: a wait is bounded only so that a hang fails.

const hangBound = 10 * time.Second

// eventually waits for ok, failing with what after hangBound.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangBound)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestHostileJobFailureLoggedWithoutEvents: WithLogger promises a Warn
// record for a job that failed. Without WithEvents, jobEndedLocked (jobs.go)
// only queues the job's end for "the next reconcile" and does not take the
// processing role, on the ground that nobody listens; but the logger does.
// jobDone, which logs, then runs only when some later input or Close comes:
// an idle agent's failed job is never logged.
func TestHostileJobFailureLoggedWithoutEvents(t *testing.T) {
	var buf testbuf.Buffer
	release := make(chan struct{})
	returned := make(chan struct{})
	m := automata.NewMoore(chatDef, func(s chat) chat { return s },
		automata.WithLogger[chat, chatInput](slog.New(slog.NewJSONHandler(&buf, nil))),
		automata.WithActorJobs("brain", func(s chat) map[string]automata.Job[chatInput] {
			if s.asked == s.answered {
				return nil
			}
			return map[string]automata.Job[chatInput]{"reply": func(context.Context, automata.Dispatch[chatInput]) error {
				<-release
				defer close(returned)
				return errors.New("the model is down")
			}}
		}))
	t.Cleanup(func() { m.Close(context.Background()) })
	if err := m.DispatchWait(context.Background(), chatInput{kind: "ask"}); err != nil {
		t.Fatal(err)
	}
	close(release) // the processing role is free: DispatchWait ran it to its end
	<-returned
	waitJobs(t, m)
	eventually(t, "no \"automata: job failed\" record for a job that failed while the machine was idle; the log:\n"+buf.String(), func() bool {
		return strings.Contains(buf.String(), "automata: job failed")
	})
}

// TestHostileCancelReasonAfterClose: a job cancelled because its key
// vanished, still winding down when Close is called, is reported with
// moora.job.cancel.reason "the machine closed": runJob (jobs.go) reads
// m.closed when the job returns, not why its context was cancelled.
func TestHostileCancelReasonAfterClose(t *testing.T) {
	started, cut, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	r := newRecorded(t, func(int) automata.Job[chatInput] {
		return func(ctx context.Context, _ automata.Dispatch[chatInput]) error {
			close(started)
			<-ctx.Done()
			close(cut)
			<-release
			return ctx.Err()
		}
	})
	ctx := context.Background()
	if err := r.machine.DispatchWait(ctx, chatInput{kind: "ask"}); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := r.machine.DispatchWait(ctx, chatInput{kind: "stop"}); err != nil {
		t.Fatal(err)
	}
	<-cut // cancelled: its key vanished
	closed := make(chan error, 1)
	go func() { closed <- r.machine.Close(ctx) }()
	eventually(t, "Close did not start", func() bool {
		return errors.Is(r.machine.Dispatch(chatInput{kind: "note"}), automata.ErrClosed)
	})
	close(release)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(hangBound):
		t.Fatal("Close hung")
	}
	job := one(t, r, "moora.job")
	if got := attr(job, "moora.job.cancel.reason").AsString(); got != "its key vanished" {
		t.Errorf("moora.job.cancel.reason = %q, want %q: the key vanished before Close", got, "its key vanished")
	}
}

// TestHostileRejectedInputJobCountedCompleted: a job that returns nil
// although the input it dispatched was rejected is a failure to the
// machine (an EffectFailed event with a *RejectedInputError, a Warn "job
// failed" log record carrying the job's span id), but its span has no
// error status and moora.jobs counts it completed: jobEnd runs on the
// worker with the job's own nil error, before jobDone learns of the
// rejection.
func TestHostileRejectedInputJobCountedCompleted(t *testing.T) {
	failed := make(chan error, 1)
	r := newRecorded(t, func(int) automata.Job[chatInput] {
		return func(_ context.Context, dispatch automata.Dispatch[chatInput]) error {
			dispatch(chatInput{kind: "answer"})
			return nil
		}
	},
		automata.WithAdmission(func(_ chat, in chatInput) (chatInput, error) {
			if in.kind == "answer" {
				return in, errors.New("no answers today")
			}
			return in, nil
		}),
		automata.WithEvents(func(e automata.Event[chat, chatInput]) {
			if e.Kind == automata.EffectFailed {
				select {
				case failed <- e.Err:
				default:
				}
			}
		}))
	if err := r.machine.DispatchWait(context.Background(), chatInput{kind: "ask"}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-failed:
		var rej *automata.RejectedInputError
		if !errors.As(err, &rej) {
			t.Fatalf("EffectFailed with %v", err)
		}
	case <-time.After(hangBound):
		t.Fatal("no EffectFailed event")
	}
	waitJobs(t, r.machine)
	job := one(t, r, "moora.job")
	if job.Status().Code != codes.Error {
		t.Errorf("the span of a job the machine reports failed (RejectedInputError) has status %v", job.Status())
	}
	m := collect(t, r.reader)
	if got := sum(m, "moora.jobs", "moora.job.outcome", "failed"); got != 1 {
		t.Errorf("moora.jobs{failed} = %d, completed = %d; the machine reported the job failed", got, sum(m, "moora.jobs", "moora.job.outcome", "completed"))
	}
}

// TestHostileBatchedInputJobParent: inputs applied together (here queued
// behind a busy subscriber) are reconciled once: the job the question
// called for is a child of the last of them, and linked to the question's
// span, so that the question's trace finds its job. (The job's span was a
// child of the last input alone: the question's trace lost its job.)
func TestHostileBatchedInputJobParent(t *testing.T) {
	r := newRecorded(t, func(int) automata.Job[chatInput] {
		return func(context.Context, automata.Dispatch[chatInput]) error { return nil }
	})
	var calls atomic.Int32
	entered, gate := make(chan struct{}), make(chan struct{})
	r.machine.Subscribe(func(chat) {
		if calls.Add(1) == 2 { // 1 is the replay
			close(entered)
			<-gate
		}
	})
	go r.machine.Dispatch(chatInput{kind: "note", text: "first"})
	<-entered // the processing role is held by a subscriber
	r.machine.Dispatch(chatInput{kind: "ask"})
	r.machine.Dispatch(chatInput{kind: "note", text: "another caller's"})
	close(gate)
	eventually(t, "the job's span never ended", func() bool { return len(r.ended("moora.job")) == 1 })
	ask := one(t, r, "moora.input ask")
	job := one(t, r, "moora.job")
	linked := job.Parent().SpanID() == ask.SpanContext().SpanID()
	for _, l := range job.Links() {
		linked = linked || l.SpanContext.SpanID() == ask.SpanContext().SpanID()
	}
	if !linked {
		t.Errorf("the job called for by the question has parent %v and links %v, neither the question's span %v",
			job.Parent().SpanID(), job.Links(), ask.SpanContext().SpanID())
	}
}

// TestHostileAppliedInputWithoutSpan: an input applied (its state
// published, DispatchWait answered nil) whose subscriber then panics has no
// span and is not counted: publish (machine.go) records the span only after
// the subscribers return. The failure's own log record has no trace ids
// either. The one input a trace is most wanted for is missing from it.
func TestHostileAppliedInputWithoutSpan(t *testing.T) {
	r := newRecorded(t, func(int) automata.Job[chatInput] { return nil })
	r.machine.Subscribe(func(s chat) {
		if s.asked == 1 {
			panic("subscriber bug")
		}
	})
	if err := r.machine.DispatchWait(context.Background(), chatInput{kind: "ask"}); err != nil {
		t.Fatalf("DispatchWait = %v: the input is applied before its subscribers run", err)
	}
	select {
	case <-r.machine.Done():
	case <-time.After(hangBound):
		t.Fatal("the machine did not fail")
	}
	if got := r.machine.Current().asked; got != 1 {
		t.Fatalf("asked = %d: the input was not applied", got)
	}
	if got := r.ended("moora.input ask"); len(got) != 1 {
		t.Errorf("%d spans for an input applied (DispatchWait answered nil, Current shows it) before a subscriber failed the machine", len(got))
	}
	if got := sum(collect(t, r.reader), "moora.inputs", "moora.input.outcome", "applied"); got != 1 {
		t.Errorf("moora.inputs{applied} = %d", got)
	}
}

// TestHostileTelemetryOffCostsBytes: telemetry off, a job allocates what
// it did before WithTelemetry (95 bytes of the runtime's a job, 70 under
// -race: the job's telemetry is a pointer in the room the job's struct had
// to spare), and a DispatchWait 8 bytes more than its 152 (its waiter has
// a pointer to its caller's context), as doc.go says. (The job's struct
// had grown from 64 to 144 bytes, the waiter from 24 to 40.)
func TestHostileTelemetryOffCostsBytes(t *testing.T) {
	const total = 20_000
	var before, after runtime.MemStats
	w := newChainRun(4, 1<<30)
	s := w.def.Transition(w.def.Initial(), "")
	for range total {
		s = w.def.Transition(s, s.open[0])
	}
	runtime.ReadMemStats(&before)
	for range total {
		s = w.def.Transition(s, s.open[0])
		w.jobsAt(s)
	}
	runtime.ReadMemStats(&after)
	workload := float64(after.TotalAlloc-before.TotalAlloc) / total
	run := newChainRun(4, total)
	runtime.ReadMemStats(&before)
	m := automata.NewMoore(run.def, func(s chains) int { return len(s.open) }, automata.WithJobs(run.jobsAt))
	m.Dispatch("")
	<-run.finished
	closeOrFail(t, m)
	runtime.ReadMemStats(&after)
	if perJob := float64(after.TotalAlloc-before.TotalAlloc)/total - workload; perJob > 120 {
		t.Errorf("telemetry off, the runtime allocates %.0f bytes a job, against 95 (70 under -race) before WithTelemetry", perJob)
	}

	c := automata.NewMoore(counter, func(n int) int { return n })
	defer closeOrFail(t, c)
	ctx := context.Background()
	for range 100 {
		c.DispatchWait(ctx, 1)
	}
	runtime.ReadMemStats(&before)
	for range total {
		c.DispatchWait(ctx, 1)
	}
	runtime.ReadMemStats(&after)
	if per := float64(after.TotalAlloc-before.TotalAlloc) / total; per > 152+8 {
		t.Errorf("telemetry off, DispatchWait allocates %.0f bytes, against 152 before WithTelemetry and the 8 more doc.go says", per)
	}
}
