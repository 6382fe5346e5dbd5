package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/examples/react/decl"
)

var update = flag.Bool("update", false, "rewrite config.schema.json from ConfigSchema")

// TestConfigBuiltin: the built-in configuration is react.yaml, which
// parses with the demo's tools, and holds every prompt template.
func TestConfigBuiltin(t *testing.T) {
	cfg := builtinConfig()
	sum := sha256.Sum256(builtinConfigFile)
	if cfg.Source != "default" || cfg.Digest != hex.EncodeToString(sum[:]) {
		t.Errorf("source %q, digest %s", cfg.Source, cfg.Digest)
	}
	for _, name := range PromptNames {
		if strings.TrimSpace(cfg.Prompts[name]) == "" {
			t.Errorf("no prompt %s", name)
		}
	}
	if len(cfg.Prompts) != len(PromptNames) {
		t.Errorf("prompts %v, want %v", slices.Sorted(maps.Keys(cfg.Prompts)), PromptNames)
	}
	if got, want := slices.Sorted(maps.Keys(cfg.Tools)), slices.Sorted(slices.Values(demoToolNames())); !slices.Equal(got, want) {
		t.Errorf("tools %v, want the demo's %v", got, want)
	}
	if cfg.Guards.MaxRecoveries == nil || cfg.Guards.MaxDepth == nil || cfg.Guards.MaxIterations == 0 {
		t.Errorf("guards %+v", cfg.Guards)
	}
	if len(cfg.Strategies) == 0 || len(cfg.Recovery) == 0 {
		t.Errorf("strategies %v, recovery %v", cfg.Strategies, cfg.Recovery)
	}
	// As a file of its own, it is the same but for its source.
	loaded, err := ParseConfig("react.yaml", builtinConfigFile, demoToolNames())
	if err != nil {
		t.Fatal(err)
	}
	loaded.Source = "default"
	if !reflect.DeepEqual(loaded, cfg) {
		t.Errorf("parsed %+v\nbuilt in %+v", loaded, cfg)
	}
}

// TestConfigSchemaFile: config.schema.json is ConfigSchema, which is
// the same on every call; go test -run ConfigSchemaFile -update rewrites
// it.
func TestConfigSchemaFile(t *testing.T) {
	schema := ConfigSchema()
	if !bytes.Equal(schema, ConfigSchema()) {
		t.Fatal("ConfigSchema differs from one call to the next")
	}
	if !json.Valid(schema) || !bytes.HasSuffix(schema, []byte("}\n")) {
		t.Fatalf("ConfigSchema is not JSON ending in a newline:\n%s", schema)
	}
	const file = "config.schema.json"
	if *update {
		if err := os.WriteFile(file, schema, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (go test -run ConfigSchemaFile -update writes it)", err)
	}
	if !bytes.Equal(committed, schema) {
		t.Errorf("%s is not ConfigSchema: go test -run ConfigSchemaFile -update rewrites it", file)
	}
}

// TestConfigSchemaMatchesTheAgent: the schema's prompts are PromptNames,
// and its strategies values of decl's types.
func TestConfigSchemaMatchesTheAgent(t *testing.T) {
	var s struct {
		Required   []string
		Properties struct {
			Prompts    struct{ Properties map[string]any }
			Strategies struct {
				Items struct{ Enum []decl.Strategy }
			}
			Recovery struct {
				Items struct{ Enum []decl.RecoveryStrategy }
			}
		}
	}
	if err := json.Unmarshal(ConfigSchema(), &s); err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(s.Properties.Prompts.Properties)), slices.Sorted(slices.Values(PromptNames)); !slices.Equal(got, want) {
		t.Errorf("the schema's prompts %v, PromptNames %v", got, want)
	}
	if got := slices.Sorted(slices.Values(s.Required)); !slices.Equal(got, []string{"guards", "recovery", "strategies", "tools"}) {
		t.Errorf("required %v", got)
	}
	if len(s.Properties.Strategies.Items.Enum) != 5 || len(s.Properties.Recovery.Items.Enum) != 3 {
		t.Errorf("strategies %v, recovery %v", s.Properties.Strategies.Items.Enum, s.Properties.Recovery.Items.Enum)
	}
	for _, v := range s.Properties.Strategies.Items.Enum {
		if !v.Valid() || v == decl.StrategyAdvance {
			t.Errorf("strategy %q", v)
		}
	}
	for _, v := range s.Properties.Recovery.Items.Enum {
		if !v.Valid() {
			t.Errorf("recovery strategy %q", v)
		}
	}
}

