package modelgen

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/moora-go/moora/modelgen/internal/spec"
)

// TestNestingLimit checks the nesting limit the package doc states: values
// nested spec.MaxDepth levels deep load, one level more is an error at the value
// that crosses it, in both syntaxes.
func TestNestingLimit(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("nested at most %d levels deep", spec.MaxDepth); !strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(string(doc), "//", "")), " "), want) {
		t.Errorf("the package doc does not say %q", want)
	}
	for _, tc := range []struct {
		name, file string
		depth      int
		tooDeep    bool
	}{
		{"yaml at the limit", "agent.yaml", spec.MaxDepth, false},
		{"yaml past the limit", "agent.yaml", spec.MaxDepth + 1, true},
		{"json at the limit", "agent.json", spec.MaxDepth, false},
		{"json past the limit", "agent.json", spec.MaxDepth + 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The root object is level 0, the value of "actors" level 1.
			nested := strings.Repeat("[", tc.depth) + strings.Repeat("]", tc.depth)
			doc := `{"version": 1, "actors": ` + nested + `}`
			_, err := loadBytes(tc.file, []byte(doc))
			if err == nil {
				t.Fatal("loaded without error")
			}
			got := err.Error()
			tooDeep := strings.Contains(got, fmt.Sprintf("nested deeper than %d levels", spec.MaxDepth))
			if tooDeep != tc.tooDeep {
				t.Fatalf("nesting error: %v, want %v; got:\n%s", tooDeep, tc.tooDeep, got)
			}
			if tc.tooDeep {
				col := len(`{"version": 1, "actors": `) + tc.depth
				if want := fmt.Sprintf("%s:1:%d: ", tc.file, col); !strings.HasPrefix(got, want) {
					t.Errorf("got %q, want it at %s", got, want)
				}
			}
		})
	}
}

// TestEncoding checks that YAML and JSON specs treat their bytes alike: a
// UTF-8 byte order mark is allowed at the start, and bytes that are not
// UTF-8 are an error at their position, never rewritten to U+FFFD.
func TestEncoding(t *testing.T) {
	const bom = "\ufeff"
	for _, tc := range []struct {
		name, file, spec string
		want             string // the error; "" when the spec loads
	}{
		{"yaml with a BOM", "agent.yaml", bom + "version: 1\nactors: [user]\n", ""},
		{"json with a BOM", "agent.json", bom + `{"version": 1, "actors": ["user"]}`, ""},
		{"yaml with a bad byte", "agent.yaml", "version: 1\nactors: [us\xffer]\n", "agent.yaml:2:12: the spec is not valid UTF-8: byte 0xff"},
		{"json with a bad byte", "agent.json", "{\"version\": 1,\n \"actors\": [\"us\xffer\"]}", "agent.json:2:16: the spec is not valid UTF-8: byte 0xff"},
		{"json with a bad byte after a BOM", "agent.json", bom + "{\"version\": 1, \"actors\": [\"\xc3\"]}", "agent.json:1:28: the spec is not valid UTF-8: byte 0xc3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := loadBytes(tc.file, []byte(tc.spec))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("got error %v", err)
				}
				if len(m.Actors) != 1 || m.Actors[0].Name != "user" {
					t.Errorf("actors: got %v", m.Actors)
				}
				return
			}
			if err == nil {
				t.Fatalf("loaded; want error %q", tc.want)
			}
			if got := err.Error(); !strings.HasPrefix(got, tc.want) {
				t.Errorf("got  %q\nwant %q...", got, tc.want)
			}
		})
	}
}

// TestAliasLimit checks that YAML aliases cannot blow a small spec up: the
// values are counted after expansion, and past spec.MaxNodes loading stops.
func TestAliasLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nactors: [user]\nx0: &x0 [a, a, a, a, a, a, a, a, a, a]\n")
	for i := 1; i <= 6; i++ {
		fmt.Fprintf(&b, "x%d: &x%d [*x%[3]d, *x%[3]d, *x%[3]d, *x%[3]d, *x%[3]d, *x%[3]d, *x%[3]d, *x%[3]d, *x%[3]d, *x%[3]d]\n", i, i, i-1)
	}
	_, err := loadBytes("agent.yaml", []byte(b.String()))
	want := fmt.Sprintf("spec has more than %d values (after expanding YAML aliases)", spec.MaxNodes)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
}

