// Package automata is the runtime every moora agent runs on: pure machine
// definitions, Moore, Mealy and general machines, effects derived from
// state, and keyed job reconciliation with cancellation.
//
// It follows two TypeScript libraries and goes beyond them where Go allows:
// moora's automata (machines, subscribers, effect combinators) and Moorex (a
// Moore machine whose effects are reconciled with the state by key, built
// for agents that must survive restarts).
//
// An agent modelled with agentgen compiles down to one Definition whose state
// is the union of its actors' states and whose input is the union of their
// inputs; its effects are functions of state. Everything an agent does that
// is not a pure function of its inputs happens in effects and jobs, so a
// restored state resumes exactly the work it calls for.
//
// # Definitions
//
// A Definition is two pure functions: Initial returns the first state and
// Transition returns the state after one input. Pure means: no clock, no
// randomness, no I/O (time arrives inside inputs, as a timestamp), and no
// writes into memory the given state can reach. The last rule is the one Go
// makes easy to break: append writes into the old slice's backing array when
// it has spare capacity, and two transitions from the same state then
// clobber each other. Copying instead (append(slices.Clip(s), x)) is pure
// but costs time proportional to the slice, on every input: a long
// conversation gets slower with every message. Append is the pure append
// that is amortized O(1): it extends a backing array in place only for the
// first state to claim the room, and copies for everyone else.
// CheckPure tests a Definition for this and for non-determinism;
// WithPurityCheck makes a running machine panic on the first transition that
// mutates its state, naming the input and the location. A Definition may
// also carry Versions, the version history of the spec its inputs and state
// were generated from (package automata/migrate): a machine in memory does
// not use it; a durable one (package automata/journal) reads the records of
// earlier versions through it.
//
// # Machines
//
// New starts a general machine, whose output function sees each whole Update
// (previous state, input, new state) and may output nothing; NewMoore one
// whose output is a function of state; NewMealy one whose output is a
// function of the state an input arrived in and that input. A running
// Machine offers Dispatch, Subscribe and Current, and Close.
//
// Inputs are applied one at a time, in the order they were queued. Every
// subscriber sees every update exactly once, in that same order. A new
// subscriber of a Moore or general machine first receives the output of the
// current state (a Replay update); a Mealy machine has no output without an
// input and replays nothing.
//
// # Dispatch: who does the work, what can block, what bounds memory
//
// Dispatch is safe from any goroutine and from inside subscribers, effects,
// jobs and event handlers; it never deadlocks and never waits for room. It
// returns an error only to refuse an input: ErrClosed after Close, the
// *FailError after a failure (see Fail-stop), and ErrNilInput for a nil
// input of a machine whose input type is an interface (a generated agent's
// AgentInput): no transition could apply it, so it is refused before any
// user code sees it (a job's nil is rejected, see Admission).
//
// Whoever finds the machine idle does the work: the goroutine calling
// Dispatch applies its input, calls the subscribers, runs the effects, and
// goes on with anything queued meanwhile, until the queue is empty. A call
// that finds another goroutine at work (including the caller itself, a few
// frames up, when a subscriber or effect dispatches) only appends to the
// queue and returns. So a program that dispatches from one goroutine is
// synchronous and deterministic: when Dispatch returns, the input, and
// everything the subscribers and effects dispatched in response, has been
// applied. That is what the Examples rely on.
//
// Dispatch therefore blocks only for as long as the work it was drafted into
// takes: its own input's subscribers and effects, and at most 1024 more
// inputs queued by others; past that it hands the rest of the queue to a new
// goroutine and returns, so a producer is never held hostage by others.
//
// Nothing bounds the queue but the producers: each input dispatched and not
// yet applied holds one slot (the size of I plus a pointer) until it is. A
// producer that is faster than the transition and subscribers grows the
// queue without limit; bound it upstream (a semaphore around Dispatch, or a
// durable machine, whose dispatch waits for the disk).
//
// # Effects
//
// An Effect is a synchronous function of a view of the state and a Dispatch.
// For a machine the view is the state; for an actor of a generated agent it
// is the actor's ContextOf view, projected from the agent state with Project.
// (This package says "view" for that value throughout, so that it cannot be
// mistaken for a context.Context, which jobs receive.) An effect must return
// promptly; asynchronous work runs in goroutines it starts.
//
// WithEffect runs an effect on the latest state after queued inputs have been
// applied: inputs that arrive together are applied first, and the effect
// sees only the last state (as Moorex batches), while subscribers still see
// every update. It also runs once on the initial state when the machine
// starts. Combinators: Sequential runs effects in order, Parallel runs them
// concurrently and waits, Stateful gives an effect a local state of its own
// that survives between calls and re-runs the effect when it changes.
//
// # Jobs: keyed reconciliation
//
// Effects fire and forget. For asynchronous work that must be tracked,
// cancelled and restarted after a crash — an LLM call, a tool call — use
// WithJobs: a pure function of state returns the jobs the state calls for, by
// key. After each batch of inputs (and at start) the machine reconciles:
//
//   - a key that appeared gets a Job, started in its own goroutine with its
//     own context.Context;
//   - a key that vanished has its job's context cancelled, and anything the
//     job dispatches from then on is dropped;
//   - a key still present is left alone;
//   - a key whose job returned while the key was still wanted is not started
//     again until the key vanishes and comes back. (Moorex restarts it on the
//     next state change, which makes a finished job run twice; here the state
//     must record the job's result through an input, and the key goes away.)
//     Except when an input the job dispatched was rejected (by an admission
//     step, or by a durable machine's journal): its result never reached
//     the state, so the job is reported as failed with a
//     *RejectedInputError, and the next reconcile — after the next applied
//     input — starts it again.
//
// A job that returns an error or panics is reported as an EffectFailed event
// (a panic as a *PanicError with the stack) and the machine keeps running.
// Only the job's own code is covered so: an input a job dispatches may be
// applied on the job's goroutine, and a panic in applying it is the
// machine's failure (see Fail-stop), not the job's.
//
// Agents made by agentgen give each actor its own jobs function, on its
// ContextOf view (WithActorJobs with ProjectJobs): its keys are prefixed
// with the actor's name ("brain/llm-7"), so that actors never clash.
//
// WithJobGate puts a gate before every job: a started job waits there until
// the gate lets it run (or its key vanishes), while inputs are still applied;
// it is how a devtool holds the jobs and lets them through one at a time.
// WithJobDispatch routes what jobs dispatch the same way: its route may hold
// a job's input before delivering it, and learns when the input is applied,
// which lets a devtool step an agent exactly one input at a time.
//
// JobKey(ctx) gives a job its key. The key is a function of state, so a
// restored agent derives the same keys for unfinished work: pass it to the
// LLM or tool as the idempotency key. A job may run more than once for the
// same key — after a crash before its result was recorded, or after its key
// vanished and came back — so delivery is at least once, and the key is how
// the far side makes it exactly once.
//
// Job goroutines that finish are kept parked (at most 20 per machine) to run
// later jobs; Close ends them.
//
// # Admission
//
// WithAdmission runs a step on every input before its transition, on the
// goroutine applying inputs and in apply order, with the state the input
// meets: it may rewrite the input (seed 000's server stamps every input with
// the time of its arrival, so that time never runs backwards whatever a
// browser's clock or a slow job says) or reject it with an error. A
// rejected input is not applied: the error goes to the DispatchWait that
// waits for it, if any, and is reported as an InputRejected event; the
// machine goes on. A nil input of an interface-typed machine is rejected
// (ErrNilInput) before the admission steps see it. Admission may read the clock, unlike Transition: it runs
// once per input, and a durable machine journals what it returned, so
// replay never runs it again.
//
// Dispatch queues an input and returns; DispatchWait queues it and waits for
// its outcome: nil once applied, else the error of the admission step that
// rejected it, ErrClosed, or the *FailError. An error from DispatchWait
// always means the input was not applied: if its ctx ends before the input
// is taken up, it is dropped; once taken up, DispatchWait waits whatever ctx
// does.
//
// # Fail-stop
//
// A panic in the code the machine runs on the goroutine applying inputs — a
// transition, an admission step, the output function, a subscriber, an
// effect, a jobs function, an event handler, or the purity check's own
// panic — stops the machine: it applies no further input, ever. Nothing is
// swallowed and nothing hangs, whichever goroutine was applying inputs (a
// caller of Dispatch, a job handing in its result, a hand-off goroutine).
// An effect made with Parallel is covered too: a panic on one of its
// goroutines is carried back to the machine's and reported with the stack
// of the goroutine that panicked.
//
//   - Err returns a *FailError naming what panicked (the transition, `the
//     effect of actor "user"`, …), the input it was applying, the panic
//     value and the stack; Done is closed; a MachineFailed event carries it;
//   - Dispatch and DispatchWait refuse later inputs with it, and every
//     input still queued is answered with it;
//   - the jobs are cancelled, and Close waits for them and returns it.
//
// The process does not crash: a program decides, by watching Done (or by
// checking what Dispatch and Close return), whether to log, restart the
// agent from its journal, or exit. Current still answers: the state after
// the last input that was applied. When an admission step, the committer's
// Prepare or the transition panicked, that is the state before the input
// that failed, which is not applied (nor journaled). When the output
// function, a subscriber, an effect, a jobs function or an event handler
// panicked, the input had been applied (and journaled) already: the state
// includes it, and a durable agent restarted from its journal has it too,
// so a subscriber or effect that panics on that state will panic again
// until its code is fixed.
//
// Why stop rather than skip the input: a transition that panicked may have
// written into the state before it did (an impure one, which is what
// WithPurityCheck's panic reports), and an effect or subscriber that
// panicked has left the outside world half-updated; going on would act on
// a state nobody can vouch for. A durable machine loses nothing by stopping:
// the inputs it acknowledged are in its journal.
//
// Code the machine does not run is not covered: goroutines an effect starts
// (and a Stateful effect's fn when update runs it from such a goroutine)
// are the program's own, and a panic there crashes the process as in any
// goroutine. A call of runtime.Goexit (as t.FailNow makes) in code the
// machine runs is a failure like a panic; in a job, it is the job's
// failure.
//
// # Purity
//
// Transition, jobs functions and effects must not write into the state they
// are given. An actor's ContextOf view shares slices with the agent state,
// so an effect that writes view.UserMessages[i].Content = … writes into
// state another actor owns, and into every subscriber's copy. With
// WithPurityCheck the machine fingerprints the state before each transition,
// effect and jobs function and stops (fail-stop) with an *ImpurityError
// naming the input or the effect (`the effect of actor "user"`) and the
// location written, as Go would write it (state.UserMessages[0].Content).
// The jobs themselves run concurrently with the machine: they must treat
// what they captured as read-only, which no check can enforce.
//
// # Write-ahead: committers
//
// WithCommitter makes a machine write-ahead: for each batch of inputs, in
// apply order, each is admitted, handed to the Committer's Prepare (which
// may reject it) and transitioned, then the batch is handed to Commit, and
// only once Commit returns nil are the inputs applied and their
// DispatchWait answered. Inputs that effects and jobs dispatch take the same
// path. Package journal is the committer of this module: a durable machine
// is this machine with an input journal, and every option here works the
// same on it.
//
// # Events
//
// WithEvents receives lifecycle events for logging and devtools, in Moorex's
// order: for each batch, InputReceived (or InputRejected) for each input,
// then EffectStarted and EffectCancelled as jobs are reconciled with the
// resulting state, then one StateUpdated; EffectCompleted and EffectFailed
// arrive when jobs return; MachineFailed, if it comes, is the last. All
// events are delivered by the goroutine applying inputs, one at a time, in
// one total order. ExampleWithEvents shows the order. A job whose key vanishes in
// the same batch that applied its own input — the usual way a job hands in its
// result — is reported when it returns (completed if it returned nil), not as
// cancelled.
//
// # Shutdown
//
// Close refuses later inputs (ErrClosed), applies the ones already queued
// (subscribers see them; effects and jobs no longer run), cancels every
// job, and waits for every goroutine the machine started — jobs, parked
// workers, hand-offs — to exit, up to its ctx's deadline. It returns the
// *FailError of a machine that failed. Done is closed once they have all
// exited, even when Close gave up waiting for a job that ignored its
// context and returned later. Goroutines that effects start
// themselves are theirs to stop.
//
// # What it is not
//
// Not a distributed actor system: one machine lives in one process. Not a
// persistence layer: durability (an input journal plus snapshots) builds on
// this package in a sub-package. Not an immutability library: purity is a
// contract, which CheckPure and WithPurityCheck help tests enforce.
//
// # Speed
//
// Measured with
//
//	go test -run XXX -bench 'Bare|Dispatch|Reconcile|JobFloor' -benchmem -count 5 ./automata/
//
// on this project's 2-core CI machine (AMD EPYC, Go 1.26, GOMAXPROCS=2,
// quiet: load average under 1; medians of 5, range in brackets):
//
//	BenchmarkBareTransition        1.5 ns/op [1.3-1.6]  0 allocs  the floor: the transition alone
//	BenchmarkDispatch               47 ns/op [47-48]    0 allocs  one producer, one subscriber
//	BenchmarkDispatchParallel      231 ns/op [206-389]  0 allocs  two producers, one subscriber
//	BenchmarkReconcile/chains=1    651 ns/op [619-700]  5 allocs  1,540,000 jobs/s
//	BenchmarkReconcile/chains=4    627 ns/op [619-658]  5 allocs  1,590,000 jobs/s
//	BenchmarkJobFloor              362 ns/op [355-373]  4 allocs  2,760,000 jobs/s
//
// BenchmarkReconcile runs keyed jobs in chains: each job dispatches its own
// key, whose transition closes it and opens the next. BenchmarkJobFloor is
// what a job costs without any runtime: a context.WithCancel and a goroutine
// that waits on it and ends, 4 at a time. A job of 4 chains costs 1.73 times
// the floor (1.72 to 1.74 by median in three runs of the command). Of its 6
// allocations (go test prints 5: it rounds 5.99 down), 2 are the runtime's:
// the job, which is also its context (64 bytes), and its dispatch function
// (32 bytes). The other 4 are the benchmark's: the transition's new slice
// and key, and the jobs function's map (its header and its slots).
// TestJobsAllocateTwiceEach counts them. What the
// runtime adds to the floor is a map diff (each wanted key looked up once
// among the running jobs), the hand-over to a parked worker goroutine
// (reused: a fresh goroutine would grow its stack again), and four short
// critical sections; without event handlers, the end of a job whose own
// input closed its key is not recorded at all. Machine.Jobs, which a
// registry of agents reads to keep an agent with a job in flight active,
// costs two atomic additions a job: 3% (chains=4 at 594 against 578 ns,
// medians of four runs alternating the binaries, the floor at 333 in both).
//
// One-at-a-time dispatch runs at about 21 million inputs/s, against about
// 550,000/s for the TypeScript Moorex on Node 20 on the same machine (38×).
// Keyed jobs, 4 chains, alternating with Moorex 0.2.3 running the same
// chains on Node 20 three times: 666-705 ns a job against 1,439-1,542 (2.2×).
// Under load (a concurrent build, load average 3 to 7) the same benchmarks
// ran 1.3 to 2 times slower.
//
// The runtime contract (fail-stop, admission, the committer seam, nil
// checks) costs nothing on this path: against the code before it, in one
// run alternating the two test binaries six times,
//
//	/usr/bin/time -f "%U %S" ./automata.test -test.run XXX -test.bench '^BenchmarkDispatch$' -test.benchtime 30000000x -test.cpu 1
//
// took 1.44-1.49 s of CPU against 1.54-1.61 s (0.94×; 48.7 against 52
// ns/op), because the goroutine applying inputs is no longer counted in a
// WaitGroup. (CPU time, as the machine was loaded by other builds: the wall
// clock varied fourfold from run to run.)
//
// Telemetry (WithTelemetry) costs nothing when it is off: in one run
// alternating the test binaries of before and after it three times,
//
//	./automata.test -test.run XXX -test.bench '^BenchmarkDispatch$' -test.benchtime 30000000x -test.cpu 1
//
// took 46.9, 47.4 and 47.7 ns/op against 48.1, 47.0 and 48.0 before (0.98 to
// 1.01×, the machine's noise), with 0 allocations either way
// (BenchmarkReconcile/chains=4, 1,000,000 jobs: 770 ns a job against 841); and
// TestJobsAllocateTwiceEach still counts 2 allocations a job of the
// runtime's, of the same bytes (the job's telemetry is a pointer in room
// its struct had to spare). A DispatchWait allocates 8 bytes more, 160
// against 152: its waiter points to the caller's context
// (TestHostileTelemetryOffCostsBytes pins both). On, with the real SDK (every input sampled and handed to a
// batching span processor whose exporter drops it, and measured by a
// manual reader),
//
//	go test -run XXX -bench 'Telemetry' -benchmem -count 3 ./automata/ ./automata/journal/
//
// gave BenchmarkTelemetry/off 46.8-47.1 ns and 0 allocations against /on
// 2,387-2,457 ns and 24 allocations an input (51×: the SDK's span and the
// three measurements); in a durable machine, whose input waits for its
// fsync, BenchmarkDurableTelemetry/off 300-307 µs against /on 308-310 µs
// (1.01 to 1.03×, within the disk's noise).
//
// BenchmarkAppend compares automata.Append with copying (append to
// slices.Clip) for one message added to a conversation: Append stays at
// 0.2-0.6 µs/op from 100 to 1,000,000 messages (amortized, including the
// occasional reallocation), while copying costs 8 µs at 100, 0.3 ms at
// 10,000 and 50-70 ms at 1,000,000.
package automata