// testConfig is a small valid configuration; the cases below edit it.
// Its lines: 1 tools, 2 calculator, 3 strategies, 4 recovery, 5 guards,
// 6 maxIterations, 7 maxDurationMs, 8 maxFailures, 9 maxRecoveries, 10
// maxDepth.
const testConfig = `tools:
  calculator: {timeoutMs: 3000, retryLimit: 1}
strategies: [retry, substitute]
recovery: [replan]
guards:
  maxIterations: 12
  maxDurationMs: 60000
  maxFailures: 3
  maxRecoveries: 2
  maxDepth: 3
`

// edit is testConfig with each of edits, pairs of old and new text,
// replaced.
func edit(t testing.TB, edits ...string) string {
	s := testConfig
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(s, edits[i]) {
			t.Fatalf("testConfig has no %q", edits[i])
		}
		s = strings.Replace(s, edits[i], edits[i+1], 1)
	}
	return s
}

// problem is a problem a test expects: where, and words of the message.
type problem struct {
	line, col int // col 0: any
	words     []string
}

// invalidConfigs are files ParseConfig refuses, and why; they also seed
// FuzzParseConfig.
func invalidConfigs(t testing.TB) []struct {
	name string
	file string
	want []problem
} {
	return []struct {
		name string
		file string
		want []problem
	}{
		{"a guard out of range", edit(t, "maxIterations: 12", "maxIterations: 0"),
			[]problem{{6, 18, []string{"guards.maxIterations: ", ">= 1", "found 0"}}}},
		{"a guard above its maximum", edit(t, "maxDepth: 3", "maxDepth: 9"),
			[]problem{{10, 13, []string{"guards.maxDepth: ", "<= 8", "found 9"}}}},
		{"a guard of the wrong type", edit(t, "maxFailures: 3", "maxFailures: three"),
			[]problem{{8, 16, []string{"guards.maxFailures: ", `a string ("three")`, "an integer is expected"}}}},
		// The misspelled key is unknown, and the one it misspells missing.
		{"a misspelled key", edit(t, "maxIterations: 12", "maxIteration: 12"),
			[]problem{
				{5, 1, []string{"guards.maxIterations: missing; it is required"}},
				{6, 3, []string{"guards.maxIteration: an unknown key (did you mean maxIterations?)", "guards has maxDepth, maxDurationMs"}},
			}},
		{"an unknown top-level key", edit(t, "recovery: [replan]", "recovery: [replan]\nrecover: [replan]"),
			[]problem{{5, 1, []string{"recover: an unknown key (did you mean recovery?)", "the top level has guards, prompts, recovery, strategies, tools"}}}},
		{"an unknown strategy", edit(t, "[retry, substitute]", "[retry, retrying]"),
			[]problem{{3, 21, []string{"strategies[1]: ", `"retrying"`, "is not one of retry, substitute, rollback, ask-user, abort"}}}},
		{"a strategy twice", edit(t, "[retry, substitute]", "[retry, substitute, retry]"),
			[]problem{{3, 33, []string{"strategies[2]: ", `"retry"`, "again (first as strategies[0])"}}}},
		{"an unknown recovery", edit(t, "recovery: [replan]", "recovery: [replan, pray]"),
			[]problem{{4, 20, []string{"recovery[1]: ", `"pray"`, "not one of replan, ask-user, give-up"}}}},
		{"strategies not a sequence", edit(t, "[retry, substitute]", "retry"),
			[]problem{{3, 13, []string{"strategies: ", `a string ("retry")`, "a sequence is expected"}}}},
		{"a tool not in the toolkit", edit(t, "  calculator:", "  shell: {}\n  calculator:"),
			[]problem{{2, 3, []string{"tools.shell: not a tool of the toolkit; it has calculator, grep, read_file, search_index, wait, word_count"}}}},
		{"a tool's name that cannot be one", edit(t, "  calculator:", "  \"no tool\": {}\n  calculator:"),
			[]problem{{2, 3, []string{`tools["no tool"]: `, `the name "no tool"`, "letters, digits"}}}},
		{"a tool's timeout out of range", edit(t, "timeoutMs: 3000", "timeoutMs: 600001"),
			[]problem{{2, 27, []string{"tools.calculator.timeoutMs: ", "<= 600000"}}}},
		{"a tool's unknown setting", edit(t, "retryLimit: 1", "retries: 1"),
			[]problem{{2, 33, []string{"tools.calculator.retries: an unknown key; ", "has retryLimit, timeoutMs"}}}},
		{"a tool without settings", edit(t, "  calculator: {timeoutMs: 3000, retryLimit: 1}", "  calculator:"),
			[]problem{{2, 3, []string{"tools.calculator: ", "nothing (null)", "a mapping is expected"}}}},
		{"a prompt that does not parse", testConfig + "prompts:\n  plan: 'Plan {{.Task'\n",
			[]problem{{12, 3, []string{"prompts.plan: the template does not parse: line 1 of the template: ", "unclosed action"}}}},
		{"a prompt that names a field its data lacks", testConfig + "prompts:\n  decompose: |\n    Split the goal.\n    {{.Nope}}\n",
			[]problem{{12, 3, []string{"prompts.decompose: the template fails on sample data: line 2, column 2 of the template: ", "can't evaluate field Nope", "its data has .Goal"}}}},
		{"a prompt that ranges over a number", testConfig + "prompts:\n  answer: '{{.Task}}{{if .Done}}{{range 100000000}}{{end}}{{end}}'\n",
			[]problem{{12, 3, []string{"prompts.answer: line 1 of the template: it ranges over something other than a field of its data"}}}},
		{"a prompt that writes too much", testConfig + "prompts:\n  answer: '{{printf \"%0999999d\" 0}}{{printf \"%0999999d\" 0}}'\n",
			[]problem{{12, 3, []string{"prompts.answer: on sample data, the template writes more than 65536 bytes"}}}},
		{"a prompt whose nested ranges spin writing nothing", testConfig + "prompts:\n  plan: '" + strings.Repeat("{{range .Tools}}{{with $}}", 14) + strings.Repeat("{{end}}{{end}}", 14) + "'\n",
			[]problem{{12, 3, []string{"prompts.plan: on sample data, the template does more than 65536 steps of work (its ranges, nested, run too many times)"}}}},
		{"an unknown prompt", testConfig + "prompts:\n  planner: 'Plan.'\n",
			[]problem{{12, 3, []string{"prompts.planner: an unknown key (did you mean plan?)"}}}},
		{"a prompt too long", testConfig + "prompts:\n  answer: '" + strings.Repeat("a", 10001) + "'\n",
			[]problem{{12, 11, []string{"prompts.answer: ", "<= 10000"}}}},
		{"a YAML syntax error", edit(t, "[retry, substitute]", "[retry, substitute"),
			[]problem{{3, 13, []string{"not valid YAML: this [ is not closed (with ]) before line 4"}}}},
		{"a second key on a line", edit(t, "maxDepth: 3", "maxDepth: 3: 4"),
			[]problem{{10, 0, []string{"not valid YAML: "}}}},
		{"an unclosed quote", edit(t, "maxDepth: 3", "maxDepth: '3"),
			[]problem{{10, 0, []string{"not valid YAML: ", "single-quoted"}}}},
		{"a tab in the indentation", edit(t, "  maxDepth: 3", "\tmaxDepth: 3"),
			[]problem{{10, 0, []string{"not valid YAML: "}}}},
		{"no guards", testConfig[:strings.Index(testConfig, "guards:")],
			[]problem{{1, 1, []string{"guards: missing; it is required"}}}},
		{"a guard left out", edit(t, "  maxDepth: 3\n", ""),
			[]problem{{5, 1, []string{"guards.maxDepth: missing; it is required"}}}},
		{"a duplicate key", edit(t, "  maxDepth: 3\n", "  maxDepth: 3\n  maxDepth: 4\n"),
			[]problem{{11, 3, []string{"guards.maxDepth: a duplicate key (first at line 10)"}}}},
		{"a duplicate top-level key", testConfig + "strategies: [abort]\n",
			[]problem{{11, 1, []string{"strategies: a duplicate key (first at line 3)"}}}},
		{"an alias without its anchor", edit(t, "[retry, substitute]", "*s"),
			[]problem{{3, 13, []string{"strategies: the alias *s names no anchor"}}}},
		{"an alias in its anchor", edit(t, "[retry, substitute]", "&s [retry, *s]"),
			[]problem{{3, 24, []string{"strategies[1]: the alias *s is inside the value of its anchor"}}}},
		{"a merge key", edit(t, "  calculator: {timeoutMs: 3000, retryLimit: 1}", "  calculator: &c {timeoutMs: 3000}\n  grep: {<<: *c}"),
			[]problem{{3, 10, []string{"tools.grep: ", "merge key (<<)"}}}},
		{"an unknown tag", edit(t, "maxDepth: 3", "maxDepth: !big 3"),
			[]problem{{10, 13, []string{"guards.maxDepth: the YAML tag !big"}}}},
		{"a sequence", "- tools\n- guards\n",
			[]problem{{1, 1, []string{"the top level: a sequence, where a mapping is expected"}}}},
		{"an empty file", "# nothing\n",
			[]problem{{1, 1, []string{"the file is empty"}}}},
		{"two documents", testConfig + "---\ntools: {}\n",
			[]problem{{12, 1, []string{"a second YAML document"}}}},
		{"not UTF-8", edit(t, "maxDepth: 3", "maxDepth: 3 # \xff"),
			[]problem{{10, 17, []string{"not UTF-8 text"}}}},
		{"lines that end with \\r\\n", strings.ReplaceAll(edit(t, "maxIterations: 12", "maxIterations: 0"), "\n", "\r\n"),
			[]problem{{6, 18, []string{"guards.maxIterations: "}}}},
		{"lines that end with \\r", strings.ReplaceAll(edit(t, "maxIterations: 12", "maxIterations: 0"), "\n", "\r"),
			[]problem{{6, 18, []string{"guards.maxIterations: "}}}},
		{"a byte order mark", "\ufeff" + edit(t, "maxIterations: 12", "maxIterations: 0"),
			[]problem{{6, 18, []string{"guards.maxIterations: "}}}},
		{"a number", "\r00",
			[]problem{{2, 1, []string{"the top level: a number (0), where a mapping is expected"}}}},
		{"nested too deep", testConfig + "prompts: " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\n",
			[]problem{{11, 0, []string{"nested deeper than 32 levels"}}}},
		{"too large", testConfig + strings.Repeat("# padding\n", MaxConfigBytes/10),
			// The 1 MiB-th byte is on the line after the last of the
			// padding that fits before it.
			[]problem{{strings.Count(testConfig, "\n") + (MaxConfigBytes-len(testConfig))/10 + 1, 0, []string{"goes on past 1048576 bytes (1 MiB)"}}}},
	}
}

