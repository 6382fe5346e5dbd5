package typecheck

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/moora-go/moora/modelgen/internal/evolve"
	"github.com/moora-go/moora/modelgen/internal/versions"
)

// TestWithoutGo checks that without a go command nothing is type-checked,
// and the result says why rather than failing.
func TestWithoutGo(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	r, err := Check(context.Background(), t.TempDir(), func(string) bool { return false }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Skipped != "there is no go command on PATH" || len(r.Findings) != 0 {
		t.Errorf("got %+v", r)
	}
}

// TestOutsideAModule checks that a directory in no module is skipped, with
// the directory named.
func TestOutsideAModule(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GOFLAGS", "")
	t.Setenv("GO111MODULE", "")
	if err := os.WriteFile(filepath.Join(dir, "agent.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Check(context.Background(), dir, func(string) bool { return false }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := dir + " is in no Go module (no go.mod here or above)"; r.Skipped != want {
		t.Errorf("Skipped = %q, want %q", r.Skipped, want)
	}
}

func TestSplitPos(t *testing.T) {
	for _, tc := range []struct {
		pos       string
		file      string
		line, col int
	}{
		{"/a/b.go:12:3", "/a/b.go", 12, 3},
		{"b.go:12", "b.go", 12, 0},
		{"C:/x/b.go:1:2", "C:/x/b.go", 1, 2},
		{"", "", 0, 0},
		{"-", "", 0, 0},
		{"go.mod", "go.mod", 0, 0},
	} {
		file, line, col := splitPos(tc.pos)
		if file != tc.file || line != tc.line || col != tc.col {
			t.Errorf("splitPos(%q) = %q, %d, %d; want %q, %d, %d", tc.pos, file, line, col, tc.file, tc.line, tc.col)
		}
	}
}

func TestCompilerLine(t *testing.T) {
	pos, msg, ok := compilerLine("impl/t/x.go:14:45: state.A undefined (type decl.S has no field or method A)")
	if !ok || pos != "impl/t/x.go:14:45" || msg != "state.A undefined (type decl.S has no field or method A)" {
		t.Errorf("got %q, %q, %v", pos, msg, ok)
	}
	if _, _, ok := compilerLine("too many errors"); ok {
		t.Error("a line without a position parsed")
	}
}

// TestExplain checks which change of the spec an error is put down to:
// the newest that removed the name, with what the same step added beside
// it, and nothing for a name no change removed.
func TestExplain(t *testing.T) {
	plan := &versions.Plan{
		Current: 3,
		Steps: []*versions.Step{
			{From: 1, Changes: []evolve.Change{
				{Breaking: true, Input: "open-ticket", Path: "/subject", What: "removed property"},
				{Breaking: true, Input: "close-ticket", What: "removed input type"},
			}},
			{From: 2, Changes: []evolve.Change{
				{Breaking: true, Path: "/acks", What: "removed state property"},
				{Path: "/acknowledgements", What: "new state property"},
				{Path: "/tickets/[]/owner", What: "new optional property"},
			}},
		},
	}
	for _, tc := range []struct{ msg, want string }{
		{"state.Acks undefined (type decl.StateOfDesk has no field or method Acks)", "version 3 of the spec removed state property acks and added acknowledgements"},
		{"input.Subject undefined (type decl.OpenTicket has no field or method Subject)", "version 2 of the spec removed property subject of input open-ticket"},
		{"unknown field Subject in struct literal of type decl.OpenTicket", "version 2 of the spec removed property subject of input open-ticket"},
		{"undefined: decl.CloseTicket", "version 2 of the spec removed input type close-ticket"},
		{"t.Subject undefined (type decl.Ticket has no field or method Subject)", ""},
		{"s.Acks undefined (type decl.Desk has no field or method Acks)", ""},
		{"state.Other undefined (type decl.StateOfDesk has no field or method Other)", ""},
		{"undefined: fmt.Nope", ""},
	} {
		if got := explain(tc.msg, plan); got != tc.want {
			t.Errorf("explain(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}
