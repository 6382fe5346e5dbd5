package modelgen

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/moora-go/moora/modelgen/internal/gen/graph"
	"github.com/moora-go/moora/modelgen/internal/model"
)

// TestAPIConstants checks that what the API says of the stages is what the
// stages do: the directory of pruned orphans and the graph formats.
func TestAPIConstants(t *testing.T) {
	if PrunedDir != model.PrunedDir {
		t.Errorf("PrunedDir is %q, but the stages prune into %q", PrunedDir, model.PrunedDir)
	}
	if !slices.Equal(GraphFormats, graph.Formats) {
		t.Errorf("GraphFormats are %q, but the graph printer writes %q", GraphFormats, graph.Formats)
	}
}

// TestDeclVersion reads the version decl/version.go was generated from, as
// the check for a lost history does, and 0 wherever it cannot tell.
func TestDeclVersion(t *testing.T) {
	tests := []struct {
		name string
		src  string // decl/version.go; "" for none
		want int
	}{
		{name: "no decl", want: 0},
		{name: "version 1", src: header + "\n\npackage decl\n\n// SpecVersion is the version.\nconst SpecVersion = 1\n", want: 1},
		{name: "version 3", src: header + "\n\npackage decl\n\nconst SpecVersion = 3\n", want: 3},
		{name: "in a group", src: "package decl\n\nconst (\n\tOther = 7\n\tSpecVersion = 4\n)\n", want: 4},
		{name: "not a number", src: "package decl\n\nconst SpecVersion = \"4\"\n", want: 0},
		{name: "does not parse", src: "package decl\n\nconst SpecVersion = \n", want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.src != "" {
				if err := os.MkdirAll(filepath.Join(dir, "decl"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "decl", "version.go"), []byte(tt.src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := declVersion(dir); got != tt.want {
				t.Errorf("declVersion = %d, want %d", got, tt.want)
			}
		})
	}
}