// TestParseConfigInvalid: each problem of a file is reported at its line
// and column, with where it is in the file and what is wrong, and nothing
// else is.
func TestParseConfigInvalid(t *testing.T) {
	tools := demoToolNames()
	for _, tc := range invalidConfigs(t) {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig("c.yaml", []byte(tc.file), tools)
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v, want a *ConfigError", err)
			}
			got := append([]*ConfigError{ce}, ce.More...)
			if len(got) != len(tc.want) {
				t.Errorf("%d problems, want %d:\n%v", len(got), len(tc.want), err)
			}
			lines := strings.Split(err.Error(), "\n")
			for i, w := range tc.want {
				if i >= len(got) {
					break
				}
				g := got[i]
				if g.File != "c.yaml" || g.Line != w.line || (w.col != 0 && g.Col != w.col) {
					t.Errorf("problem %d at %s:%d:%d, want c.yaml:%d:%d: %s", i, g.File, g.Line, g.Col, w.line, w.col, g.Msg)
				}
				for _, word := range w.words {
					if !strings.Contains(g.Msg, word) {
						t.Errorf("problem %d %q does not say %q", i, g.Msg, word)
					}
				}
				if want := fmt.Sprintf("c.yaml:%d:%d: %s", g.Line, g.Col, g.Msg); i >= len(lines) || lines[i] != want {
					t.Errorf("line %d of the error is not %q:\n%v", i, want, err)
				}
			}
		})
	}
}

