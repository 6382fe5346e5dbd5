package delegate_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/delegate"
	"github.com/moora-go/moora/automata/journal"
)

const killEnv = "DELEGATE_KILL_CHILD"

var killTasks = []string{"plan", "write"}

// TestKillChild is the agent process of TestKilledParent: a parent whose
// tasks are delegated to children, in round 0 stopped at the point its
// mode names until it is killed, in round 1 let through to the end. It
// says on stdout:
//
//	at <point> <task>    round 0 has reached the point
//	done                 round 1: every task has its result
func TestKillChild(t *testing.T) {
	dir := os.Getenv(killEnv)
	if dir == "" {
		t.Skip("the agent process of TestKilledParent")
	}
	mode, round := os.Getenv(killEnv+"_MODE"), os.Getenv(killEnv+"_ROUND")
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
		out.Unlock()
	}
	stop := func(ctx context.Context, point, task string) {
		if round == "0" && mode == point {
			say("at %s %s", point, task)
			<-ctx.Done() // until killed
		}
	}
	let := func(ctx context.Context, task string) error {
		stop(ctx, "child-running", task)
		return ctx.Err()
	}
	// The parents' jobs, stopped where the mode says: before the
	// delegation (no child yet), or with the result in hand.
	tm := openTeamWith(t, dir, delegate.Config[childState, childInput]{}, let, func(tm *team, id string) automata.Option[parentState, parentInput] {
		return automata.WithJobs(func(s parentState) map[string]automata.Job[parentInput] {
			jobs := map[string]automata.Job[parentInput]{}
			for _, task := range s.Tasks {
				job := delegate.Job(tm.d, id, childInput{Task: task},
					func(c childState) (parentInput, bool) {
						return parentInput{Task: task, Result: c.Answer}, c.Answer != ""
					},
					func(err error) parentInput { return parentInput{Task: task, Result: "failed: " + err.Error()} })
				jobs["task/"+task] = func(ctx context.Context, dispatch automata.Dispatch[parentInput]) error {
					stop(ctx, "before-child", task)
					return job(ctx, func(in parentInput) {
						stop(ctx, "result-ready", task)
						dispatch(in)
					})
				}
			}
			return jobs
		})
	})
	if round == "0" {
		if _, err := tm.parents.Create("boss", "ann"); err != nil {
			say("fail %v", err)
			os.Exit(3)
		}
		for _, task := range killTasks {
			tm.ask(t, "boss", parentInput{Ask: task})
		}
		select {} // until killed
	}
	tm.waitParent(t, "boss", "every result", func(s parentState) bool { return len(s.Results) == len(killTasks) })
	tm.close(t)
	say("done")
}

// TestKilledParent: the process of a parent agent that delegates two tasks
// is killed with SIGKILL (a) before the children exist, (b) while they
// work, (c) after they finished and before the parent got their results;
// the next process goes on. In each case each task has exactly one child,
// which got its task once and answered once, and exactly one result in
// the parent's journal.
func TestKilledParent(t *testing.T) {
	for _, mode := range []string{"before-child", "child-running", "result-ready"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			runKillChild(t, dir, mode, 0, func(lines <-chan string) {
				seen := map[string]bool{}
				for line := range lines {
					if task, ok := strings.CutPrefix(line, "at "+mode+" "); ok {
						seen[task] = true
					}
					if len(seen) == len(killTasks) {
						return // each task is at the point: kill
					}
				}
				t.Fatal("the agent process ended before reaching " + mode)
			})
			checkAfterKill(t, dir, mode)
			runKillChild(t, dir, mode, 1, func(lines <-chan string) {
				for line := range lines {
					if line == "done" {
						return
					}
				}
				t.Fatal("the agent process ended before every task had its result")
			})
			checkOnce(t, dir)
		})
	}
}

// runKillChild runs round of the agent process on dir and kills it with
// SIGKILL once until, reading its lines, returns.
func runKillChild(t *testing.T, dir, mode string, round int, until func(lines <-chan string)) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), killEnv+"="+dir, killEnv+"_MODE="+mode, fmt.Sprintf("%s_ROUND=%d", killEnv, round))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "fail ") {
				t.Errorf("the agent process: %s", sc.Text())
			}
			lines <- sc.Text()
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		until(lines)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Error("the agent process hung")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	go func() {
		for range lines {
		}
	}()
	cmd.Wait()
}

// checkAfterKill checks that the kill came where the mode says.
func checkAfterKill(t *testing.T, dir, mode string) {
	t.Helper()
	tm := openTeam(t, dir, delegate.Config[childState, childInput]{}, func(ctx context.Context, _ string) error {
		<-ctx.Done() // no work in the checker
		return ctx.Err()
	})
	defer tm.close(t)
	children := tm.childInfos(t)
	for _, task := range killTasks {
		id := delegate.ChildID("boss", "task/"+task)
		_, exists := children[id]
		var s childState
		if exists {
			s = tm.childState(t, id)
		}
		switch {
		case mode == "before-child" && exists:
			t.Fatalf("killed before the child of %s existed, but it does: %+v", task, s)
		case mode == "child-running" && (!exists || s.Task != task || s.Answer != ""):
			t.Fatalf("killed while the child of %s ran: it is %+v (exists %v)", task, s, exists)
		case mode == "result-ready" && (!exists || s.Answer == ""):
			t.Fatalf("killed after the child of %s finished: it is %+v (exists %v)", task, s, exists)
		}
	}
	if n := tm.resultsJournaled(t); n != 0 {
		t.Fatalf("killed before any result, but the parent's journal holds %d", n)
	}
}

// checkOnce checks that each task had one child, given its task once, and
// one result in the parent's journal.
func checkOnce(t *testing.T, dir string) {
	t.Helper()
	tm := openTeam(t, dir, delegate.Config[childState, childInput]{}, nil)
	defer tm.close(t)
	if n := len(tm.childInfos(t)); n != len(killTasks) {
		t.Fatalf("%d children for %d tasks", n, len(killTasks))
	}
	for _, task := range killTasks {
		id := delegate.ChildID("boss", "task/"+task)
		entries := tm.childEntries(t, id)
		tasks, answers := 0, 0
		for _, e := range entries {
			if e.Input.Task != "" {
				tasks++
			}
			if e.Input.Answer != "" {
				answers++
			}
		}
		if tasks != 1 || answers != 1 {
			t.Fatalf("the child of %s got its task %d times and answered %d times, want once each", task, tasks, answers)
		}
	}
	if n := tm.resultsJournaled(t); n != len(killTasks) {
		t.Fatalf("the parent's journal holds %d results for %d tasks", n, len(killTasks))
	}
}

func (tm *team) childState(t testing.TB, id string) childState {
	t.Helper()
	a, release, err := tm.children.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	return a.Machine().Current()
}

func (tm *team) childEntries(t testing.TB, id string) []journal.Entry[childInput] {
	t.Helper()
	a, release, err := tm.children.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	entries, err := a.Machine().Inputs(1, a.Machine().Seq())
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// resultsJournaled counts the results in boss's journal, without letting
// its jobs run: its store is read directly.
func (tm *team) resultsJournaled(t testing.TB) int {
	t.Helper()
	s, err := tm.pfleet.Open("boss")
	if err != nil {
		t.Fatal(err)
	}
	m, err := journal.Open(s, parentModel, journal.Options[parentState, parentInput]{Codec: journal.JSON[parentState, parentInput](nil), SkipCloseSnapshot: true})
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	entries, err := m.Inputs(1, m.Seq())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.Input.Task != "" {
			n++
		}
	}
	return n
}
