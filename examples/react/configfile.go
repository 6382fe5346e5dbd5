package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"
	invopop "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/moora-go/moora/examples/react/decl"
	"github.com/moora-go/moora/internal/yamlpos"
)

// The configuration file (react.yaml, documented in the file itself) is
// read in stages, each reporting what it finds at file:line:col:
//
//  1. the bytes: at most MaxConfigBytes, UTF-8;
//  2. the YAML (github.com/goccy/go-yaml, which keeps the position of
//     every token, read with internal/yamlpos as the spec reader reads
//     it): its tokens are checked against limits that keep the parser
//     fast before it sees them, then yamlpos.Convert makes the syntax
//     tree a tree of yamlpos.Node, JSON's values with their positions
//     (duplicate keys, tags other than YAML's own and merge keys refused,
//     aliases expanded), with this file's policy (configYAMLOptions) and
//     in its words (convertProblem: each message after the path of the
//     value at fault, such as tools.search.timeoutMs);
//  3. the schema (ConfigSchema, derived from configFile): every leaf of the
//     violation at the position of the value at fault;
//  4. what a schema cannot say: the tools are the toolkit's, the prompt
//     templates parse and run, within the bounds of a rendering, on their
//     PromptSamples with the toolkit's tools;
//  5. the tree, valid, decoded into configFile and made a decl.Config.

// MaxConfigBytes is the size of the largest configuration file: 1 MiB.
const MaxConfigBytes = 1 << 20

// Limits that keep a file the YAML parser would take long over (its time
// grows much faster than the input with the nesting of collections and the
// entries of a block mapping) from reaching it, and the alias expansion
// and the prompt templates within bounds. A configuration needs far less:
// 4 levels, 100 tools of 2 settings.
const (
	maxConfigDepth        = 32     // nesting of mappings and sequences
	maxConfigValues       = 10_000 // values, aliases expanded
	maxConfigBlockEntries = 1000   // entries of one block mapping
)

// configFile is the shape of the configuration file, from which its JSON
// Schema (ConfigSchema) is derived: a field without omitempty is required,
// the jsonschema tags say what the Go types cannot.
type configFile struct {
	Tools      configTools             `json:"tools" jsonschema_description:"The tools that may be called, by name: a tool of the toolkit left out is disabled (the planner is not shown it, and a plan's step leaves it out)."`
	Strategies []decl.Strategy         `json:"strategies" jsonschema:"enum=retry,enum=substitute,enum=rollback,enum=ask-user,enum=abort,uniqueItems=true,maxItems=5" jsonschema_description:"What the reflector does after a failed call, the first that applies: retry the tool (up to its retryLimit), substitute the step's next tool, roll back to the parent task, ask the user, or abort."`
	Recovery   []decl.RecoveryStrategy `json:"recovery" jsonschema:"enum=replan,enum=ask-user,enum=give-up,uniqueItems=true" jsonschema_description:"What the reflector does when a run enters error, the first that applies, at most guards.maxRecoveries times a run: replan the task, ask the user, or give the run up."`
	Guards     configGuards            `json:"guards" jsonschema_description:"The guards of every run (a run's request may ask for less)."`
	Prompts    *configPrompts          `json:"prompts,omitempty" jsonschema_description:"The prompt templates (Go text/template); a template left out is the built-in one."`
}

// configTools are the tools of a configuration file by name.
type configTools map[string]configTool

// JSONSchemaExtend adds to the schema of configTools what its Go type
// cannot say: the pattern of a name, and how many there may be.
func (configTools) JSONSchemaExtend(s *invopop.Schema) {
	s.PropertyNames = &invopop.Schema{Pattern: toolNamePattern}
	maxTools := uint64(100)
	s.MaxProperties = &maxTools
}

// configTool are the settings of a tool; each is optional (0).
type configTool struct {
	TimeoutMs  int64 `json:"timeoutMs,omitempty" jsonschema:"minimum=0,maximum=600000" jsonschema_description:"How long each call may take, in milliseconds; 0 (or left out): 3000."`
	RetryLimit int64 `json:"retryLimit,omitempty" jsonschema:"minimum=0,maximum=10" jsonschema_description:"How many times a failed call is retried before the step's fallback tool is called."`
}