// TestDeepYAMLIsRefusedBeforeParsing: 100,000 nested flow sequences in a
// YAML spec (200 KB) are refused at the level that crosses the limit, as in
// JSON, from the lexer's tokens: the YAML parser, given them, took over 20 s
// and 7 GB.
func TestDeepYAMLIsRefusedBeforeParsing(t *testing.T) {
	const n = 100_000
	doc := "version: 1\nactors: [" + strings.Repeat("[", n) + strings.Repeat("]", n) + "]\n"
	_, err := loadBytes("agent.yaml", []byte(doc))
	// The top-level mapping is level 0, the value of actors level 1.
	want := fmt.Sprintf("agent.yaml:2:%d: values nested deeper than %d levels", len("actors: ")+spec.MaxDepth+1, spec.MaxDepth)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("LoadBytes = %v, want %q", err, want)
	}
}

// TestNameLengthLimit checks the limit on names the package doc states: a
// name of spec.MaxNameLength characters loads, one character more is an
// error at the name, wherever names are (actors, observations, inputs,
// $defs, properties), in both syntaxes; a 5,000-character actor name is an
// error at its line and column, not a file name too long for the disk.
func TestNameLengthLimit(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("is at most %d characters long", spec.MaxNameLength); !strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(string(doc), "//", "")), " "), want) {
		t.Errorf("the package doc does not say %q", want)
	}
	name := func(first string, n int) string { return first + strings.Repeat("a", n-1) }
	// specOf returns a spec with names of n characters wherever there are
	// names.
	specOf := func(n int) string {
		return fmt.Sprintf(`version: 1
actors: [user, %[1]s]
$defs:
  %[2]s: {type: object, properties: {%[3]s: {type: string}}}
observations:
  user:
    %[1]s: {%[3]s: {$ref: "#/$defs/%[2]s"}}
inputs:
  %[1]s:
    %[4]s: {type: object, properties: {%[3]s: {type: integer}}}
`, name("a", n), name("T", n), name("p", n), name("i", n))
	}
	if _, err := loadBytes("agent.yaml", []byte(specOf(spec.MaxNameLength))); err != nil {
		t.Fatalf("names of %d characters: %v", spec.MaxNameLength, err)
	}
	n := spec.MaxNameLength + 1
	_, err = loadBytes("agent.yaml", []byte(specOf(n)))
	tooLong := fmt.Sprintf("is %d characters long, longer than the %d a name may be", n, spec.MaxNameLength)
	for _, where := range []string{
		"agent.yaml:2:16: actors[1]: name",
		"agent.yaml:4:3: $defs.",
		"agent.yaml:4:" + fmt.Sprint(3+n+len(": {type: object, properties: {")) + ": $defs.",
		"agent.yaml:7:5: observations.user.",
		"agent.yaml:7:" + fmt.Sprint(5+n+len(": {")) + ": observations.user.",
		"agent.yaml:9:3: inputs.",
		"agent.yaml:10:5: inputs.",
		"agent.yaml:10:" + fmt.Sprint(5+n+len(": {type: object, properties: {")) + ": inputs.",
	} {
		found := false
		for _, line := range strings.Split(fmt.Sprint(err), "\n") {
			found = found || (strings.HasPrefix(line, where) && strings.Contains(line, tooLong))
		}
		if !found {
			t.Errorf("no error %q...%q; got:\n%v", where, tooLong, err)
		}
	}

	// JSON, and a name far too long: the message abbreviates it.
	_, err = loadBytes("agent.json", []byte(`{"version": 1,
"actors": ["user", "`+name("a", 5000)+`"]}`))
	want := `agent.json:2:20: actors[1]: name "` + name("a", spec.MaxNameLength/2) + `…" is 5000 characters long, longer than the 64 a name may be`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want %q...", err, want)
	}
}

// TestSpecSize checks the size limit the package doc states: a spec of
// spec.MaxBytes loads, one byte more is an error at its first line, before
// parsing, in both syntaxes; Load reads no more of a file than shows that
// it is too large (a sparse file of a gigabyte fails at once).
func TestSpecSize(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("at most %d KiB (%s bytes", spec.MaxBytes>>10, "262,144"); !strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(string(doc), "//", "")), " "), want) {
		t.Errorf("the package doc does not say %q", want)
	}
	const yamlSpec = "version: 1\nactors: [user]\n"
	const jsonSpec = `{"version": 1, "actors": ["user"]}`
	for _, tc := range []struct{ file, spec, pad string }{
		{"agent.yaml", yamlSpec, "#"},
		{"agent.json", jsonSpec, " "},
	} {
		padded := func(n int) []byte { // the spec, padded to n bytes
			return []byte(tc.spec + strings.Repeat(tc.pad, n-len(tc.spec)-1) + "\n")
		}
		if _, err := loadBytes(tc.file, padded(spec.MaxBytes)); err != nil {
			t.Errorf("%s of %d bytes: %v", tc.file, spec.MaxBytes, err)
		}
		want := fmt.Sprintf("%s:1:1: the spec has more than %d bytes (256 KiB), the most a spec may have", tc.file, spec.MaxBytes)
		for _, n := range []int{spec.MaxBytes + 1, 50 << 20} {
			if _, err := loadBytes(tc.file, padded(n)); err == nil || err.Error() != want {
				t.Errorf("%s of %d bytes: got %v, want %q", tc.file, n, err, want)
			}
		}
	}

	file := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(file, []byte(yamlSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(file, 1<<30); err != nil { // sparse: no disk is used
		t.Fatal(err)
	}
	_, err = loadFile(file)
	if want := file + ":1:1: the spec has more than"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Load of a 1 GiB file: got %v, want %q...", err, want)
	}
}

