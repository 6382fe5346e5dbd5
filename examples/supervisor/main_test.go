package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/registry"
	pdecl "github.com/moora-go/moora/examples/supervisor/planner/decl"
)

// The test binary doubles as the program: with this variable set it runs
// main, so that a test runs the command as a real process.
const asProgram = "SUPERVISOR_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asProgram) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// offline makes the environment choose the scripted model.
func offline(t *testing.T) {
	t.Setenv("LLM_PROVIDER", "")
	t.Setenv("OPENAI_MODEL", "")
}

// TestAskOffline runs the one command of the README in a process of its
// own: the request is answered through both workers, whose agents, opened
// again from the data directory once the process is gone, hold what the
// command printed: the researcher its findings, the writer the answer,
// each a sub-agent of the planner for its job. A second run on the same
// data asks the planner's second request, of two new workers.
func TestAskOffline(t *testing.T) {
	offline(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-data", dir, "-ask", "why is the sky blue?") // the README's command
	cmd.Env = append(os.Environ(), asProgram+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the command: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	researcher, writer := ResearcherOf(PlannerID, 1), WriterOf(PlannerID, 1)
	findings := `the researcher's findings on "why is the sky blue?": three facts, each with its source`
	answer := `The writer's answer to "why is the sky blue?", written from ` + findings + "."
	want := []string{
		"planner:     http://127.0.0.1:",
		"request 1: why is the sky blue?\n",
		"research, by researcher " + researcher + ": Find the facts for: why is the sky blue?\n",
		"  findings: " + findings + "\n",
		"writing, by writer " + writer + ": Write the answer to: why is the sky blue?\n",
		"answer: " + answer + "\n",
	}
	assertInOrder(t, string(out), want)

	// Run again on the same data: the planner's second request, given to
	// two workers of its own.
	again := exec.Command(os.Args[0], "-data", dir, "-ask", "and at sunset?")
	again.Env, again.Stderr = cmd.Env, &stderr
	if out, err = again.Output(); err != nil {
		t.Fatalf("the second command: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	assertInOrder(t, string(out), []string{
		"request 2: and at sunset?\n",
		"research, by researcher " + ResearcherOf(PlannerID, 2) + ": Find the facts for: and at sunset?\n",
		"writing, by writer " + WriterOf(PlannerID, 2) + ": Write the answer to: and at sunset?\n",
		`answer: The writer's answer to "and at sunset?", written from the researcher's findings on "and at sunset?"`,
	})

	team, err := OpenTeam(dir, "unused", Offline(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := team.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()
	r := state(t, team.Researchers, researcher)
	if r.Findings != findings || r.Task != "Find the facts for: why is the sky blue?" {
		t.Errorf("the researcher holds %+v", r)
	}
	w := state(t, team.Writers, writer)
	if w.Text != answer || w.Research != findings {
		t.Errorf("the writer holds %+v", w)
	}
	for _, c := range []struct {
		id   string
		info func(string) (journal.AgentInfo, error)
		job  string
	}{
		{researcher, team.Researchers.Info, "planner/research-1"},
		{writer, team.Writers.Info, "planner/write-1"},
	} {
		info, err := c.info(c.id)
		if err != nil || info.Delegated == nil || *info.Delegated != (journal.Delegation{Agent: PlannerID, Job: c.job, Depth: 1}) {
			t.Errorf("%s: %+v %v, want a sub-agent of %s for %s", c.id, info.Delegated, err, PlannerID, c.job)
		}
	}
	p, release, err := team.Planners.Get(ctx, PlannerID)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if s := p.Machine().Current(); len(s.Requests) != 2 || s.Working != 2 || s.Phase != pdecl.PhaseDone {
		t.Errorf("the planner holds %+v", s)
	}
}

// state is the state of agent id of reg.
func state[S, I any](t *testing.T, reg *registry.Registry[S, I], id string) S {
	t.Helper()
	a, release, err := reg.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	return a.Machine().Current()
}

// assertInOrder checks that out holds each of want, in order.
func assertInOrder(t *testing.T, out string, want []string) {
	t.Helper()
	rest := out
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("the output lacks %q (in order):\n%s", w, out)
		}
		rest = rest[i+len(w):]
	}
}
