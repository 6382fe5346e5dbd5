package modelgen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/modeltest"
)

// notesSpec is the agent the fuzz target's test generates: a user who adds
// and drops notes and counts them by kind, an llm that replies and counts
// its replies by kind.
const notesSpec = `version: 1
actors: [user, llm]
$defs:
  Kind: {type: string, enum: [idea, todo]}
  Note:
    type: object
    properties:
      id: {type: string, minLength: 1, maxLength: 3}
      kind: {$ref: "#/$defs/Kind"}
      words: {type: array, items: {type: string, maxLength: 4}, maxItems: 3}
    required: [id, kind]
  Reply:
    type: object
    properties:
      kind: {$ref: "#/$defs/Kind"}
      text: {type: string}
      at: {type: integer}
    required: [kind, text, at]
observations:
  user:
    user:
      notes: {type: array, items: {$ref: "#/$defs/Note"}}
      noteCounts: {type: object, additionalProperties: {type: integer}}
    llm:
      replies: {type: array, items: {$ref: "#/$defs/Reply"}}
      replyCounts: {type: object, additionalProperties: {type: integer}}
  llm:
    user:
      notes: {type: array, items: {$ref: "#/$defs/Note"}}
      noteCounts: {type: object, additionalProperties: {type: integer}}
    llm:
      replies: {type: array, items: {$ref: "#/$defs/Reply"}}
      replyCounts: {type: object, additionalProperties: {type: integer}}
inputs:
  user:
    add-note:
      type: object
      properties: {note: {$ref: "#/$defs/Note"}}
      required: [note]
    drop-last-note: {type: object, properties: {}}
  llm:
    send-reply:
      type: object
      properties:
        kind: {$ref: "#/$defs/Kind"}
        text: {type: string, maxLength: 6}
        timestamp: {type: integer, minimum: 0}
      required: [kind, text, timestamp]
`

// notesCode is the agent's hand-written code, lawful.
var notesCode = map[string]string{
	"impl/initials/user.go": `package initials

import "example.com/notes/decl"

func User() decl.StateOfUser {
	return decl.StateOfUser{Notes: []decl.Note{}, NoteCounts: map[string]int64{}}
}
`,
	"impl/initials/llm.go": `package initials

import "example.com/notes/decl"

func Llm() decl.StateOfLlm {
	return decl.StateOfLlm{Replies: []decl.Reply{}, ReplyCounts: map[string]int64{}}
}
`,
	"impl/transitions/user_add-note.go": `package transitions

import (
	"maps"
	"slices"

	"example.com/notes/decl"
)

func AddNote(state decl.StateOfUser, input decl.AddNote) decl.StateOfUser {
	state.Notes = append(slices.Clip(state.Notes), input.Note)
	state.NoteCounts = maps.Clone(state.NoteCounts)
	state.NoteCounts[string(input.Note.Kind)]++
	return state
}
`,
	"impl/transitions/user_drop-last-note.go": `package transitions

import (
	"maps"

	"example.com/notes/decl"
)

func DropLastNote(state decl.StateOfUser, input decl.DropLastNote) decl.StateOfUser {
	if len(state.Notes) == 0 {
		return state
	}
	last := state.Notes[len(state.Notes)-1]
	state.Notes = state.Notes[:len(state.Notes)-1]
	state.NoteCounts = maps.Clone(state.NoteCounts)
	state.NoteCounts[string(last.Kind)]--
	return state
}
`,
	"impl/transitions/llm_send-reply.go": `package transitions

import (
	"maps"
	"slices"

	"example.com/notes/decl"
)

func SendReply(state decl.StateOfLlm, input decl.SendReply) decl.StateOfLlm {
	state.Replies = append(slices.Clip(state.Replies), decl.Reply{Kind: input.Kind, Text: input.Text, At: input.Timestamp})
	state.ReplyCounts = maps.Clone(state.ReplyCounts)
	state.ReplyCounts[string(input.Kind)]++
	return state
}
`,
	// replay_test.go replays a sequence a failure printed, from the file
	// $REPLAY, as the generated target's doc says.
	"impl/agent/replay_test.go": `package agent_test

import (
	"os"
	"testing"

	"example.com/notes/decl"
	"github.com/moora-go/moora/automata/modeltest"
)

func TestReplay(t *testing.T) {
	file := os.Getenv("REPLAY")
	if file == "" {
		t.Skip("no REPLAY")
	}
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	seq, err := modeltest.ReadSequence(string(text), decl.DecodeInput)
	if err != nil {
		t.Fatal(err)
	}
	if v := modeltest.Run(transitionsModel(), seq); v != nil {
		t.Fatal(v)
	}
}
`,
}

