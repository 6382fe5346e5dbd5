package modelgen

import (
	"errors"
	gobuild "go/build"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moora-go/moora/modelgen/internal/model"
	gensync "github.com/moora-go/moora/modelgen/internal/sync"
)

func TestTransitionFile(t *testing.T) {
	tests := []struct {
		name, actor, input, want string
	}{
		{"spec names as written", "user", "send-user-message", "user_send-user-message.go"},
		{"kebab actor", "task-manager", "add", "task-manager_add.go"},
		{"would be a test file", "user", "test", "user_test_input.go"},
		{"would build on linux only", "user", "linux", "user_linux_input.go"},
		{"would build on amd64 only", "linux", "amd64", "linux_amd64_input.go"},
		{"an OS name inside is fine", "user", "linux-box", "user_linux-box.go"},
	}
	ctxt := gobuild.Default
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := model.TransitionFile(tc.actor, tc.input)
			if got != tc.want {
				t.Errorf("transitionFile(%q, %q) = %q, want %q", tc.actor, tc.input, got, tc.want)
			}
			// Whatever GOOS and GOARCH, the go command builds the file.
			for _, goos := range []string{"linux", "windows", "darwin"} {
				for _, arch := range []string{"amd64", "arm64", "386"} {
					ctxt.GOOS, ctxt.GOARCH = goos, arch
					dir := t.TempDir()
					if err := os.WriteFile(filepath.Join(dir, got), []byte("package transitions\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					if ok, err := ctxt.MatchFile(dir, got); err != nil || !ok || strings.HasSuffix(got, "_test.go") {
						t.Errorf("%s is not built on %s/%s", got, goos, arch)
					}
				}
			}
		})
	}
}