// TestParseConfigValid: a valid file, as decl.Config: what it says, and
// the built-in prompts for those it leaves out.
func TestParseConfigValid(t *testing.T) {
	file := edit(t, "  calculator: {timeoutMs: 3000, retryLimit: 1}", "  calculator: &d {timeoutMs: 3000, retryLimit: 1}\n  grep: *d\n  wait: {}") +
		"prompts:\n  answer: '{{.Task}}: {{.Result}}'\n"
	cfg, err := ParseConfig("c.yaml", []byte(file), demoToolNames())
	if err != nil {
		t.Fatal(err)
	}
	two, three := int64(2), int64(3)
	sum := sha256.Sum256([]byte(file))
	want := decl.Config{
		Source: "c.yaml",
		Digest: hex.EncodeToString(sum[:]),
		Tools: map[string]decl.ToolSettings{
			"calculator": {TimeoutMs: 3000, RetryLimit: 1},
			"grep":       {TimeoutMs: 3000, RetryLimit: 1},
			"wait":       {},
		},
		Strategies: []decl.Strategy{decl.StrategyRetry, decl.StrategySubstitute},
		Recovery:   []decl.RecoveryStrategy{decl.RecoveryStrategyReplan},
		Guards:     decl.Limits{MaxIterations: 12, MaxDurationMs: 60000, MaxFailures: 3, MaxRecoveries: &two, MaxDepth: &three},
		Prompts:    map[string]string{},
	}
	for _, name := range PromptNames {
		want.Prompts[name] = builtinConfig().Prompts[name]
	}
	want.Prompts[PromptAnswer] = "{{.Task}}: {{.Result}}"
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("got  %+v\nwant %+v", cfg, want)
	}
}

