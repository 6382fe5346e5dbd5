package modelgen

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moora-go/moora/modelgen/internal/gen"
	gensync "github.com/moora-go/moora/modelgen/internal/sync"
)

const owned = header + "\n\npackage decl\n"

// tree reads every regular file under dir into a map by slash path.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := make(map[string]string)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func testOutput() *gen.Output {
	return &gen.Output{
		Dirs: []string{"decl"},
		Files: []gen.File{
			{Path: "decl/a.go", Data: []byte(owned + "// a v2\n"), Owned: true},
			{Path: "decl/b.go", Data: []byte(owned + "// b\n"), Owned: true},
			{Path: "decl/new.go", Data: []byte(owned + "// new\n"), Owned: true},
			{Path: "impl/stub.go", Data: []byte("package impl\n"), Owned: false},
		},
	}
}

func TestPlanAndWrite(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"decl/a.go":     owned + "// a v1\n",
		"decl/b.go":     owned + "// b\n",
		"decl/gone.go":  owned + "// no longer generated\n",
		"decl/mine.go":  "package decl\n\n// hand-written\n",
		"decl/notes.md": header + "\n",
		"impl/stub.go":  "package impl\n\n// edited by hand\n",
	})
	want := []gensync.Change{
		{Path: "decl/a.go", Kind: gensync.Updated},
		{Path: "decl/gone.go", Kind: gensync.Deleted},
		{Path: "decl/new.go", Kind: gensync.Created},
	}
	changes, err := planFiles(dir, testOutput())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(changes, want) {
		t.Fatalf("Plan = %v, want %v", changes, want)
	}
	changes, err = writeFiles(dir, testOutput())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(changes, want) {
		t.Fatalf("Write = %v, want %v", changes, want)
	}
	got := tree(t, dir)
	wantTree := map[string]string{
		"decl/a.go":     owned + "// a v2\n",
		"decl/b.go":     owned + "// b\n",
		"decl/new.go":   owned + "// new\n",
		"decl/mine.go":  "package decl\n\n// hand-written\n",
		"decl/notes.md": header + "\n", // not a Go file: never deleted
		"impl/stub.go":  "package impl\n\n// edited by hand\n",
	}
	for p, data := range wantTree {
		if got[p] != data {
			t.Errorf("%s = %q, want %q", p, got[p], data)
		}
	}
	if len(got) != len(wantTree) {
		t.Errorf("files after Write: %v", got)
	}
	info, err := os.Stat(filepath.Join(dir, "decl", "new.go"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o644 {
		t.Errorf("new file mode %v, want 0644", info.Mode().Perm())
	}
	// Nothing left to do.
	if changes, err := writeFiles(dir, testOutput()); err != nil || len(changes) != 0 {
		t.Errorf("second writeFiles = %v, %v; want no changes", changes, err)
	}
	drift, err := compareFiles(dir, testOutput())
	if err != nil || len(drift) != 0 {
		t.Errorf("Compare after writeFiles = %v, %v; want no drift", drift, err)
	}
}

// TestWriteLeavesSubdirectories checks that only the top level of a
// generator's directories is its own: an owned file in a subdirectory
// (decl/testdata, a package below impl/agent) is never reported extra nor
// deleted.
func TestWriteLeavesSubdirectories(t *testing.T) {
	dir := t.TempDir()
	kept := map[string]string{
		"decl/testdata/fixture.go": owned + "// a fixture\n",
		"decl/sub/sub.go":          header + "\n\npackage sub\n",
		"impl/agent/more/more.go":  header + "\n\npackage more\n",
	}
	writeTree(t, dir, kept)
	writeTree(t, dir, map[string]string{"decl/gone.go": owned})
	out := testOutput()
	out.Dirs = append(out.Dirs, "impl/agent")
	drift, err := compareFiles(dir, out)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range drift {
		if d.Kind == gensync.Extra && d.Path != "decl/gone.go" {
			t.Errorf("Compare reports %s as extra", d.Path)
		}
	}
	changes, err := writeFiles(dir, out)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(changes, gensync.Change{Path: "decl/gone.go", Kind: gensync.Deleted}) {
		t.Errorf("Write = %v; want decl/gone.go deleted", changes)
	}
	got := tree(t, dir)
	for p, data := range kept {
		if got[p] != data {
			t.Errorf("%s = %q after writeFiles, want it left alone", p, got[p])
		}
	}
}

func TestWriteCreatesDirectories(t *testing.T) {
	dir := t.TempDir()
	if _, err := writeFiles(dir, testOutput()); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, dir); len(got) != 4 {
		t.Errorf("tree after writeFiles into an empty directory: %v", got)
	}
}

// TestWriteIsAllOrNothing makes each rename of a Write fail in turn and
// checks that the tree is exactly as before, without temporary files.
func TestWriteIsAllOrNothing(t *testing.T) {
	before := map[string]string{
		"decl/a.go":    owned + "// a v1\n",
		"decl/gone.go": owned + "// no longer generated\n",
		"decl/mine.go": "package decl\n",
	}
	// Writing testOutput over before renames 5 times: a.go and gone.go
	// aside, then the new a.go, new.go and impl/stub.go into place.
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
		_, err := writeFiles(dir, testOutput())
		gensync.Rename = os.Rename
		if calls < failAt {
			if err != nil {
				t.Fatalf("Write without an injected failure: %v", err)
			}
			if failAt < 3 {
				t.Fatalf("only %d renames; the test does not cover both phases", calls)
			}
			return
		}
		if err == nil || !strings.Contains(err.Error(), "injected failure") {
			t.Fatalf("failing rename %d: writeFiles error = %v", failAt, err)
		}
		got := tree(t, dir)
		if len(got) != len(before) {
			t.Errorf("failing rename %d: tree has %d files, want %d: %v", failAt, len(got), len(before), keys(got))
		}
		for p, data := range before {
			if got[p] != data {
				t.Errorf("failing rename %d: %s = %q, want %q", failAt, p, got[p], data)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "impl")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("failing rename %d: the impl directory writeFiles created is still there", failAt)
		}
	}
}

func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"decl/a.go":    owned + "// a v1\n",
		"decl/b.go":    owned + "// b\n",
		"decl/gone.go": owned,
		"impl/stub.go": "package impl\n\n// edited\n",
	})
	drift, err := compareFiles(dir, testOutput())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range drift {
		got = append(got, d.Path+" "+d.Kind.String())
	}
	want := []string{"decl/a.go modified", "decl/gone.go extra", "decl/new.go missing"}
	if !slices.Equal(got, want) {
		t.Fatalf("Compare = %v, want %v", got, want)
	}
	const diff = "diff a/decl/a.go b/decl/a.go\n--- a/decl/a.go\n+++ b/decl/a.go\n@@ -1,4 +1,4 @@\n // Code generated by agentgen. DO NOT EDIT.\n \n package decl\n-// a v1\n+// a v2\n"
	if string(drift[0].Diff) != diff {
		t.Errorf("diff =\n%s\nwant\n%s", drift[0].Diff, diff)
	}
}

func TestIsOwned(t *testing.T) {
	tests := []struct {
		name string
		data string
		want bool
	}{
		{"header", header + "\n\npackage decl\n", true},
		{"header with CRLF", header + "\r\n", true},
		{"header only", header, true},
		{"another generator", "// Code generated by stringer. DO NOT EDIT.\n", false},
		{"header later in the file", "package decl\n" + header + "\n", false},
		{"empty", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := gen.IsOwned([]byte(tc.data)); got != tc.want {
				t.Errorf("isOwned = %v, want %v", got, tc.want)
			}
		})
	}
}
