// Command engines runs one agent-turn workload on moora-go's journal
// backends, on Temporal (its server, built from its Go module, a child
// process on a SQLite file) and on DBOS (on a PostgreSQL cluster it starts
// itself), for 1 and 64 concurrent conversations, and prints one table:
// turns/s, p50 and p99 turn latency, and the ratio of turns/s to moora-go
// on a pebble Fleet, the default backend, in the same run.
//
// A turn is four durable steps: the user's input, a "model" step, a "tool"
// step (both no-ops that return at once) and the reply. Each conversation
// runs its turns one after another (closed loop); a turn's latency is from
// the submission of the user's input until the engine reports the turn done,
// every step of it durable.
//
//	cd bench/engines && go run .
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// engine is one system under test, set up for a number of conversations.
type engine struct {
	name       string
	durability string
	// setup prepares the engine for convs conversations and returns the
	// function that runs turn k of conversation c to its durable end, and a
	// function that tears it all down.
	setup func(ctx context.Context, dir string, convs int) (turn func(ctx context.Context, c, k int) error, teardown func() error, err error)
}

type result struct {
	engine, durability string
	convs              int
	turns              int
	rate               float64
	p50, p99           time.Duration
	lats               []time.Duration // of every measured turn
	measured           time.Duration   // the time turns were counted in
	err                error
}

func main() {
	duration := flag.Duration("duration", 5*time.Second, "measured time per case")
	warmup := flag.Duration("warmup", time.Second, "unmeasured time per case before it")
	convsFlag := flag.String("convs", "1,64", "numbers of concurrent conversations")
	only := flag.String("engines", "", "comma-separated subset of engines (by name prefix); empty: all")
	rounds := flag.Int("rounds", 3, "rounds: every row is measured this many times, interleaved with the others, and pooled")
	flag.Parse()

	var convList []int
	for _, s := range strings.Split(*convsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bad -convs %q\n", *convsFlag)
			os.Exit(2)
		}
		convList = append(convList, n)
	}

	root, err := os.MkdirTemp("", "engines-")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(root)

	ctx := context.Background()
	engines := []engine{mooraPebbleFleet(), mooraPebbleStore(), mooraBoltFleet(), mooraBoltStore(), mooraJetStream(), temporalEngine(), dbosEngine()}
	// The rows are measured in rounds, each row once per round, so that a
	// burst of noise on the machine is spread over all of them.
	var results []result
	index := map[string]int{}
	for round := 1; round <= *rounds; round++ {
		for _, convs := range convList {
			for _, e := range engines {
				if *only != "" && !matches(*only, e.name) {
					continue
				}
				fmt.Fprintf(os.Stderr, "round %d/%d: %s, %d conversation(s)...\n", round, *rounds, e.name, convs)
				dir, err := os.MkdirTemp(root, "case-")
				if err != nil {
					fatal(err)
				}
				r := run(ctx, e, dir, convs, *warmup, *duration)
				os.RemoveAll(dir)
				if r.err != nil {
					fmt.Fprintf(os.Stderr, "  %s: %v\n", e.name, r.err)
				} else {
					fmt.Fprintf(os.Stderr, "  %.0f turns/s, p50 %v, p99 %v (%d turns)\n", r.rate, r.p50, r.p99, r.turns)
				}
				key := fmt.Sprintf("%s/%d", e.name, convs)
				i, ok := index[key]
				if !ok {
					index[key] = len(results)
					results = append(results, r)
					continue
				}
				results[i] = pool(results[i], r)
			}
		}
	}
	printTable(results, *duration, *warmup, *rounds)
}