// TestFuzzTargetFindsSeededBugs generates an agent, writes its code, and
// runs its FuzzTransitions with go test -fuzz: on the lawful code for a
// few seconds, finding nothing; then with one bug seeded at a time, each
// of which it must find (the law named, the shortest sequence printed),
// with the bytes saved under testdata/fuzz when the fuzzer (not the seed
// corpus) found it, on which a plain go test fails again, and with the
// printed sequence, which replays to the same law.
func TestFuzzTargetFindsSeededBugs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the fuzzer: about a minute")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(t.TempDir(), "notes")
	spec := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(spec, []byte(notesSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(base, InitOptions{Spec: spec, Module: "example.com/notes", Toolkit: root}); err != nil {
		t.Fatal(err)
	}
	writeCode(t, base, notesCode)

	cases := []struct {
		name  string
		files map[string]string
		law   modeltest.Law // "" when nothing is to be found
		// maxInputs bounds the minimised sequence, when set.
		maxInputs int
		want      string // in the message
	}{
		{name: "lawful code", law: ""},
		{
			// The empty map is shared by both initial states, and the
			// transition adds to it in place: the llm's counts change.
			name: "a transition that writes another actor's state",
			files: map[string]string{
				"impl/initials/user.go": `package initials

import "example.com/notes/decl"

var noCounts = map[string]int64{}

func User() decl.StateOfUser {
	return decl.StateOfUser{Notes: []decl.Note{}, NoteCounts: noCounts}
}
`,
				"impl/initials/llm.go": `package initials

import "example.com/notes/decl"

func Llm() decl.StateOfLlm {
	return decl.StateOfLlm{Replies: []decl.Reply{}, ReplyCounts: noCounts}
}
`,
				"impl/transitions/user_add-note.go": `package transitions

import (
	"slices"

	"example.com/notes/decl"
)

func AddNote(state decl.StateOfUser, input decl.AddNote) decl.StateOfUser {
	state.Notes = append(slices.Clip(state.Notes), input.Note)
	state.NoteCounts[string(input.Note.Kind)]++
	return state
}
`,
			},
			law: modeltest.OwnStateOnly, maxInputs: 1, want: "an input of user changed the state of llm",
		},
		{
			name: "a transition that reads the clock",
			files: map[string]string{
				"impl/transitions/llm_send-reply.go": `package transitions

import (
	"maps"
	"slices"
	"time"

	"example.com/notes/decl"
)

func SendReply(state decl.StateOfLlm, input decl.SendReply) decl.StateOfLlm {
	state.Replies = append(slices.Clip(state.Replies), decl.Reply{Kind: input.Kind, Text: input.Text, At: time.Now().UnixNano()})
	state.ReplyCounts = maps.Clone(state.ReplyCounts)
	state.ReplyCounts[string(input.Kind)]++
	return state
}
`,
			},
			law: modeltest.Determinism, want: "the same inputs gave another state the second time",
		},
		{
			name: "a transition that panics on an empty list",
			files: map[string]string{
				"impl/transitions/user_drop-last-note.go": `package transitions

import (
	"maps"

	"example.com/notes/decl"
)

func DropLastNote(state decl.StateOfUser, input decl.DropLastNote) decl.StateOfUser {
	last := state.Notes[len(state.Notes)-1]
	state.Notes = state.Notes[:len(state.Notes)-1]
	state.NoteCounts = maps.Clone(state.NoteCounts)
	state.NoteCounts[string(last.Kind)]--
	return state
}
`,
			},
			law: modeltest.NoPanic, maxInputs: 1, want: "index out of range",
		},
		{
			// Nothing keeps ids apart, so two notes with one id break it;
			// the minimised sequence is those two notes.
			name: "an invariant that is false",
			files: map[string]string{
				"impl/invariants/check.go": `package invariants

import (
	"fmt"

	"example.com/notes/decl"
)

func Check(state decl.AgentState) error {
	seen := map[string]bool{}
	for _, n := range state.Notes {
		if seen[n.ID] {
			return fmt.Errorf("two notes have the id %q", n.ID)
		}
		seen[n.ID] = true
	}
	return nil
}
`,
			},
			law: modeltest.Invariant, maxInputs: 2, want: "two notes have the id",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "notes")
			if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
				t.Fatal(err)
			}
			writeCode(t, dir, tc.files)
			fuzztime := "20s"
			if tc.law == "" {
				// A count, not a duration: Go 1.26's fuzzing coordinator can
				// fail a run that found nothing with "context deadline
				// exceeded" when its -fuzztime deadline races a busy worker
				// (go.dev/issue/75804, fixed in Go 1.27); a count has no
				// deadline. About 5 s here.
				fuzztime = "10000x"
			}
			start := time.Now()
			out, err := goCommand(goTool, dir, nil, "test", "-run", "^$", "-fuzz", "^FuzzTransitions$", "-fuzztime", fuzztime, "-fuzzminimizetime", "5s", "-parallel", "1", "./impl/agent")
			took := time.Since(start)
			if tc.law == "" {
				if err != nil {
					t.Fatalf("the fuzz target failed on lawful code: %v\n%s", err, out)
				}
				return
			}
			if err == nil {
				t.Fatalf("the fuzz target found nothing in %s:\n%s", fuzztime, out)
			}
			i := strings.Index(out, "law broken: ")
			if i < 0 || !strings.Contains(out, "law broken: "+string(tc.law)) || !strings.Contains(out, tc.want) {
				t.Fatalf("want the law %q broken, with %q:\n%s", tc.law, tc.want, out)
			}
			printed := out[i:]
			if j := strings.Index(printed, "Failing input written to"); j >= 0 {
				printed = printed[:j]
			}
			lines := regexp.MustCompile(`(?m)^\s*\d+ (user|llm) \{.*\}`).FindAllString(printed, -1)
			if len(lines) == 0 || (tc.maxInputs > 0 && len(lines) > tc.maxInputs) {
				t.Fatalf("want a sequence of 1 to %d inputs printed, got %d:\n%s", tc.maxInputs, len(lines), printed)
			}
			t.Logf("found in %v (go test, fuzzing and minimising), sequence of %d inputs:\n%s", took.Round(100*time.Millisecond), len(lines), strings.Join(lines, "\n"))

			// The fuzzer saves what it found under testdata/fuzz (what the
			// seed corpus finds is in the code already), and a plain go
			// test fails on it again.
			if strings.Contains(out, "Failing input written to") {
				saved, _ := filepath.Glob(filepath.Join(dir, "impl/agent/testdata/fuzz/FuzzTransitions/*"))
				if len(saved) == 0 {
					t.Fatalf("no failing input saved under testdata/fuzz/FuzzTransitions:\n%s", out)
				}
				t.Logf("found by the fuzzer, saved as %s", filepath.Base(saved[0]))
			} else {
				t.Logf("found by the seed corpus")
			}
			again, err := goCommand(goTool, dir, nil, "test", "-run", "^FuzzTransitions$", "./impl/agent")
			if err == nil || !strings.Contains(again, "law broken: "+string(tc.law)) {
				t.Fatalf("go test with the saved input: want the law %q broken again:\n%s", tc.law, again)
			}
			// And so does the printed sequence, replayed.
			file := filepath.Join(t.TempDir(), "sequence.txt")
			if err := os.WriteFile(file, []byte(printed), 0o644); err != nil {
				t.Fatal(err)
			}
			replay, err := goCommand(goTool, dir, []string{"REPLAY=" + file}, "test", "-run", "^TestReplay$", "./impl/agent")
			if err == nil || !strings.Contains(replay, "law broken: "+string(tc.law)) {
				t.Fatalf("replaying the printed sequence: want the law %q broken again:\n%s", tc.law, replay)
			}
		})
	}
}