// configGuards are the guards of a configuration file; all are required.
type configGuards struct {
	MaxIterations int64 `json:"maxIterations" jsonschema:"minimum=1,maximum=1000" jsonschema_description:"How many tool calls a run may make."`
	MaxDurationMs int64 `json:"maxDurationMs" jsonschema:"minimum=1,maximum=86400000" jsonschema_description:"How long a run may take, from its first plan, in milliseconds."`
	MaxFailures   int64 `json:"maxFailures" jsonschema:"minimum=1,maximum=100" jsonschema_description:"How many tool calls in a row may fail."`
	MaxRecoveries int64 `json:"maxRecoveries" jsonschema:"minimum=0,maximum=10" jsonschema_description:"How many times a run may recover from error; 0: never."`
	MaxDepth      int64 `json:"maxDepth" jsonschema:"minimum=1,maximum=8" jsonschema_description:"How deep the task tree may be: the root's subtasks are at depth 1."`
}

// configPrompts are the prompt templates of a configuration file, one
// field per name of PromptNames (TestConfigSchemaPrompts); each is
// optional.
type configPrompts struct {
	Decompose *string `json:"decompose,omitempty" jsonschema:"maxLength=10000" jsonschema_description:"The planner's instructions when it splits a goal. Data: .Goal."`
	Plan      *string `json:"plan,omitempty" jsonschema:"maxLength=10000" jsonschema_description:"The planner's instructions when it plans a task. Data: .Tools (each with .Name, .Description, .Parameters), .MaySplit."`
	Question  *string `json:"question,omitempty" jsonschema:"maxLength=10000" jsonschema_description:"What the agent asks the user when a tool call is refused. Data: .Tool, .Error, .Task."`
	Recover   *string `json:"recover,omitempty" jsonschema:"maxLength=10000" jsonschema_description:"What the agent asks the user when it recovers from an error by asking. Data: .Error, .Task."`
	Answer    *string `json:"answer,omitempty" jsonschema:"maxLength=10000" jsonschema_description:"A line of the run's answer, for each task without subtasks. Data: .Task, .Done, .Result, .Why."`
}

// byName are the templates given, by name.
func (p *configPrompts) byName() map[string]string {
	m := map[string]string{}
	if p == nil {
		return m
	}
	for name, text := range map[string]*string{
		PromptDecompose: p.Decompose, PromptPlan: p.Plan, PromptQuestion: p.Question,
		PromptRecover: p.Recover, PromptAnswer: p.Answer,
	} {
		if text != nil {
			m[name] = *text
		}
	}
	return m
}

// ConfigSchema returns the JSON Schema of the configuration file
// (react.yaml), derived from its Go type: indented JSON ending in a
// newline, the same on every call. config.schema.json is a copy
// (TestConfigSchemaFile), for editors.
func ConfigSchema() []byte { return slices.Clone(configSchema()) }

var configSchema = sync.OnceValue(func() []byte {
	r := &invopop.Reflector{ExpandedStruct: true, DoNotReference: true}
	s := r.Reflect(&configFile{})
	s.ID = ""
	s.Title = "The configuration of the ReAct agent"
	s.Description = "The tools the agent may call and their limits, the strategies of its reflector and their order, its guards, and its prompt templates. See react.yaml."
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("config schema: %v", err))
	}
	return append(b, '\n')
})

// compiledConfigSchema is ConfigSchema compiled, and decoded (to look up
// the keywords an error names).
var compiledConfigSchema = sync.OnceValues(func() (*jsonschema.Schema, map[string]any) {
	const resource = "https://moora-go.invalid/react/config.schema.json"
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource(resource, bytes.NewReader(configSchema())); err != nil {
		panic(fmt.Sprintf("config schema: %v", err))
	}
	s, err := c.Compile(resource)
	if err != nil {
		panic(fmt.Sprintf("config schema: %v", err))
	}
	var raw map[string]any
	if err := json.Unmarshal(configSchema(), &raw); err != nil {
		panic(fmt.Sprintf("config schema: %v", err))
	}
	return s, raw
})

//go:embed react.yaml
var builtinConfigFile []byte

// builtinConfig is the configuration built in: react.yaml as it was when
// the agent was built (its Source is "default"). It holds every prompt
// template, the ones a configuration file leaves out.
var builtinConfig = sync.OnceValue(func() decl.Config {
	cfg, err := parseConfig("react.yaml", builtinConfigFile, demoToolNames(), nil)
	if err != nil {
		panic(fmt.Sprintf("the built-in configuration: %v", err))
	}
	for _, name := range PromptNames {
		if _, ok := cfg.Prompts[name]; !ok {
			panic(fmt.Sprintf("the built-in configuration: react.yaml has no prompt %s", name))
		}
	}
	cfg.Source = "default"
	return cfg
})