func matches(list, name string) bool {
	for _, p := range strings.Split(list, ",") {
		if p = strings.TrimSpace(p); p != "" && strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// run sets e up for convs conversations, runs them for warmup and then
// duration, and measures the turns that started after the warm-up.
func run(ctx context.Context, e engine, dir string, convs int, warmup, duration time.Duration) result {
	r := result{engine: e.name, durability: e.durability, convs: convs}
	turn, teardown, err := e.setup(ctx, dir, convs)
	if err != nil {
		r.err = fmt.Errorf("setup: %w", err)
		return r
	}
	start := time.Now()
	measureFrom := start.Add(warmup)
	end := measureFrom.Add(duration)
	lats := make([][]time.Duration, convs)
	done := make([]int, convs)
	errs := make([]error, convs)
	var wg sync.WaitGroup
	for c := range convs {
		wg.Go(func() {
			for k := 1; ; k++ {
				t0 := time.Now()
				if !t0.Before(end) {
					return
				}
				tctx, cancel := context.WithTimeout(ctx, time.Minute)
				err := turn(tctx, c, k)
				cancel()
				t1 := time.Now()
				if err != nil {
					errs[c] = fmt.Errorf("conversation %d, turn %d: %w", c, k, err)
					return
				}
				if !t1.Before(measureFrom) && !t1.After(end) {
					done[c]++
				}
				if !t0.Before(measureFrom) {
					lats[c] = append(lats[c], t1.Sub(t0))
				}
			}
		})
	}
	wg.Wait()
	if terr := teardown(); terr != nil {
		fmt.Fprintf(os.Stderr, "  teardown of %s: %v\n", e.name, terr)
	}
	for _, err := range errs {
		if err != nil {
			r.err = err
			return r
		}
	}
	var all []time.Duration
	for c := range convs {
		r.turns += done[c]
		all = append(all, lats[c]...)
	}
	if len(all) == 0 {
		r.err = fmt.Errorf("no turn measured")
		return r
	}
	r.lats, r.measured = all, duration
	return summarize(r)
}

func summarize(r result) result {
	slices.Sort(r.lats)
	r.rate = float64(r.turns) / r.measured.Seconds()
	r.p50 = percentile(r.lats, 0.50)
	r.p99 = percentile(r.lats, 0.99)
	return r
}

// pool adds round b to the rounds a holds; a failed round fails the row.
func pool(a, b result) result {
	if a.err != nil {
		return a
	}
	if b.err != nil {
		return b
	}
	a.turns += b.turns
	a.measured += b.measured
	a.lats = append(a.lats, b.lats...)
	return summarize(a)
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(float64(len(sorted))*p+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

const reference = "moora-go pebble Fleet"

func printTable(results []result, duration, warmup time.Duration, rounds int) {
	ref := map[int]float64{}
	for _, r := range results {
		if r.engine == reference && r.err == nil {
			ref[r.convs] = r.rate
		}
	}
	fmt.Printf("agent turn (user input, model step, tool step, reply; each step durable), closed loop per conversation;\n%d interleaved rounds, each row %v measured after %v warm-up per round, pooled\n", rounds, duration, warmup)
	fmt.Printf("%s, %d CPUs (GOMAXPROCS %d), %s/%s, %s\n\n", cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, runtime.Version())
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 1, ' ', 0)
	fmt.Fprintln(w, "| engine\t| durability\t| conversations\t| turns/s\t| p50\t| p99\t| turns/s ÷ "+reference+"\t|")
	fmt.Fprintln(w, "|---\t|---\t|--:\t|--:\t|--:\t|--:\t|--:\t|")
	for _, r := range results {
		if r.err != nil {
			fmt.Fprintf(w, "| %s\t| %s\t| %d\t| failed: %v\t|\t|\t|\t|\n", r.engine, r.durability, r.convs, firstLine(r.err.Error()))
			continue
		}
		ratio := "—"
		if base := ref[r.convs]; base > 0 {
			ratio = fmt.Sprintf("%.3f", r.rate/base)
		}
		fmt.Fprintf(w, "| %s\t| %s\t| %d\t| %.0f\t| %s\t| %s\t| %s\t|\n", r.engine, r.durability, r.convs, r.rate, ms(r.p50), ms(r.p99), ratio)
	}
	w.Flush()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