// starterModel is the starter spec with a package path.
func starterModel(t *testing.T, spec string) *model.Model {
	t.Helper()
	m, err := loadBytes("agent.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	m.Package = "example.com/atomic"
	return m
}

const atomicV1 = `version: 1
actors: [user]
observations:
  user:
    user: {count: {type: integer}}
inputs:
  user:
    increment: {type: object}
`

const atomicV2 = `version: 1
actors: [user, clock]
observations:
  user:
    user: {count: {type: integer}}
    clock: {now: {type: integer}}
  clock:
    user: {count: {type: integer}}
inputs:
  user:
    increment: {type: object}
    reset: {type: object}
  clock:
    tick: {type: object, properties: {now: {type: integer}}, required: [now]}
`

// TestGenerateIsAtomic generates an agent, writes a body by hand, then
// generates a grown spec (decl/ rewritten, glue updated, new stubs) while
// making each file system rename fail in turn: every time, the tree is
// exactly as before, the hand-written body included, with no new stub and
// no temporary file.
func TestGenerateIsAtomic(t *testing.T) {
	base := t.TempDir()
	out1, err := generateModel(starterModel(t, atomicV1), declGen, implGen(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writeFiles(base, out1); err != nil {
		t.Fatal(err)
	}
	body := "package transitions\n\nimport \"example.com/atomic/decl\"\n\nfunc Increment(state decl.StateOfUser, input decl.Increment) decl.StateOfUser {\n\tstate.Count++\n\treturn state\n}\n"
	writeTree(t, base, map[string]string{"impl/transitions/user_increment.go": body})
	before := tree(t, base)

	m2 := starterModel(t, atomicV2)
	scan, err := scanImpl(base, m2)
	if err != nil {
		t.Fatal(err)
	}
	out2, err := generateModel(m2, declGen, implGen(scan))
	if err != nil {
		t.Fatal(err)
	}
	for failAt := 1; ; failAt++ {
		dir := t.TempDir()
		writeTree(t, dir, before)
		calls := 0
		gensync.Rename = func(from, to string) error {
			calls++
			if calls == failAt {
				return errors.New("injected failure")
			}
			return os.Rename(from, to)
		}
		_, err := writeFiles(dir, out2)
		gensync.Rename = os.Rename
		if calls < failAt {
			if err != nil {
				t.Fatalf("Write without an injected failure: %v", err)
			}
			after := tree(t, dir)
			if after["impl/transitions/user_increment.go"] != body {
				t.Error("the hand-written body changed")
			}
			for _, p := range []string{"impl/initials/clock.go", "impl/transitions/user_reset.go", "impl/transitions/clock_tick.go"} {
				if _, ok := after[p]; !ok {
					t.Errorf("no stub %s", p)
				}
			}
			if failAt < 10 {
				t.Fatalf("only %d renames", calls)
			}
			return
		}
		if err == nil {
			t.Fatalf("failing rename %d: writeFiles succeeded", failAt)
		}
		got := tree(t, dir)
		if !maps.Equal(got, before) {
			var diff []string
			for p := range got {
				if before[p] != got[p] {
					diff = append(diff, p)
				}
			}
			for p := range before {
				if _, ok := got[p]; !ok {
					diff = append(diff, p)
				}
			}
			slices.Sort(diff)
			t.Errorf("failing rename %d of %d: the tree changed: %v", failAt, calls, diff)
		}
	}
}

// TestPruneIsAllOrNothing makes the second move of a prune fail: the first
// is undone, and the directories Prune made are gone.
func TestPruneIsAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	m := starterModel(t, atomicV1)
	orphan := "package transitions\n\nimport \"example.com/atomic/decl\"\n\nfunc Old(state decl.StateOfUser, input decl.Old) decl.StateOfUser { return state }\n"
	writeTree(t, dir, map[string]string{
		"impl/transitions/user_old.go":   orphan,
		"impl/transitions/user_older.go": strings.ReplaceAll(orphan, "Old", "Older"),
		"impl/initials/gone.go":          "package initials\n\nimport \"example.com/atomic/decl\"\n\nfunc Gone() decl.StateOfGone { return decl.StateOfGone{} }\n",
	})
	before := tree(t, dir)
	scan, err := scanImpl(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := scan.Orphans(), []string{"impl/initials/gone.go", "impl/transitions/user_old.go", "impl/transitions/user_older.go"}; !slices.Equal(got, want) {
		t.Fatalf("orphans = %v, want %v", got, want)
	}
	calls := 0
	gensync.Rename = func(from, to string) error {
		calls++
		if calls == 2 {
			return errors.New("injected failure")
		}
		return os.Rename(from, to)
	}
	_, err = pruneFiles(dir, scan)
	gensync.Rename = os.Rename
	if err == nil {
		t.Fatal("Prune succeeded")
	}
	if got := tree(t, dir); !maps.Equal(got, before) {
		t.Errorf("tree after a failed prune: %v", keys(got))
	}
	if _, err := os.Stat(filepath.Join(dir, PrunedDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still there", PrunedDir)
	}
	moves, err := pruneFiles(dir, scan)
	if err != nil {
		t.Fatal(err)
	}
	if len(moves) != 3 || moves[0].To != "impl/_pruned/initials/gone.go" {
		t.Errorf("moves = %v", moves)
	}
}

func TestPlanNeverOverwritesHandWrittenFiles(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"decl/a.go": "package decl\n\n// mine\n"})
	if _, err := writeFiles(dir, testOutput()); !errors.Is(err, gensync.ErrNotGenerated) {
		t.Fatalf("Write over a hand-written file: %v, want gensync.ErrNotGenerated", err)
	}
	if got := tree(t, dir); len(got) != 1 || got["decl/a.go"] != "package decl\n\n// mine\n" {
		t.Errorf("tree = %v", got)
	}
}

// otherGOOS is an operating system the tests do not run on.
func otherGOOS() string {
	if gobuild.Default.GOOS == "plan9" {
		return "windows"
	}
	return "plan9"
}

// TestScanImpl checks what ScanImpl finds in a small impl/ tree, case by
// case; the CLI scripts cover the same ground end to end.
func TestScanImpl(t *testing.T) {
	const declImport = "import \"example.com/atomic/decl\"\n\n"
	tests := []struct {
		name  string
		files map[string]string
		found []string
		want  []string // Finding.String()
	}{
		{
			name:  "empty: everything missing",
			found: []string{},
		},
		{
			name: "found anywhere in the package, a dot import too",
			files: map[string]string{
				"impl/initials/all.go":       "package initials\n\n" + declImport + "func User() decl.StateOfUser { return decl.StateOfUser{} }\n",
				"impl/transitions/x.go":      "package transitions\n\nimport . \"example.com/atomic/decl\"\n\nfunc Increment(s StateOfUser, in Increment) StateOfUser { return s }\n",
				"impl/transitions/x_test.go": "package transitions\n\n" + declImport + "func Other() decl.StateOfUser { return decl.StateOfUser{} }\n",
			},
			found: []string{"initials.User", "transitions.Increment"},
		},
		{
			name: "aliased import, grouped parameters",
			files: map[string]string{
				"impl/transitions/user_increment.go": "package transitions\n\nimport d \"example.com/atomic/decl\"\n\nfunc Increment(s d.StateOfUser, in d.Increment) (out d.StateOfUser) { panic(\"not implemented: x\") }\n",
			},
			found: []string{"transitions.Increment"},
			want:  []string{`impl/transitions/user_increment.go:5:71: warning: func Increment is still a stub: it panics "not implemented: x"; write its body`},
		},
		{
			name: "wrong signatures",
			files: map[string]string{
				"impl/initials/user.go":              "package initials\n\n" + declImport + "func User(seed int) decl.StateOfUser { return decl.StateOfUser{} }\n",
				"impl/transitions/user_increment.go": "package transitions\n\n" + declImport + "func Increment[T any](s decl.StateOfUser, in decl.Increment) decl.StateOfUser { return s }\n",
			},
			found: []string{"initials.User", "transitions.Increment"},
			want: []string{
				"impl/initials/user.go:5:1: func User(seed int) decl.StateOfUser is the initial state of actor user, which must be declared as func User() decl.StateOfUser",
				"impl/transitions/user_increment.go:5:1: func Increment[T any](s decl.StateOfUser, in decl.Increment) decl.StateOfUser is the transition of input increment (actor user), which must be declared as func Increment(state decl.StateOfUser, input decl.Increment) decl.StateOfUser",
			},
		},
		{
			name: "no decl import: not the function the glue calls",
			files: map[string]string{
				"impl/initials/user.go": "package initials\n\ntype StateOfUser struct{}\n\nfunc User() StateOfUser { return StateOfUser{} }\n",
			},
			found: []string{"initials.User"},
			want:  []string{"impl/initials/user.go:5:1: func User() StateOfUser is the initial state of actor user, which must be declared as func User() decl.StateOfUser, with decl the package example.com/atomic/decl, which this file does not import"},
		},
		{
			name: "generated files and ignored files are not read",
			files: map[string]string{
				"impl/initials/x.gen.go":  header + "\n\npackage initials\n\n" + declImport + "func Old() decl.StateOfOld { return decl.StateOfOld{} }\n",
				"impl/initials/_old.go":   "package initials\n\n" + declImport + "func Old() decl.StateOfOld { return decl.StateOfOld{} }\n",
				"impl/initials/.old.go":   "not Go",
				"impl/initials/notes.txt": "func User",
			},
			found: []string{},
		},
		{
			name: "a file the go command does not build declares nothing",
			files: map[string]string{
				"impl/initials/user.go":                       "//go:build ignore\n\npackage initials\n\n" + declImport + "func User() decl.StateOfUser { return decl.StateOfUser{} }\n",
				"impl/transitions/user_increment.go":          "package transitions\n\n" + declImport + "func Other() int { return 0 }\n",
				"impl/transitions/moved.go":                   "// Moved here.\n\n//go:build !" + gobuild.Default.GOOS + "\n\npackage transitions\n\n" + declImport + "func Increment(state decl.StateOfUser, input decl.Increment) decl.StateOfUser { return state }\n",
				"impl/transitions/old_" + otherGOOS() + ".go": "package transitions\n\n" + declImport + "func Old(state decl.StateOfUser, input decl.Old) decl.StateOfUser { return state }\n",
			},
			found: []string{"initials.User", "transitions.Increment"},
			want: []string{
				"impl/initials/user.go:1:1: this file must declare the initial state of actor user: func User() decl.StateOfUser; it does, but its build constraint //go:build ignore keeps the go command from building it",
				"impl/transitions/user_increment.go:1:1: this file must declare the transition of input increment (actor user): func Increment(state decl.StateOfUser, input decl.Increment) decl.StateOfUser",
			},
		},
	}
	m := starterModel(t, atomicV1)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			scan, err := scanImpl(dir, m)
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Sorted(maps.Keys(scan.Found)); !slices.Equal(got, tc.found) && !(len(got) == 0 && len(tc.found) == 0) {
				t.Errorf("found %v, want %v", got, tc.found)
			}
			var got []string
			for _, f := range scan.Findings {
				got = append(got, f.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

const claimsSpec = `version: 1
actors: [user]
observations:
  user:
    user: {total: {type: integer}}
inputs:
  user:
    add-claim:
      type: object
      properties:
        id: {type: string}
        amount: {type: integer}
        costCenter: {type: string}
      required: [id, amount, costCenter]
`

// TestUnreadInputProperty: the scan warns, at the transition and with the
// property's place in the spec, of each property of an input its transition
// never reads (a new property the transition ignores is journaled and
// dropped); a transition that uses its input whole reads all of it, and a
// stub is only a stub.
func TestUnreadInputProperty(t *testing.T) {
	const head = "package transitions\n\n" + "import \"example.com/atomic/decl\"\n\n"
	m := starterModel(t, claimsSpec)
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"one property ignored", "func AddClaim(state decl.StateOfUser, input decl.AddClaim) decl.StateOfUser {\n\tif input.ID != \"\" {\n\t\tstate.Total += input.Amount\n\t}\n\treturn state\n}\n",
			[]string{"impl/transitions/user_add-claim.go:5:6: warning: property costCenter of input add-claim (agent.yaml:13:21) is never read by func AddClaim: what is sent for it is journaled but never reaches the state; read it (input.CostCenter), or remove it from the spec"}},
		{"all read", "func AddClaim(state decl.StateOfUser, input decl.AddClaim) decl.StateOfUser {\n\tstate.Total += input.Amount + int64(len(input.ID+input.CostCenter))\n\treturn state\n}\n", nil},
		{"passed on whole", "func AddClaim(state decl.StateOfUser, input decl.AddClaim) decl.StateOfUser {\n\treturn add(state, input)\n}\n\nfunc add(s decl.StateOfUser, in decl.AddClaim) decl.StateOfUser { return s }\n", nil},
		{"no name for it", "func AddClaim(state decl.StateOfUser, _ decl.AddClaim) decl.StateOfUser {\n\treturn state\n}\n", []string{
			"impl/transitions/user_add-claim.go:5:6: warning: property id of input add-claim (agent.yaml:11:13) is never read by func AddClaim: what is sent for it is journaled but never reaches the state; read it (input.ID), or remove it from the spec",
			"impl/transitions/user_add-claim.go:5:6: warning: property amount of input add-claim (agent.yaml:12:17) is never read by func AddClaim: what is sent for it is journaled but never reaches the state; read it (input.Amount), or remove it from the spec",
			"impl/transitions/user_add-claim.go:5:6: warning: property costCenter of input add-claim (agent.yaml:13:21) is never read by func AddClaim: what is sent for it is journaled but never reaches the state; read it (input.CostCenter), or remove it from the spec",
		}},
		{"a stub", "func AddClaim(state decl.StateOfUser, input decl.AddClaim) decl.StateOfUser {\n\tpanic(\"not implemented: user/add-claim\")\n}\n",
			[]string{`impl/transitions/user_add-claim.go:6:2: warning: func AddClaim is still a stub: it panics "not implemented: user/add-claim"; write its body`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{
				"impl/initials/user.go":              "package initials\n\nimport \"example.com/atomic/decl\"\n\nfunc User() decl.StateOfUser { return decl.StateOfUser{} }\n",
				"impl/transitions/user_add-claim.go": head + tc.body,
			})
			scan, err := scanImpl(dir, m)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range scan.Findings {
				got = append(got, f.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