// demoToolNames are the names of the demo's tools (Tools).
func demoToolNames() []string {
	var names []string
	for _, t := range Tools(nil) {
		names = append(names, t.Name())
	}
	return names
}

// A ConfigError says what is wrong with a configuration file: File, Line,
// Col (1-based, in characters) and Msg are its first problem by position;
// More are the others, in order. Error gives them all, one a line, each
// as file:line:col: where: what — where is a path in the file, such as
// guards.maxIterations or strategies[1], left out for a problem of the
// file as a whole (too large, not YAML).
type ConfigError struct {
	File      string
	Line, Col int
	Msg       string
	More      []*ConfigError
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	for _, m := range e.More {
		fmt.Fprintf(&b, "\n%s:%d:%d: %s", m.File, m.Line, m.Col, m.Msg)
	}
	return b.String()
}

// configProblem is one problem of a file, at a position.
type configProblem struct {
	line, col int
	msg       string
}

// configErrors makes problems one *ConfigError of file: sorted by
// position, each once.
func configErrors(file string, problems []configProblem) error {
	if len(problems) == 0 {
		return nil
	}
	slices.SortFunc(problems, func(a, b configProblem) int {
		return cmp.Or(cmp.Compare(a.line, b.line), cmp.Compare(a.col, b.col), strings.Compare(a.msg, b.msg))
	})
	problems = slices.Compact(problems)
	errs := make([]*ConfigError, len(problems))
	for i, p := range problems {
		errs[i] = &ConfigError{File: file, Line: p.line, Col: p.col, Msg: p.msg}
	}
	first := errs[0]
	first.More = errs[1:]
	return first
}

// ParseConfig parses the configuration file named name (for the errors,
// and the result's Source) whose content is data. tools are the names of
// the toolkit's tools, the only ones the file may list. A prompt template
// the file leaves out is the built-in one.
//
// A file that is not valid is reported as a *ConfigError with every
// problem found, each at its line and column: a YAML syntax error (only
// that one), every violation of ConfigSchema, a tool that is not the
// toolkit's, a prompt template that does not parse or fails on its data
// (PromptSamples).
func ParseConfig(name string, data []byte, tools []string) (decl.Config, error) {
	return parseConfig(name, data, tools, builtinConfig().Prompts)
}

// parseConfig is ParseConfig with the prompt templates for those the
// file leaves out (nil: none).
func parseConfig(name string, data []byte, tools []string, defaultPrompts map[string]string) (decl.Config, error) {
	root, problem := readConfigYAML(data)
	if problem != nil {
		return decl.Config{}, configErrors(name, []configProblem{*problem})
	}
	problems := validateConfig(root)
	problems = append(problems, checkConfigTools(root, tools)...)
	problems = append(problems, checkConfigPrompts(root, tools)...)
	if err := configErrors(name, problems); err != nil {
		return decl.Config{}, err
	}
	var f configFile
	if err := json.Unmarshal(configJSON(root), &f); err != nil {
		// The schema admits nothing that configFile does not hold.
		return decl.Config{}, configErrors(name, []configProblem{{1, 1, fmt.Sprintf("valid, but cannot be decoded: %v", err)}})
	}
	sum := sha256.Sum256(data)
	cfg := decl.Config{
		Source:     name,
		Digest:     hex.EncodeToString(sum[:]),
		Tools:      make(map[string]decl.ToolSettings, len(f.Tools)),
		Strategies: f.Strategies,
		Recovery:   f.Recovery,
		Guards: decl.Limits{
			MaxIterations: f.Guards.MaxIterations,
			MaxDurationMs: f.Guards.MaxDurationMs,
			MaxFailures:   f.Guards.MaxFailures,
			MaxRecoveries: &f.Guards.MaxRecoveries,
			MaxDepth:      &f.Guards.MaxDepth,
		},
		Prompts: f.Prompts.byName(),
	}
	for tool, s := range f.Tools {
		cfg.Tools[tool] = decl.ToolSettings{TimeoutMs: s.TimeoutMs, RetryLimit: s.RetryLimit}
	}
	for _, p := range PromptNames {
		if _, ok := cfg.Prompts[p]; !ok && defaultPrompts != nil {
			cfg.Prompts[p] = defaultPrompts[p]
		}
	}
	return cfg, nil
}