// TestYAMLLimitsBeforeParsing: what would cost the YAML parser far more
// than its size is refused from the lexer's tokens, at the token that
// crosses a limit: block sequences nested on one line ("- - - ...", 200 KB:
// the parser took 40 s and 15 GB), a block mapping of more than
// spec.MaxBlockEntries entries (its time grows with the square of them),
// and more values than spec.MaxNodes (the parser parsed them all before the
// conversion counted them). Documents at the limits are left for the
// conversion to check exactly.
func TestYAMLLimitsBeforeParsing(t *testing.T) {
	const head = "version: 1\nactors: [user]\n"
	keys := func(n int, indent string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "%sk%d: 1\n", indent, i)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, doc string
		want      string // "" for no error about a limit
	}{
		{"block sequences nested on one line", head + "x:\n" + strings.Repeat("- ", 100_000) + "1\n",
			fmt.Sprintf("agent.yaml:4:%d: values nested deeper than %d levels", 1+2*spec.MaxDepth, spec.MaxDepth)},
		{"block sequences nested to the limit", head + "x:\n" + strings.Repeat("- ", spec.MaxDepth-1) + "[]\n", ""},
		{"block mappings nested by indentation", head + "x:\n" + nestedKeys(spec.MaxDepth+5),
			fmt.Sprintf("agent.yaml:%d:%d: values nested deeper than %d levels", 4+spec.MaxDepth, 2+spec.MaxDepth, spec.MaxDepth)},
		{"block mappings nested to the limit", head + "x:\n" + nestedKeys(spec.MaxDepth-1) + strings.Repeat(" ", spec.MaxDepth) + "{}\n", ""},
		{"a flow mapping in block sequences past the limit", head + "x:\n" + strings.Repeat("- ", spec.MaxDepth) + "{}\n",
			fmt.Sprintf("agent.yaml:4:%d: values nested deeper than %d levels", 1+2*spec.MaxDepth, spec.MaxDepth)},
		{"a block mapping of too many entries", head + "x:\n" + keys(spec.MaxBlockEntries+1, "  "),
			fmt.Sprintf("agent.yaml:%d:3: a block mapping of more than %d entries; write it as a flow mapping", 4+spec.MaxBlockEntries, spec.MaxBlockEntries)},
		{"a block mapping of as many entries as allowed", head + "x:\n" + keys(spec.MaxBlockEntries, "  "), ""},
		{"block mappings of as many entries as allowed, in a sequence", head + "x:\n" + strings.Repeat("- "+strings.TrimPrefix(keys(spec.MaxBlockEntries/2, "  "), "  "), 3), ""},
		{"an indentless sequence between keys", head + "x:\n" + strings.Repeat("  a:\n  - 1\n  - 2\n", spec.MaxBlockEntries/2+1) + keys(spec.MaxBlockEntries/2-1, "  "), ""},
		{"too many entries around indentless sequences", head + "x:\n" + strings.Repeat("  a:\n  - 1\n", spec.MaxBlockEntries/2+1) + keys(spec.MaxBlockEntries/2, "  "),
			fmt.Sprintf("agent.yaml:%d:3: a block mapping of more than %d entries", 4+2*(spec.MaxBlockEntries/2+1)+spec.MaxBlockEntries/2-1, spec.MaxBlockEntries)},
		{"anchored keys", head + "x:\n" + strings.Repeat("  &a k: 1\n  j: 2\n", spec.MaxBlockEntries/2), ""},
		{"too many values in a flow sequence", head + "x: [" + strings.Repeat("1, ", spec.MaxNodes) + "1]\n",
			fmt.Sprintf("spec has more than %d values", spec.MaxNodes)},
		{"too many values in block mappings", head + "x:\n" + strings.Repeat("- a: 1\n", spec.MaxNodes/2+1),
			fmt.Sprintf("spec has more than %d values", spec.MaxNodes)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.doc) > spec.MaxBytes {
				t.Fatalf("the document has %d bytes, more than spec.MaxBytes", len(tc.doc))
			}
			_, err := loadBytes("agent.yaml", []byte(tc.doc))
			got := fmt.Sprint(err)
			if tc.want == "" {
				for _, limit := range []string{"nested deeper", "block mapping of more", "more than 50000 values"} {
					if strings.Contains(got, limit) {
						t.Fatalf("got %.300s", got)
					}
				}
				return
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("got %.300s\nwant %q", got, tc.want)
			}
		})
	}
}