// TestParseConfigDeterministic: the same bytes make the same
// configuration; other bytes (a comment) another digest.
func TestParseConfigDeterministic(t *testing.T) {
	a, err := ParseConfig("c.yaml", []byte(testConfig), demoToolNames())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseConfig("c.yaml", []byte(testConfig), demoToolNames())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("%+v\n%+v", a, b)
	}
	c, err := ParseConfig("c.yaml", []byte(testConfig+"# a comment\n"), demoToolNames())
	if err != nil {
		t.Fatal(err)
	}
	if c.Digest == a.Digest {
		t.Error("the digest did not change with the bytes")
	}
	c.Digest = a.Digest
	if !reflect.DeepEqual(a, c) {
		t.Errorf("a comment changed the configuration: %+v\n%+v", a, c)
	}
	_, err1 := ParseConfig("c.yaml", []byte(edit(t, "maxDepth: 3", "maxDepth: 0", "maxFailures: 3", "maxFailures: 0")), demoToolNames())
	_, err2 := ParseConfig("c.yaml", []byte(edit(t, "maxDepth: 3", "maxDepth: 0", "maxFailures: 3", "maxFailures: 0")), demoToolNames())
	if err1 == nil || err2 == nil || err1.Error() != err2.Error() {
		t.Errorf("errors differ:\n%v\n%v", err1, err2)
	}
}