// LoadConfig reads the configuration file at path and parses it
// (ParseConfig, with path as its name).
func LoadConfig(path string, tools []string) (decl.Config, error) {
	data, err := readConfigFile(path)
	if err != nil {
		return decl.Config{}, err
	}
	return ParseConfig(path, data, tools)
}

// readConfigFile reads the file at path, up to one byte more than
// MaxConfigBytes (enough for ParseConfig to refuse it). It refuses what is
// not a regular file (a FIFO, a device, a directory), which it opens
// without waiting for a writer.
func readConfigFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, fmt.Errorf("reading the configuration: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading the configuration: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("reading the configuration: %s is not a regular file (its mode is %v): a configuration is a file", path, fi.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the configuration: %w", err)
	}
	return data, nil
}

// WatchConfig watches the configuration file at path until ctx is done,
// looking at it at the interval every (0 or less: a second). It calls
// apply with each new valid version of the file (ParseConfig with tools),
// and refuse with what is wrong with each new invalid one, or with why the
// file cannot be read (once, until that changes): the configuration in
// force is then the last applied. The file as WatchConfig first finds it
// is a new version: a caller that loaded it already (LoadConfig) is
// called again with the same Digest.
//
// A version is the file's bytes: each look reads the file (at most
// MaxConfigBytes and one byte), and a version is taken up once two looks
// in a row have read the same bytes (so that a write in progress is not
// read half done). So any change is seen, whatever its size and times
// (a file swapped for one of the same size and modification time, as cp -p
// or rsync -t leave it, or a symbolic link pointed elsewhere), and the
// same bytes are never applied (or refused) twice in a row, whatever
// happens to the file in between. apply and refuse are called from
// WatchConfig's goroutine, one at a time.
func WatchConfig(ctx context.Context, path string, every time.Duration, tools []string, apply func(decl.Config), refuse func(error)) {
	if every <= 0 {
		every = time.Second
	}
	// Between two looks: digest is the SHA-256 of the bytes last applied
	// or refused ("" before any); pending that of the bytes the last look
	// read, when they differed from those ("" if not); failure the message
	// of the last error refused for not reading the file ("" since the
	// last read that worked).
	var digest, pending, failure string
	look := func() {
		data, err := readConfigFile(path)
		if err != nil {
			pending = ""
			if err.Error() != failure {
				failure = err.Error()
				refuse(err)
			}
			return
		}
		failure = ""
		sum := sha256.Sum256(data)
		switch d := hex.EncodeToString(sum[:]); d {
		case digest:
			pending = ""
			return
		case pending:
			digest, pending = d, ""
		default:
			pending = d // read again at the next look
			return
		}
		cfg, err := ParseConfig(path, data, tools)
		if err != nil {
			refuse(err)
			return
		}
		apply(cfg)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for ctx.Err() == nil {
		look()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// configAt is the position of n to report a problem of the value at: its
// key's if it has one and usingKey, else its own.
func configAt(n *yamlpos.Node, usingKey bool, msg string) configProblem {
	if usingKey && n.KeyLine > 0 {
		return configProblem{n.KeyLine, n.KeyCol, msg}
	}
	return configProblem{n.Line, n.Col, msg}
}

// configJSON is n as JSON, the keys of objects sorted.
func configJSON(n *yamlpos.Node) []byte {
	v, _ := json.Marshal(n.Value()) // of JSON's values, which do not fail
	return v
}

// describe says what n is, for a message: a scalar with its value.
func describe(n *yamlpos.Node) string {
	switch n.Kind {
	case yamlpos.Null:
		return "nothing (null)"
	case yamlpos.Bool:
		return "a boolean (" + n.Text + ")"
	case yamlpos.Number:
		return "a number (" + n.Text + ")"
	case yamlpos.String:
		return "a string (" + configClip(strconv.Quote(n.Text), 40) + ")"
	case yamlpos.Array:
		return "a sequence"
	}
	return "a mapping"
}

// configClip cuts s to at most n bytes, with "…" in place of what is left out.
func configClip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// readConfigYAML reads data as YAML into a tree of yamlpos.Node, or says
// where it cannot.
func readConfigYAML(data []byte) (root *yamlpos.Node, problem *configProblem) {
	if len(data) > MaxConfigBytes {
		line, col := positionOf(data, MaxConfigBytes)
		return nil, &configProblem{line, col, fmt.Sprintf("the file goes on past %d bytes (1 MiB), the most a configuration may have", MaxConfigBytes)}
	}
	if !utf8.Valid(data) {
		line, col := positionOf(data, yamlpos.InvalidUTF8(data))
		return nil, &configProblem{line, col, "not UTF-8 text: a configuration is a YAML file in UTF-8"}
	}
	// A byte order mark is not YAML's to read (nor an editor's to show).
	tokens := lexer.Tokenize(strings.TrimPrefix(string(data), "\ufeff"))
	if p := checkConfigTokens(tokens); p != nil {
		return nil, p
	}
	bodies, err := yamlpos.Parse(tokens)
	if err != nil {
		p := yamlConfigError(data, err)
		return nil, &p
	}
	switch len(bodies) {
	case 0:
		return nil, &configProblem{1, 1, "the file is empty: a configuration has tools, strategies, recovery and guards"}
	case 1:
	default:
		line, col := yamlPosition(bodies[1], 1, 1)
		return nil, &configProblem{line, col, "a second YAML document: a configuration is one"}
	}
	root, cerr := yamlpos.Convert(bodies[0], configYAMLOptions)
	if cerr != nil {
		return nil, convertProblem(cerr)
	}
	return root, nil
}

// positionOf is the line and column (in characters, both from 1) of the
// byte at offset i of data.
func positionOf(data []byte, i int) (line, col int) {
	lines := configLines(data[:min(i, len(data))])
	return len(lines), utf8.RuneCountInString(lines[len(lines)-1]) + 1
}

// lineBreak is a line break of YAML, as the parser counts lines.
var lineBreak = regexp.MustCompile(`\r\n|\r|\n`)

// configLines are the lines of data.
func configLines(data []byte) []string { return lineBreak.Split(string(data), -1) }

// checkConfigTokens checks the YAML tokens of a file against the limits
// of maxConfigDepth, maxConfigValues (a lower bound of the values: each
// ":", "-" and "," is one) and maxConfigBlockEntries, in time linear in
// the tokens (yamlpos.CheckTokens), and says where the first is crossed.
func checkConfigTokens(tokens token.Tokens) *configProblem {
	// A collection at level maxConfigDepth is one too deep: at most
	// maxConfigDepth-1 may be open around one.
	tk, crossed := yamlpos.CheckTokens(tokens, yamlpos.Limits{
		Depth: maxConfigDepth - 1, Values: maxConfigValues, BlockEntries: maxConfigBlockEntries, CommaIsValue: true,
	})
	if tk == nil {
		return nil
	}
	p := &configProblem{max(tk.Position.Line, 1), max(tk.Position.Column, 1), ""}
	switch crossed {
	case yamlpos.TooDeep:
		p.msg = fmt.Sprintf("values nested deeper than %d levels", maxConfigDepth)
	case yamlpos.TooManyEntries:
		p.msg = fmt.Sprintf("a mapping of more than %d entries", maxConfigBlockEntries)
	default:
		p.msg = fmt.Sprintf("more than %d values", maxConfigValues)
	}
	return p
}

// yamlConfigError is where a syntax error of the YAML parser is, and what
// it is.
func yamlConfigError(data []byte, err error) configProblem {
	tk, msg, ok := yamlpos.SyntaxError(err)
	if !ok {
		return configProblem{1, 1, "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	pos := tk.Position
	// Keep the position inside the file.
	lines := len(configLines(data))
	p := configProblem{min(max(pos.Line, 1), lines), max(pos.Column, 1), "not valid YAML: " + msg}
	// A flow collection left open runs into the lines after it: the
	// parser says so where it gives up, point at the bracket.
	for _, b := range []struct{ open, close string }{{"[", "]"}, {"{", "}"}} {
		if !strings.Contains(msg, "'"+b.close+"'") {
			continue
		}
		if line, col, ok := yamlpos.Unclosed(configLines(data), p.line, p.col, b.open[0]); ok && line < p.line {
			return configProblem{line, col, fmt.Sprintf("not valid YAML: this %s is not closed (with %s) before line %d", b.open, b.close, p.line)}
		}
	}
	return p
}

// yamlPosition is the line and column where a YAML node starts
// (yamlpos.Position); (line, col) for a node without a token.
func yamlPosition(n ast.Node, line, col int) (int, int) {
	l, c, ok := yamlpos.Position(n)
	if !ok {
		return line, col
	}
	return max(l, 1), max(c, 1)
}

// configYAMLOptions are the configuration's policy for yamlpos.Convert:
// positions as the parser says (a value without one at its parent's), a
// null at its key, an alias's value at the alias and no alias inside its
// own anchor's value, numbers formatted by strconv, YAML's own tags read
// loosely (the schema says what a value should be), and {a, b: 1} read as
// YAML reads it, {a: null, b: 1}.
var configYAMLOptions = yamlpos.ConvertOptions{
	MaxValues: maxConfigValues, MaxDepth: maxConfigDepth, MaxKeyHops: maxConfigDepth,
	AliasAtAlias: true, RefuseAliasInAnchor: true, NullAtKey: true, Tags: yamlpos.LooseTags,
}

// convertProblem is the problem of what yamlpos.Convert refused, in the
// words of a configuration, after the path of the value (or of the key)
// at fault.
func convertProblem(e *yamlpos.ConvertError) *configProblem {
	where := ""
	for _, s := range e.Path {
		tok := s.Key
		if s.Item {
			tok = strconv.Itoa(s.Index)
		}
		where = configPath(where, s.Item, tok)
	}
	var msg string
	switch e.Fault {
	case yamlpos.Crossed:
		if e.Limit == yamlpos.TooDeep {
			msg = fmt.Sprintf("values nested deeper than %d levels", maxConfigDepth)
		} else {
			msg = fmt.Sprintf("more than %d values (with the aliases expanded)", maxConfigValues)
		}
	case yamlpos.UnknownAlias:
		msg = fmt.Sprintf("the alias *%s names no anchor (&%[1]s) before it", e.Name)
	case yamlpos.AliasInAnchor:
		msg = fmt.Sprintf("the alias *%s is inside the value of its anchor (&%[1]s)", e.Name)
	case yamlpos.KeyAliasLoop:
		msg = "a key of aliases that name each other"
	case yamlpos.KeyWithoutText:
		msg = "a key without text"
	case yamlpos.MergeKey:
		msg = "a YAML merge key (<<), which a configuration does not have: write the keys"
	case yamlpos.KeyNotScalar:
		msg = "a key that is not a scalar"
	case yamlpos.DuplicateKey:
		where = configPath(where, false, e.Name)
		msg = fmt.Sprintf("a duplicate key (first at line %d)", e.FirstLine)
	case yamlpos.TagOnNonScalar:
		msg = e.Name + " on a value that is not a scalar"
	case yamlpos.UnsupportedTag:
		msg = fmt.Sprintf("the YAML tag %s: a configuration has only YAML's own (!!str, !!int, ...)", e.Name)
	case yamlpos.NumberTooLarge:
		msg = fmt.Sprintf("the number %s is too large", e.Name)
	case yamlpos.NumberNotJSON:
		msg = fmt.Sprintf("the number %s is not one JSON can hold", e.Name)
	case yamlpos.UnsupportedNode:
		msg = fmt.Sprintf("a YAML %s, which a configuration does not have", e.Name)
	default: // KeyWithoutValue and TooCloseToZero, which the options leave out
		msg = e.Error()
	}
	if where != "" {
		msg = where + ": " + msg
	}
	return &configProblem{e.Line, e.Col, msg}
}

// validateConfig validates root against ConfigSchema and says where each
// leaf of the violation is, and what it is.
func validateConfig(root *yamlpos.Node) []configProblem {
	schema, raw := compiledConfigSchema()
	err := schema.Validate(root.Value())
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []configProblem{{root.Line, root.Col, "validating: " + err.Error()}}
	}
	var problems []configProblem
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		for _, c := range e.Causes {
			walk(c)
		}
		if len(e.Causes) == 0 {
			problems = append(problems, schemaProblems(root, raw, e)...)
		}
	}
	walk(ve)
	return problems
}

// schemaProblems are the problems of one leaf e of a schema violation:
// where its value is in root, and what is wrong, in the words of the
// file (a mapping, not an object). raw is the schema, to find what its
// keyword asks.
func schemaProblems(root *yamlpos.Node, raw map[string]any, e *jsonschema.ValidationError) []configProblem {
	keywordPath := configPointer(e.AbsoluteKeywordLocation[strings.IndexByte(e.AbsoluteKeywordLocation, '#')+1:])
	keyword := ""
	if len(keywordPath) > 0 {
		keyword = keywordPath[len(keywordPath)-1]
	}
	parentSchema, _ := schemaAt(raw, keywordPath[:max(len(keywordPath)-1, 0)]).(map[string]any)
	instPath := configPointer(e.InstanceLocation)
	n, where := root, ""
	for _, tok := range instPath {
		where = configWhere(where, n, tok)
		if n.Kind == yamlpos.Array {
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n.Items) {
				return []configProblem{{n.Line, n.Col, where + ": " + e.Message}}
			}
			n = n.Items[i]
			continue
		}
		next := n.Get(tok)
		if next == nil {
			return []configProblem{{n.Line, n.Col, where + ": " + e.Message}}
		}
		n = next
	}
	label := func(where string) string {
		if where == "" {
			return "the top level"
		}
		return where
	}
	switch keyword {
	case "additionalProperties":
		props, _ := parentSchema["properties"].(map[string]any)
		known := slices.Sorted(maps.Keys(props))
		var problems []configProblem
		for i, k := range n.Keys {
			if _, ok := props[k]; ok {
				continue
			}
			msg := fmt.Sprintf("%s: an unknown key; %s has %s", configWhere(where, n, k), label(where), strings.Join(known, ", "))
			if s := closestKey(k, known); s != "" {
				msg = fmt.Sprintf("%s: an unknown key (did you mean %s?); %s has %s", configWhere(where, n, k), s, label(where), strings.Join(known, ", "))
			}
			problems = append(problems, configAt(n.Vals[i], true, msg))
		}
		return problems
	case "required":
		req, _ := parentSchema["required"].([]any)
		var problems []configProblem
		for _, r := range req {
			if name, ok := r.(string); ok && n.Get(name) == nil {
				problems = append(problems, configAt(n, true, configWhere(where, n, name)+": missing; it is required"))
			}
		}
		return problems
	case "enum":
		var values []string
		if enum, ok := parentSchema["enum"].([]any); ok {
			for _, v := range enum {
				values = append(values, fmt.Sprint(v))
			}
		}
		return []configProblem{configAt(n, false, fmt.Sprintf("%s: %s is not one of %s", label(where), describe(n), strings.Join(values, ", ")))}
	case "type":
		want, _ := parentSchema["type"].(string)
		return []configProblem{configAt(n, false, fmt.Sprintf("%s: %s, where %s is expected", label(where), describe(n), configTypeName(want)))}
	case "uniqueItems":
		var problems []configProblem
		first := map[string]int{} // by the item as JSON
		for j, it := range n.Items {
			text := string(configJSON(it))
			if i, ok := first[text]; ok {
				problems = append(problems, configAt(it, false, fmt.Sprintf("%s[%d]: %s again (first as %s[%d]); each may appear once", where, j, describe(it), where, i)))
				continue
			}
			first[text] = j
		}
		if len(problems) > 0 {
			return problems
		}
	case "maxProperties":
		return []configProblem{configAt(n, true, fmt.Sprintf("%s: %d entries, more than the %v allowed", label(where), len(n.Keys), parentSchema["maxProperties"]))}
	case "pattern":
		if slices.Contains(keywordPath, "propertyNames") {
			return []configProblem{configAt(n, true, fmt.Sprintf("%s: the name %s is not one of 1 to 64 letters, digits, _ and -", label(where), configClip(strconv.Quote(instPath[len(instPath)-1]), 64)))}
		}
	}
	return []configProblem{configAt(n, false, label(where)+": "+e.Message)}
}

// configTypeName is a JSON Schema type in the words of a YAML file.
func configTypeName(t string) string {
	switch t {
	case "object":
		return "a mapping"
	case "array":
		return "a sequence"
	case "integer":
		return "an integer"
	}
	return "a " + t
}

// configPointer are the tokens of a JSON Pointer, as the schema
// validator writes them (each also escaped for a URL).
func configPointer(ptr string) []string {
	if ptr == "" || ptr == "/" {
		return nil
	}
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, t := range toks {
		if u, err := url.PathUnescape(t); err == nil {
			t = u
		}
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks
}

// schemaAt is the value of the schema at path, or nil.
func schemaAt(raw map[string]any, path []string) any {
	var v any = raw
	for _, tok := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

var configName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// configWhere is the path of the value at tok in n, whose path is where:
// guards.maxDepth, strategies[1], tools["a b"].
func configWhere(where string, n *yamlpos.Node, tok string) string {
	return configPath(where, n.Kind == yamlpos.Array, tok)
}

// configPath is the path of the value at tok in the value whose path is
// where, an array (item) or an object.
func configPath(where string, item bool, tok string) string {
	switch {
	case item:
		return where + "[" + tok + "]"
	case !configName.MatchString(tok):
		return where + "[" + configClip(strconv.Quote(tok), 64) + "]"
	case len(tok) > 64:
		tok = configClip(tok, 64)
	case where == "":
		return tok
	}
	return where + "." + tok
}

// closestKey is the one of known that key most likely misspells: the
// same but for letter case, the start of the other or the other's start
// (of 3 letters or more), or else the closest within an edit distance of
// 2; "" if none is.
func closestKey(key string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if strings.EqualFold(k, key) || (len(key) >= 3 && len(k) >= 3 && (strings.HasPrefix(k, key) || strings.HasPrefix(key, k))) {
			return k
		}
		if d := editDistance(key, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	if len(a) > 100 || len(b) > 100 {
		return max(len(a), len(b))
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// checkConfigTools says which of the tools of root are not among tools,
// at their keys. A name the schema refuses is left to it.
func checkConfigTools(root *yamlpos.Node, tools []string) []configProblem {
	n := root.Get("tools")
	if n == nil || n.Kind != yamlpos.Object {
		return nil
	}
	known := slices.Sorted(slices.Values(tools))
	known = slices.Compact(known)
	var problems []configProblem
	for i, name := range n.Keys {
		if slices.Contains(known, name) || !toolName.MatchString(name) {
			continue
		}
		list := "it has none"
		if len(known) > 0 {
			list = "it has " + strings.Join(known, ", ")
		}
		problems = append(problems, configAt(n.Vals[i], true, fmt.Sprintf("%s: not a tool of the toolkit; %s", configWhere("tools", n, name), list)))
	}
	return problems
}

// toolNamePattern is what a tool's name in a configuration is.
const toolNamePattern = `^[A-Za-z0-9_-]{1,64}$`

var toolName = regexp.MustCompile(toolNamePattern)

// checkConfigPrompts checks each prompt template of root that is a
// string the schema admits: it parses, and runs on its PromptSamples data
// with tools, the toolkit's tools (a run's plan prompt is given those the
// configuration enables), with missingkey=error and within the bounds of a
// rendering. A problem is at the prompt's key.
func checkConfigPrompts(root *yamlpos.Node, tools []string) []configProblem {
	n := root.Get("prompts")
	if n == nil || n.Kind != yamlpos.Object {
		return nil
	}
	samples := PromptSamples(sampleTools(tools))
	var problems []configProblem
	for i, name := range n.Keys {
		v := n.Vals[i]
		data, ok := samples[name]
		if !ok || v.Kind != yamlpos.String || utf8.RuneCountInString(v.Text) > 10000 {
			continue // the schema's to report
		}
		if msg := checkPrompt(name, v.Text, data); msg != "" {
			problems = append(problems, configAt(v, true, "prompts."+name+": "+msg))
		}
	}
	return problems
}

// templateLocation matches the start of text/template's errors:
// "template: name:line:col: " (col only when executing), and the
// "executing "name" " after it.
var templateLocation = regexp.MustCompile(`^template: [^:]*:(\d+)(?::(\d+))?: (?:executing "[^"]*" )?`)

// checkPrompt says what is wrong with the template text named name, run
// on data, or "".
func checkPrompt(name, text string, data any) string {
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return "the template does not parse: " + templateMessage(err)
	}
	if n, why := unboundedNode(t); n != nil {
		loc, _ := t.ErrorContext(n) // name:line:col
		parts := strings.Split(loc, ":")
		return fmt.Sprintf("line %s of the template: %s", parts[max(len(parts)-2, 0)], why)
	} else if why != "" {
		return why
	}
	if err := runPrompt(t, io.Discard, data); err != nil {
		if bound := promptBound(err); bound != nil {
			return "on sample data, " + bound.Error()
		}
		return fmt.Sprintf("the template fails on sample data: %s (its data has %s)", templateMessage(err), fieldList(data))
	}
	return ""
}

// templateMessage is the message of a text/template error with its
// location in the template in words.
func templateMessage(err error) string {
	msg := err.Error()
	m := templateLocation.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	where := "line " + m[1]
	if m[2] != "" {
		where += ", column " + m[2]
	}
	return where + " of the template: " + msg[len(m[0]):]
}

// fieldList names the fields of a struct, as a template refers to them:
// .Goal, .Tools.
func fieldList(data any) string {
	t := reflect.TypeOf(data)
	if t == nil || t.Kind() != reflect.Struct {
		return "no fields"
	}
	var fields []string
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() {
			fields = append(fields, "."+f.Name)
		}
	}
	return strings.Join(fields, ", ")
}
