package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The seed agents, by corpus directory: their specs.
var replayAgents = []struct{ name, spec string }{
	{"reflexor", "../../automata/agents/reflexor/agent.yaml"},
	{"persistent", "../../automata/agents/persistent/agent.yaml"},
	{"react", "../../examples/react/agent.yaml"},
}

// copyCorpus copies testdata/replay/name into a temporary directory, so
// that a run (bolt.Open, --accept) leaves the committed files alone.
func copyCorpus(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "replay", name))); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runAgentgen(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestReplayCorpus: every journal of the committed corpus replays
// identically on today's code of its agent, compared at every record's
// digest where it has them.
func TestReplayCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the seed agents")
	}
	for _, a := range replayAgents {
		t.Run(a.name, func(t *testing.T) {
			dir := copyCorpus(t, a.name)
			code, out, errs := runAgentgen(t, "replay", "-f", a.spec, "--json", dir)
			if code != exitOK {
				t.Fatalf("agentgen replay: exit %d\n%s%s", code, out, errs)
			}
			var rep struct {
				Journals []struct {
					Path       string          `json:"path"`
					Inputs     int             `json:"inputs"`
					Digests    int             `json:"digests"`
					Snapshots  int             `json:"snapshots"`
					Divergence json.RawMessage `json:"divergence"`
				} `json:"journals"`
				Summary struct{ Agents, Inputs, Identical, Diverged int } `json:"summary"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("the --json report: %v\n%s", err, out)
			}
			if rep.Summary.Agents == 0 || rep.Summary.Identical != rep.Summary.Agents || rep.Summary.Diverged != 0 {
				t.Fatalf("summary %+v, want every journal identical", rep.Summary)
			}
			digested := 0
			for _, j := range rep.Journals {
				if j.Inputs == 0 || j.Snapshots == 0 {
					t.Errorf("%s: %d inputs, %d snapshots compared; want some of each", j.Path, j.Inputs, j.Snapshots)
				}
				if strings.HasSuffix(j.Path, "agent.db") || strings.Contains(j.Path, "agents.db#") {
					if j.Digests != j.Inputs {
						t.Errorf("%s: %d digests compared for %d inputs, want one per input", j.Path, j.Digests, j.Inputs)
					}
					digested++
				}
			}
			if digested == 0 {
				t.Fatalf("no journal with digests in %s", dir)
			}
		})
	}
}

// TestReplayReportsAChangedTransitionAndAcceptRecordsIt: a Reflexor whose
// user-send-message transition changed (a test copy, put in place by an
// overlay of the build, drops a message's trailing question mark) diverges
// at the input of the one message that ends with one, which agentgen
// replay names, with the JSON Patch of the states, and exit 1; --accept
// records the change, after which a replay is identical, and the code of
// today diverges from the accepted journal.
func TestReplayReportsAChangedTransitionAndAcceptRecordsIt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Reflexor")
	}
	const spec = "../../automata/agents/reflexor/agent.yaml"
	orig, err := filepath.Abs("../../automata/agents/reflexor/impl/transitions/user_user-send-message.go")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	from := "decl.UserMessage{ID: input.MessageID, Content: input.Content,"
	if !bytes.Contains(src, []byte(from)) {
		t.Fatalf("%s no longer has %q: change the test's copy", orig, from)
	}
	changed := bytes.Replace(src, []byte(from), []byte(`decl.UserMessage{ID: input.MessageID, Content: strings.TrimSuffix(input.Content, "?"),`), 1)
	changed = bytes.Replace(changed, []byte(`import "github.com/moora-go/moora/automata/agents/reflexor/decl"`), []byte("import (\n\t\"strings\"\n\n\t\"github.com/moora-go/moora/automata/agents/reflexor/decl\"\n)"), 1)
	tmp := t.TempDir()
	copyPath := filepath.Join(tmp, "user_user-send-message.go")
	if err := os.WriteFile(copyPath, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {orig: copyPath}})
	overlayPath := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayPath, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(copyCorpus(t, "reflexor"), "agent.db")

	t.Setenv("GOFLAGS", "-overlay="+overlayPath)
	code, out, errs := runAgentgen(t, "replay", "-f", spec, "--json", journal)
	if code != exitFailed {
		t.Fatalf("agentgen replay of the changed code: exit %d, want 1\n%s%s", code, out, errs)
	}
	var rep struct {
		Journals []struct {
			Divergence struct {
				Seq, Since, DiffAt uint64
				Input              map[string]any
				Diff               []struct{ Op, Path string }
			}
		}
		Summary struct{ Agents, Identical, Diverged int }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	d := rep.Journals[0].Divergence
	if rep.Summary.Diverged != 1 || d.Input["type"] != "user-send-message" || d.Input["content"] != "what is (2 + 3) * 4?" || d.Since != d.Seq-1 {
		t.Fatalf("summary %+v, divergence %+v: want the input of the message ending in ?, named exactly", rep.Summary, d)
	}
	diff, _ := json.Marshal(d.Diff)
	if d.DiffAt == 0 || !strings.Contains(string(diff), `{"Op":"replace","Path":"/userMessages/1/content"}`) {
		t.Fatalf("diff at %d: %s; want the replace of the second message's content", d.DiffAt, diff)
	}
	// The text report names it too.
	code, out, _ = runAgentgen(t, "replay", "-f", spec, journal)
	if code != exitFailed || !strings.Contains(out, "diverged") || !strings.Contains(out, `"content":"what is (2 + 3) * 4?"`) || !strings.Contains(out, "/userMessages/1/content") {
		t.Fatalf("text report: exit %d\n%s", code, out)
	}

	code, out, errs = runAgentgen(t, "replay", "-f", spec, "--accept", journal)
	if code != exitOK || !strings.Contains(out, "accepted 1") {
		t.Fatalf("agentgen replay --accept: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runAgentgen(t, "replay", "-f", spec, journal)
	if code != exitOK || !strings.Contains(out, "identical 1, diverged 0") {
		t.Fatalf("agentgen replay after --accept: exit %d, want identical\n%s%s", code, out, errs)
	}

	t.Setenv("GOFLAGS", "")
	code, out, _ = runAgentgen(t, "replay", "-f", spec, journal)
	if code != exitFailed || !strings.Contains(out, "diverged 1") {
		t.Fatalf("today's code against the accepted journal: exit %d, want 1\n%s", code, out)
	}
}