// nestedKeys returns n block mappings nested by indentation, the key a at
// column 2, 3, ...; the last one's value is on the next line.
func nestedKeys(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i+1) + "a:\n")
	}
	return b.String()
}

// TestSpecBombsInBoundedMemory: hostile specs within the size limit —
// deep nesting, as many values as the bytes allow, a long mapping, a long
// name — are refused with an error at a position, and loading one
// allocates a bounded amount of memory (runtime.MemStats.TotalAlloc, all
// it allocates, garbage included, which bounds the peak): a YAML spec of
// 100,000 nested [ once took 15 GB. (agentgen validate on the worst of
// them, 49,990 values each wrong, peaks at 94 MB resident.)
func TestSpecBombsInBoundedMemory(t *testing.T) {
	const most = 200 << 20
	room := spec.MaxBytes - 100
	for _, tc := range []struct{ name, file, spec string }{
		{"yaml nested flow", "agent.yaml", "version: 1\nactors: " + strings.Repeat("[", room/2) + strings.Repeat("]", room/2) + "\n"},
		{"yaml nested blocks", "agent.yaml", "version: 1\nactors: " + strings.Repeat("- ", room/2) + "x\n"},
		{"yaml nested maps", "agent.yaml", "version: 1\nactors: " + strings.Repeat("{a: ", room/5) + "\n"},
		{"json nested", "agent.json", `{"version": 1, "actors": ` + strings.Repeat("[", room/2) + strings.Repeat("]", room/2) + "}"},
		{"yaml flow values", "agent.yaml", "version: 1\nactors: [" + strings.Repeat("1,", room/2) + "1]\n"},
		{"yaml empty flows", "agent.yaml", "version: 1\nactors: [" + strings.Repeat("[],", room/3) + "[]]\n"},
		{"yaml many wrong values", "agent.yaml", "version: 1\nactors: [" + strings.Repeat("[],", spec.MaxNodes-10) + "[]]\n"},
		{"json values", "agent.json", `{"version": 1, "actors": [` + strings.Repeat("1,", room/2) + "1]}"},
		{"yaml long mapping", "agent.yaml", "version: 1\nactors: [user]\n$defs:\n" + longMapping(room)},
		{"long name", "agent.yaml", "version: 1\nactors: [" + strings.Repeat("a", room-30) + "]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.spec) > spec.MaxBytes {
				t.Fatalf("the bomb has %d bytes, over the limit: it tests the size check only", len(tc.spec))
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := loadBytes(tc.file, []byte(tc.spec))
			runtime.ReadMemStats(&after)
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes: %d MiB allocated: %.120v", len(tc.spec), allocated>>20, err)
			if err == nil || !strings.HasPrefix(err.Error(), tc.file+":") {
				t.Fatalf("got %v, want an error at a position of %s", err, tc.file)
			}
			if allocated > most {
				t.Errorf("loading it allocated %d MiB, over %d", allocated>>20, most>>20)
			}
		})
	}
}

// longMapping is a YAML block mapping of about n bytes.
func longMapping(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n-20; i++ {
		fmt.Fprintf(&b, "  T%d: {type: string}\n", i)
	}
	return b.String()
}

// TestDiagnosticsAreBounded: a spec with more problems than
// MaxDiagnostics gets the first ones and one that says there are more.
func TestDiagnosticsAreBounded(t *testing.T) {
	_, err := loadBytes("agent.yaml", []byte("version: 1\nactors: ["+strings.Repeat("[], ", 1000)+"[]]\n"))
	var ds spec.Diagnostics
	if !errors.As(err, &ds) {
		t.Fatalf("got %v, want spec.Diagnostics", err)
	}
	if len(ds) != spec.MaxDiagnostics+1 {
		t.Fatalf("%d diagnostics, want %d", len(ds), spec.MaxDiagnostics+1)
	}
	if last := ds[len(ds)-1].Message; last != fmt.Sprintf("more than %d problems; the first %d are above", spec.MaxDiagnostics, spec.MaxDiagnostics) {
		t.Errorf("the last diagnostic says %q", last)
	}
}