// TestLoadConfig: a file is read and parsed under its path; a file that
// is not there is an error that names it.
func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "react.yaml")
	if err := os.WriteFile(path, []byte(testConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path, demoToolNames())
	if err != nil || cfg.Source != path {
		t.Fatalf("config %+v, error %v", cfg, err)
	}
	if err := os.WriteFile(path, []byte(edit(t, "maxDepth: 3", "maxDepth: 0")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(path, demoToolNames()); err == nil || !strings.HasPrefix(err.Error(), path+":10:13: guards.maxDepth: ") {
		t.Errorf("error %v, want one at %s:10:13", err, path)
	}
	missing := filepath.Join(dir, "none.yaml")
	if _, err := LoadConfig(missing, demoToolNames()); err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("error %v, want one that names %s", err, missing)
	}
}

// TestWatchConfig: the watcher applies the file it finds, then each new
// valid version, refuses an invalid one with file:line, and says a file
// that disappears cannot be read, once.
func TestWatchConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "react.yaml")
	// write writes the file, whole (the watcher cannot see it half
	// written, and refuse that), and moves its modification time a
	// second on from the last, so that the watcher sees it changed.
	mtime := time.Now().Add(-time.Hour)
	write := func(text string) string {
		t.Helper()
		mtime = mtime.Add(time.Second)
		writeWhole(t, path, text, mtime)
		sum := sha256.Sum256([]byte(text))
		return hex.EncodeToString(sum[:])
	}
	applied := make(chan decl.Config, 10)
	refused := make(chan error, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	first := write(testConfig)
	go func() {
		defer close(done)
		WatchConfig(ctx, path, 10*time.Millisecond, demoToolNames(), func(c decl.Config) { applied <- c }, func(err error) { refused <- err })
	}()
	defer func() {
		cancel()
		<-done
	}()

	// wait waits for the next call of apply (refused false) or refuse,
	// and fails on the other.
	wait := func(what string, refusal bool) (decl.Config, error) {
		t.Helper()
		select {
		case c := <-applied:
			if refusal {
				t.Fatalf("%s: applied %s, want a refusal", what, c.Digest)
			}
			return c, nil
		case err := <-refused:
			if !refusal {
				t.Fatalf("%s: refused: %v", what, err)
			}
			return decl.Config{}, err
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: nothing after 10 s", what)
		}
		return decl.Config{}, nil
	}
	if c, _ := wait("the first file", false); c.Digest != first || c.Source != path {
		t.Errorf("applied %s from %s, want %s", c.Digest, c.Source, first)
	}
	second := write(edit(t, "maxIterations: 12", "maxIterations: 2"))
	if c, _ := wait("a change", false); c.Digest != second || c.Guards.MaxIterations != 2 {
		t.Errorf("applied %s (maxIterations %d), want %s", c.Digest, c.Guards.MaxIterations, second)
	}
	write(edit(t, "maxIterations: 12", "maxIterations: 0"))
	if _, err := wait("an invalid file", true); !strings.HasPrefix(err.Error(), path+":6:18: guards.maxIterations: ") {
		t.Errorf("refused with %v, want %s:6:18", err, path)
	}
	// The same bytes again (a new modification time) are neither applied
	// nor refused again; the next valid file is applied.
	write(edit(t, "maxIterations: 12", "maxIterations: 0"))
	third := write(edit(t, "maxIterations: 12", "maxIterations: 3"))
	if c, _ := wait("a valid file again", false); c.Digest != third {
		t.Errorf("applied %s, want %s", c.Digest, third)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := wait("a removed file", true); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("refused with %v, want a file that does not exist", err)
	}
	// Back as it was: nothing new to apply. Then a new version, which is
	// the next call: the removal was refused once only.
	write(edit(t, "maxIterations: 12", "maxIterations: 3"))
	fourth := write(edit(t, "maxIterations: 12", "maxIterations: 4"))
	if c, _ := wait("the file back", false); c.Digest != fourth {
		t.Errorf("applied %s, want %s", c.Digest, fourth)
	}
}