func writeCode(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, src := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func goCommand(goTool, dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command(goTool, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		err = fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return string(out), err
}

// TestFuzzTargetIsOwnedInvariantsAreYours: the fuzz target is a generated
// file like the others (Check reports it stale, modified or missing, and
// Generate rewrites it), while impl/invariants is created once and never
// written again, even when a function of it moved to another file.
func TestFuzzTargetIsOwnedInvariantsAreYours(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, DefaultSpecFile)
	if err := os.WriteFile(spec, []byte("package: example.com/notes\n"+notesSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(spec, Options{}); err != nil {
		t.Fatal(err)
	}
	fuzz := filepath.Join(dir, "impl", "agent", "fuzz.gen_test.go")
	generated, err := os.ReadFile(fuzz)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(generated), "// Code generated by agentgen. DO NOT EDIT.\n") || !strings.Contains(string(generated), "func FuzzTransitions(f *testing.F)") {
		t.Fatalf("impl/agent/fuzz.gen_test.go:\n%s", generated)
	}

	stale := strings.Replace(string(generated), `Name: "llm"`, `Name: "lm"`, 1)
	if err := os.WriteFile(fuzz, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	mine := "package invariants\n\nimport \"example.com/notes/decl\"\n\n// Check is mine.\nfunc Check(state decl.AgentState) error { return nil }\n"
	writeCode(t, dir, map[string]string{"impl/invariants/check.go": mine})
	// Admit moves to another file: no stub for it either.
	if err := os.Remove(filepath.Join(dir, "impl", "invariants", "admit.go")); err != nil {
		t.Fatal(err)
	}
	admit := "package invariants\n\nimport \"example.com/notes/decl\"\n\nfunc Admit(state decl.AgentState, input decl.AgentInput) (decl.AgentInput, error) { return input, nil }\n"
	writeCode(t, dir, map[string]string{"impl/invariants/admission.go": admit})

	r, err := Check(spec, Options{})
	if r.Status != StatusDrift || len(r.Files) != 1 || !strings.HasSuffix(filepath.ToSlash(r.Files[0].Path), "impl/agent/fuzz.gen_test.go") || r.Files[0].Kind != "modified" {
		t.Fatalf("Check of a stale fuzz target: %v, %v, %+v; want drift, impl/agent/fuzz.gen_test.go modified", r.Status, err, r.Files)
	}
	if err := os.Remove(fuzz); err != nil {
		t.Fatal(err)
	}
	if r, _ := Check(spec, Options{}); r.Status != StatusDrift || len(r.Files) != 1 || r.Files[0].Kind != "missing" {
		t.Fatalf("Check of a missing fuzz target: %v, %+v; want drift, missing", r.Status, r.Files)
	}

	if _, err := Generate(spec, Options{}); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(fuzz); string(again) != string(generated) {
		t.Errorf("Generate did not restore the fuzz target:\n%s", again)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "impl", "invariants", "check.go")); string(got) != mine {
		t.Errorf("Generate rewrote impl/invariants/check.go:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "impl", "invariants", "admit.go")); err == nil {
		t.Errorf("Generate wrote a stub of Admit, which impl/invariants/admission.go declares")
	}
	if r, err := Check(spec, Options{}); r.Status != StatusUpToDate {
		t.Errorf("Check after Generate: %v, %v, %+v", r.Status, err, r.Files)
	}
}