// TestWatchConfigSameSizeAndTime: a write that changes neither the file's
// size nor its modification time is seen, whether that time is now (a
// coarse clock) or long past (a file swapped in by cp -p or rsync -t); so
// is a symbolic link swapped in, to a file of the same size and time.
func TestWatchConfigSameSizeAndTime(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mtime time.Time
	}{{"now", time.Now()}, {"long past", time.Now().Add(-24 * time.Hour)}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "react.yaml")
			writeWhole(t, path, testConfig, tc.mtime)
			next := watchApplied(t, path)
			next()
			writeWhole(t, path, edit(t, "maxIterations: 12", "maxIterations: 21"), tc.mtime)
			if c := next(); c.Guards.MaxIterations != 21 {
				t.Errorf("applied maxIterations %d, want 21", c.Guards.MaxIterations)
			}
			other := filepath.Join(dir, "other.yaml")
			writeWhole(t, other, edit(t, "maxIterations: 12", "maxIterations: 31"), tc.mtime)
			if err := os.Symlink(other, path+".link"); err != nil {
				t.Skipf("no symbolic links here: %v", err)
			}
			if err := os.Rename(path+".link", path); err != nil {
				t.Fatal(err)
			}
			if c := next(); c.Guards.MaxIterations != 31 {
				t.Errorf("applied maxIterations %d, want 31", c.Guards.MaxIterations)
			}
		})
	}
}

// watchApplied watches the configuration at path until the test ends,
// failing it on a refusal, and returns what waits for the next version
// applied.
func watchApplied(t *testing.T, path string) (next func() decl.Config) {
	applied := make(chan decl.Config, 10)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go WatchConfig(ctx, path, 10*time.Millisecond, demoToolNames(), func(c decl.Config) { applied <- c }, func(err error) { t.Error(err) })
	return func() decl.Config {
		t.Helper()
		select {
		case c := <-applied:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("nothing applied after 10 s")
		}
		return decl.Config{}
	}
}

// writeWhole writes text to the file at path, modified at mtime, by
// renaming a file it writes beside it.
func writeWhole(t *testing.T, path, text string, mtime time.Time) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// errorStart is how every error of ParseConfig starts.
var errorStart = regexp.MustCompile(`^f\.yaml:[1-9][0-9]*:[1-9][0-9]*: \S`)

// FuzzParseConfig: ParseConfig never panics; it returns a configuration
// whose guards are set and prompts all there, or a *ConfigError at a
// line and column of the file.
func FuzzParseConfig(f *testing.F) {
	f.Add(builtinConfigFile)
	f.Add([]byte(testConfig))
	for _, tc := range invalidConfigs(f) {
		if len(tc.file) < 64<<10 {
			f.Add([]byte(tc.file))
		}
	}
	tools := demoToolNames()
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig("f.yaml", data, tools)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *ConfigError", err)
			}
			// Lines end with \n, \r\n or \r, as YAML's do.
			lines := len(regexp.MustCompile(`\r\n?|\n`).Split(string(data), -1))
			for i, line := range strings.Split(err.Error(), "\n") {
				if !errorStart.MatchString(line) {
					t.Fatalf("line %d of the error does not start with f.yaml:line:col: %q", i, line)
				}
			}
			for _, e := range append([]*ConfigError{ce}, ce.More...) {
				if e.Line > lines {
					t.Fatalf("%v: line %d of %d", e, e.Line, lines)
				}
			}
			return
		}
		if cfg.Guards.MaxDepth == nil || cfg.Guards.MaxRecoveries == nil || len(cfg.Prompts) != len(PromptNames) {
			t.Fatalf("configuration %+v", cfg)
		}
	})
}

// ExampleParseConfig: what is wrong with a file, each problem at its line
// and column.
func ExampleParseConfig() {
	_, err := ParseConfig("react.yaml", []byte(`tools:
  calculator: {timeoutMs: 3000}
  shell: {}
strategies: [retry, retrying]
recovery: []
guards: {maxIterations: 0, maxDurationMs: 60000, maxFailures: 3, maxDepth: 3}
`), []string{"calculator", "grep"})
	fmt.Println(err)
	// Output:
	// react.yaml:3:3: tools.shell: not a tool of the toolkit; it has calculator, grep
	// react.yaml:4:21: strategies[1]: a string ("retrying") is not one of retry, substitute, rollback, ask-user, abort
	// react.yaml:6:1: guards.maxRecoveries: missing; it is required
	// react.yaml:6:25: guards.maxIterations: must be >= 1 but found 0
}
