// Package modelgen reads an agent spec, checks it, derives the agent's model
// and generates its Go code: the declarations (the decl/ package), and the
// glue of impl/ with stubs for the code written by hand. The agentgen
// command (github.com/moora-go/moora/cmd/agentgen) is a thin shell around
// it: each of its commands calls one function of this package and prints
// the Report it returns.
//
// # The API
//
// Each function runs the whole pipeline for one task on a spec file (or a
// directory, for Init), and returns a Report of what it found and did:
//
//	Load      read, validate and derive the model; count it (agentgen validate)
//	Graph     Load, then draw the actor graph (agentgen graph)
//	Generate  write decl/, the glue of impl/, missing stubs and the history
//	          beside the spec; with Options.Prune, move orphans (agentgen generate)
//	Check     what Generate would change, what impl/ holds that the build
//	          fails on, the changes of data shapes and the migrations still
//	          to write; it writes nothing (agentgen check)
//	Init      a new agent that runs: the starter, or the agent of a spec of
//	          one's own, with a go.mod when there is none (agentgen init)
//	Schema    the JSON Schema of the spec format (agentgen schema)
//
// Options carry what the flags of the commands say (Strict, Amend, Prune,
// Against, TypeCheck, Format), InitOptions those of init. A Report is plain
// data: its Status (StatusUpToDate, StatusDrift, StatusInvalid,
// StatusError), the Diagnostics of the spec, the files written or
// differing, the changes of data shapes, the findings in impl/ and the
// migrations to write, each with its position. A run that fails returns its
// Report too, and an error that says why in one sentence.
//
// # The model
//
// An agent is a set of actors: the participants it must reason about (user,
// llm, toolkit, task-manager). An observation XObY is what actor X sees of
// actor Y: a set of properties, each a slice of Y's state. From the
// observations modelgen derives
//
//   - StateOf(Y): the union of the properties of all observations of Y (the
//     incoming edges of Y);
//   - ContextOf(X): the union of the properties of all observations by X
//     (the outgoing edges of X);
//   - AgentState: the union of all actor states, which is also the union of
//     all contexts.
//
// A property name names one piece of state owned by one actor: two
// observations of the same target may share a property only with the same
// schema, and a property may not be observed on two different targets.
// Each actor dispatches inputs; an actor's transition sees only its own
// inputs and state. Effects are not part of the model: each actor's effect
// gets its context and a dispatch of AgentInput, each actor's jobs function
// gets its context and says which keyed jobs (LLM calls, tool calls) it calls
// for, and both are injected when the agent is created.
//
// # Stages
//
// Every function first loads the spec, in stages that turn a file into a
// model, each handing plain data to the next:
//
//  1. parse: YAML (with github.com/goccy/go-yaml) or JSON (*.json, with
//     encoding/json's tokenizer) into a tree that keeps the line and column
//     of every key and value; syntax errors, duplicate and empty keys are
//     errors at their line and column;
//  2. validate: the tree against the spec's JSON Schema (Schema,
//     produced from the Spec types with invopop/jsonschema) with
//     santhosh-tekuri/jsonschema/v5; every leaf error is reported, at the
//     position of the offending key or value, with a "did you mean" for
//     misspelled keys. A schema's validity does not depend on where it
//     is, so each distinct schema is validated once and its errors are
//     reported wherever it occurs;
//  3. check and derive: the spec types into the model: types resolved,
//     model rules checked, StateOf/ContextOf/AgentState derived, every Go
//     identifier chosen and checked for clashes, the JSON Schema of the
//     inputs compiled as generated code compiles it, and the methodology's
//     lint run.
//
// Generate and Check then go on with the same stages:
//
//  4. history: read the spec's history file and plan its versions (a new
//     one when the data shapes changed); a spec without one is refused when
//     a renamed spec's history is beside it, or when decl/version.go says
//     decl/ was generated from a later version than 1;
//  5. scan: read the hand-written code of impl/ with go/parser, and the
//     migrations impl/migrations declares;
//  6. generate: run the printers on the model (decl/, the glue and missing
//     stubs of impl/, the history and the packages of earlier versions) into
//     files in memory, gofmt'ed and byte-identical across runs;
//  7. Generate writes them (all or nothing) and, with Prune, moves the
//     orphans; Check compares them with the disk, scans the migrations and,
//     when the files are up to date, type-checks decl/ and impl/, and
//     every package of the module that imports decl (the program that
//     injects the effects and jobs), tests included, with the go command
//     (Report.TypeChecked lists those).
//
// The model is the only input of a printer; the impl/ printer also takes
// what the scan found of the hand-written code, so that it creates stubs
// only for functions that are nowhere yet.
//
// Each stage is a package under modelgen/internal, and this package is the
// entry point that runs them in order:
//
//	spec       bytes -> positioned tree -> Spec; the spec schema and its
//	           validation; Diagnostic (stages 1 and 2). Knows nothing of Go.
//	model      Spec -> Model, the IR: stage 3, every Go identifier a printer
//	           prints (StateOfX, ContextOfX, InputFromX, ...) chosen once,
//	           and the checks that need Go names.
//	versions   the history file and the plan of versions (stage 4).
//	evolve     the changes of data shapes between two specs.
//	implscan   the hand-written code of impl/, read with go/parser (stage 5).
//	gen        File, Output, Generator; the printers below it print a Model
//	           and build no names: gen/decl, gen/impl (glue and stubs),
//	           gen/migrations (history, earlier versions, migration stubs),
//	           gen/graph (stage 6).
//	sync       Plan, Write (all or nothing), Compare, Prune (stage 7).
//	typecheck  decl/, impl/ and the packages that import decl type-checked
//	           with the go command (stage 7).
//	names      the case conversions and did-you-mean suggestions.
//
// # Spec format (version 1)
//
// One file, YAML or JSON, encoded in UTF-8 (a byte order mark at its start
// is allowed and ignored; a byte that is not UTF-8 is an error at its
// position, in both syntaxes). Its numbers are those a float64 holds: one
// beyond its range (1e400), or so close to 0 that it would read as 0
// (1e-400), is an error at its position. Top-level keys (no others are accepted):
//
//	version: 1                      # required
//	package: example.com/agent      # optional Go import path of the spec's directory
//	actors: [user, llm]             # required, kebab-case names
//	$defs: {Name: schema, ...}      # shared types by PascalCase name
//	observations:                   # observer -> target -> property -> schema
//	  user: {llm: {reply: {type: string}}}
//	inputs:                         # actor -> input name -> object schema
//	  user: {ask: {type: object, properties: {prompt: {type: string}}}}
//
// observations.user.llm is UserObLlm, what user sees of llm. An input's
// kebab-case name is its "type" discriminator, so input names are unique
// across actors. A name (of an actor, an input, a $defs type or a
// property) is at most 64 characters long: Go names and file names are
// made of names (impl/transitions/<actor>_<input>.go), and a file name
// may have at most 255 bytes; a longer name is an error at its position. A property is referred to by {$ref: "#/$defs/Name"}.
// description is allowed on every schema and becomes the Go doc comment, so
// it holds no control characters but tabs and line breaks, and no byte
// order mark.
//
// When package is absent, Load derives it from the nearest enclosing go.mod:
// its module path joined with the spec directory's path inside the module.
// Either way the path must be one the go command accepts
// (golang.org/x/mod/module.CheckImportPath): a spec in a directory named
// "My Agent", "Café" or "a@b" is an error, as its generated code could not
// be built there.
// Loading needs no package path; Generate and Check do, and fail when there
// is none.
//
// Editors that speak the YAML language server protocol check and complete a
// spec that starts with
//
//	# yaml-language-server: $schema=./agent.schema.json
//
// with the spec format's JSON Schema saved beside it: agentgen init writes
// both, and agentgen schema > agent.schema.json saves the schema for a spec
// of your own. (The schema's $id names where this repository keeps it,
// modelgen/agent.schema.json, for when the module is published.)
//
// # Supported JSON Schema and the type mapping
//
// Schemas are a subset of JSON Schema draft 2020-12. The keywords and what
// they become in Go:
//
//	type: string                     string
//	type: integer                    int64
//	type: number                     float64
//	type: boolean                    bool
//	type: array, items: S            []S
//	type: object, properties: ...    a struct, fields in the order written
//	type: object, additionalProperties: S   map[string]S
//	enum: [a, b] (strings)           a named string type, one constant per
//	                                 value (TypeA, TypeB) and a Valid method
//	$ref: "#/$defs/Name"             the named type Name
//	allOf: [objects or $refs]        one struct with the merged properties,
//	                                 members first, then the properties beside
//	                                 allOf; required lists are merged
//	oneOf: [objects]                 a sealed interface; each variant is a
//	                                 struct with a const string property (the
//	                                 discriminator, the same name in every
//	                                 variant) that its JSON always carries
//	const: "x" (on a property)       no field: the value is written on
//	                                 encoding; the property must be required
//	type: [T, "null"]                nullable T (see below)
//
// The type of a schema without "type" is inferred from properties,
// required or additionalProperties (object), items (array) and enum
// (string). description becomes documentation, and default is documented
// ("Default: ...") but not applied. The validation keywords minimum,
// maximum, exclusiveMinimum, exclusiveMaximum, multipleOf (numbers),
// minLength, maxLength, pattern, format (strings), minItems, maxItems,
// uniqueItems (arrays) and minProperties, maxProperties (objects) do not
// change the Go types; generated code checks them when it decodes an input
// (see DecodeInput below). A pattern must be a Go regular expression; a
// format must be one the validator knows (date-time, email, uri, uuid, ...).
// additionalProperties: false is carried into that validation too, and
// without it an input's objects are closed all the same: a property that
// the schema does not declare is refused with its location ("/bogus: a
// property the spec does not declare"; an HTTP bridge answers 400), not
// dropped; additionalProperties: true opens an input or an object of one
// (what it holds beyond its properties is then dropped as it decodes).
// readOnly: true, allowed only on a top-level property of an input
// (inputs.<actor>.<input>.properties.<name>, not one an allOf member
// declares too), marks one the server assigns in the agent's admission step
// (a timestamp): the Go type is unchanged, DecodeInput (which the journal
// reads with) still requires it, and DecodeClientInput, for what clients
// send, accepts it absent and drops what a client sends for it, so that the
// input reaches admission with the zero value there, which admission must
// replace when the property is required. Adding or removing readOnly is not
// a change of the spec's shapes: the history keeps the version's number.
//
// Required, optional and nullable:
//
//	                 required             optional (not in required)
//	T                T                    *T with omitempty
//	[T, "null"]      *T (nil is null)     *T with omitempty (null and absent
//	                                      both decode to nil)
//	slice or map     []T, nil encodes []  []T with omitzero: nil is absent,
//	                 in inputs and $defs  empty is present and empty
//	oneOf            I (nil is invalid)   I with omitempty
//
// A nullable enum ({type: [string, "null"], enum: [a, b]}) is a pointer to
// the enum type, and null is one of its values: the schema generated code
// validates inputs with lists null in its enum (JSON Schema would otherwise
// reject the null that a nil pointer encodes as).
//
// Properties of observations (and so of states and contexts) are always
// present; make them nullable when they may be null. A slice or map needs no
// pointer: nil is its null or absent value. Inline objects, enums and oneOfs
// become named types: the owner's name and the property's (TaskStatus for
// Task.status), "Item" for array items, "Value" for map values, the oneOf's
// name and the discriminator value for inline variants (ShapeCircle).
//
// Anything else is an error that names the keyword and where it is, never
// silently dropped or turned into any: anyOf, not, if/then/else,
// patternProperties, prefixItems, title, examples, $id, nested $defs, ...;
// enums of non-strings; an array without items; an object with both
// properties and an additionalProperties schema; a schema whose type cannot
// be told; a keyword that does not fit the type (minLength on an integer);
// a nullable $ref, oneOf or $defs type; a $ref anywhere but "#/$defs/Name".
//
// # Checks
//
// Besides the schema, a spec must satisfy these rules; each failure is
// reported with the position, the spec element and a hint:
//
//   - observations and inputs name declared actors ("did you mean"); when
//     such an unknown name is likely a misspelling of a declared actor that
//     is used nowhere, that actor's entry in actors is reported too;
//   - actors are listed once; input names are unique across actors;
//   - a property is observed on one target only, and with one schema;
//   - every $ref resolves (each copy of an observed property reports its
//     own; copies that differ only there do not differ in schema); $defs types do not contain themselves by value
//     ($ref, allOf or required-property cycles; an optional property, an
//     array or a map breaks the cycle);
//   - required names declared properties; enum values are distinct and can
//     name Go constants; allOf members are objects whose shared properties
//     agree, and additionalProperties: false in a member does not reject
//     the merged properties; oneOf variants are objects with one common
//     const string property with distinct values;
//   - some value satisfies every schema, wherever it is (observed
//     properties, inputs, $defs, and the properties, items, map values and
//     allOf and oneOf members inside them): no lower bound above its upper
//     bound (minimum 10 with maximum 1; exclusiveMinimum 5 with maximum 5;
//     minLength, minItems or minProperties above its max), no integer
//     range without an int64 in it (minimum 1.2 with maximum 1.8; minimum
//     1e19), no more required properties than maxProperties, no
//     minProperties above the properties additionalProperties: false
//     allows, no range without a multiple of multipleOf (multipleOf 10
//     with minimum 1 and maximum 9), no minItems with uniqueItems above
//     the number of values the items allow (3 booleans), no empty enum, no
//     enum value that its own minLength, maxLength or pattern rules out,
//     and no pattern that matches no string, or none that minLength,
//     maxLength or format allows (pattern '^a$' with maxLength 0; format
//     date with pattern '^x$'). Numbers are compared exactly as written; a
//     pattern is analysed only as far as that is certain, and what the
//     analysis cannot tell is accepted. Each is an error, not a warning,
//     at the keyword written last of those that contradict each other (or
//     at the enum value): generated code would reject every value, so
//     that an input could never be dispatched, and the fix is always in
//     the spec;
//   - an input is an object, never nullable (a $ref input names an object
//     type), and does not declare the property "type";
//   - no two spec elements map to the same Go identifier (userId and
//     user_id; a $defs type named StateOfUser), and no actor or input is
//     named so that generated code would use a Go keyword or a predeclared
//     identifier (func, close, string); no input has the Go name of an
//     actor (package transitions names a function after each of both).
//
// The methodology's review step is a lint, reported as warnings (errors in
// agentgen's --strict mode): an actor with state but no inputs to change it,
// an actor with inputs but no state, and an actor that observes nothing and
// is observed by nothing. Warnings are left out when there are errors.
//
// Limits keep a hostile spec from exhausting the loader: a spec file may
// have at most 256 KiB (262,144 bytes, two and a half times the large
// spec of BenchmarkGenerate, below, and twenty times the largest of this
// repository), checked before it is parsed, so that whatever it holds,
// loading it allocates less than 100 MB (TestSpecBombsInBoundedMemory); values may be
// nested at most 100 levels deep (objects and arrays, a schema's own
// nesting included); a spec may hold at most 50,000 values, counted after
// YAML aliases are expanded; and a YAML block mapping may have at most
// 1,000 entries (the YAML parser's time grows with the square of its
// entries; a flow mapping, {key: value, ...}, and JSON have no such
// limit). A file too large is an error at its first line, any other spec
// beyond a limit an error at the value that crosses it; in YAML the limits
// are checked on the lexer's tokens, before the parser sees them. A spec
// gets at most 100 diagnostics, the last saying when there
// are more. The worst spec within these limits (49,990 values, each of the
// wrong type) takes agentgen validate 0.4 s and 94 MB.
//
// Diagnostics print as "file:line:col: [warning: ]element: message[;
// hint]"; columns count characters. A YAML syntax error names the
// usual slips where it sees one: a tab in the indentation, a key indented
// one space off, a comma inside {…} that splits an unquoted value (YAML
// reads {description: Hello, world} as two entries, and a key without a
// colon is an error in a spec), a [ or { never closed, a value holding ": "
// unquoted.
//
// # Go names
//
// Names are PascalCase from kebab, snake or camel case: the actor
// task-manager gives ActorTaskManager, StateOfTaskManager and so on, and
// llm gives Llm (LLM is not one of Go's common initialisms). Struct fields
// use Go's common initialisms (id is ID, apiUrl is APIURL); JSON tags keep
// the spec's names. $defs names are used as written.
//
// # What is generated
//
// Package decl, in the directory decl/ beside the spec. Every file starts
// with the line "// Code generated by agentgen. DO NOT EDIT.", is gofmt'ed
// and is byte-identical from run to run.
//
//	actors.go        type Actor string, a constant per actor, Actors(), Valid
//	types.go         the $defs types (only when there are some)
//	observations.go  a struct per observation (UserObLlm) and the inline
//	                 types of observed properties
//	states.go        StateOfX per actor
//	contexts.go      ContextOfX per actor
//	inputs.go        InputFromX, a sealed interface per actor; a struct per
//	                 input with InputType, InputActor (the spec name of the
//	                 actor that dispatches it, which automata/httpbridge
//	                 checks against the actors its clients may play) and
//	                 MarshalJSON (which writes "type"), and WithTimestamp
//	                 when it has a required integer "timestamp"
//	                 (Timestamped is those inputs: an admission step
//	                 stamps them); DecodeInput, with a
//	                 decode function per input, and DecodeClientInput,
//	                 for what clients send (readOnly properties may be
//	                 absent)
//	inputschema.go   the JSON Schema of the inputs, and InputSchema(),
//	                 which returns it (each object's properties in the
//	                 order of the spec, for forms made from it)
//	helpers.go       per actor: InitialFnOfX = func() StateOfX,
//	                 TransitionFnOfX = func(StateOfX, InputFromX) StateOfX,
//	                 EffectFnOfX = automata.Effect[ContextOfX, AgentInput],
//	                 JobsFnOfX = func(view ContextOfX)
//	                 map[string]automata.Job[AgentInput]
//	version.go       SpecVersion, the spec's version in its history file
//	                 (written by Versions, below)
//	agent.go         AgentState with StateOfX(), ContextOfX() and
//	                 WithStateOfX(StateOfX) AgentState (a copy; the receiver
//	                 is not changed); AgentInput; EffectFns and JobFns, a
//	                 field per actor
//
// DecodeInput(data) reads the "type" of a JSON object, validates the object
// against that input's schema and decodes it. It fails, saying where, on
// empty data and on data that is not one JSON object, on an unknown type
// (listing the known ones), on every schema violation (with its location in
// the object), on a number too large for its Go type, and on a property that
// encoding/json would match in another case (naming that property). An
// integer may be written as JSON Schema allows, 1.0 and 1e3 too. The work is
// not in decl/: DecodeInput calls a Decoder of the run-time package
// github.com/moora-go/moora/automata/inputjson, built from the schema and
// the decode functions, which compiles the schema once, on first use.
//
// MarshalJSON and DecodeInput are a codec for AgentInput: the JSON of an
// input that DecodeInput returned decodes back to an equal value. So does
// the JSON of an input built in Go that satisfies its schema, with one
// exception: a nil slice or map in a required, non-nullable property of a
// struct type (the input's own, a $defs type's or an inline object's)
// encodes as [] or {} and decodes as an empty, non-nil one. (Strings that
// are not valid UTF-8 come back with U+FFFD for the bad bytes.) Structs
// that hold a oneOf, in inputs or in state, get an UnmarshalJSON, so state
// round-trips through JSON too, with the same exception inside the struct
// types it holds (the state's own nil slices and maps encode as null and
// stay nil). Slices and maps of sealed interfaces are decoded with
// inputjson.SliceOf and inputjson.MapOf.
//
// Only the input schemas are enforced at run time; state is what pure
// transitions made of validated inputs.
//
// Package impl/agent, generated beside decl/, puts the agent
// together. Its files carry the header too:
//
//	agent/initial.go      Initial(): AgentState from each actor's initial state
//	agent/transition.go   Transition(state, input): a type switch on
//	                      InputFromX, applying actor X's transition to
//	                      StateOfX() and writing it back with WithStateOfX
//	agent/effect.go       WithEffects(EffectFns) and WithJobs(JobFns), each
//	                      an automata.Option: automata.Join of one
//	                      automata.WithActorEffect (WithActorJobs) per
//	                      non-nil function of an actor, in actor order, on
//	                      its ContextOfX (automata.Project, ProjectJobs);
//	                      an actor's job keys are prefixed with "<actor>/"
//	agent/create.go       Definition() (for automata and automata/journal),
//	                      Create(fns, opts...) *Machine: automata.NewMoore
//	                      with the state as output and WithEffects(fns)
//	                      before opts; Machine, the running agent's type
//	agent/versions.go     Versions(), the spec's version history as
//	                      package automata/migrate reads it; Definition
//	                      carries it (generated by Versions, below)
//	agent/fuzz.gen_test.go  FuzzTransitions, the model-based test of the
//	                      agent (package agent_test; see "Model-based
//	                      tests", below)
//
// A spec that names a TypeScript module (typescript: web/agent.ts, a path
// inside the spec's directory) gets its types there too, for the browser,
// owned and checked like the Go: the $defs and inline types, each
// observation, StateOfX and ContextOfX, AgentState, each input (with its
// "type" literal) and Client<Input>, the input as a client posts it
// (without its readOnly properties), the inputs of each actor as a union
// (InputFromX, ClientInputFromX), AgentInput, and the actors, the input
// names and specVersion as constants. Enums are unions of string literals,
// oneOfs unions of their variants, maps Record<string, T>, nullable values
// "| null", optional properties optional; integers are number, with
// "An integer." and the schema's constraints in the doc comment.
//
// And two more files in the packages of hand-written code:
// impl/transitions/transitions.gen.go declares each actor's transition (a
// decl.TransitionFnOfX routing each input to the function of that input)
// and impl/initials/initials.gen.go the package doc; both assert the
// signatures of the hand-written functions at compile time.
//
// # Model-based tests
//
// impl/agent/fuzz.gen_test.go declares FuzzTransitions, a Go fuzz target
// that checks the laws of the method on the agent's machine. Package
// github.com/moora-go/moora/automata/modeltest does the work: it decodes
// the fuzzer's bytes into a sequence of up to 16 valid inputs, each of a
// type the bytes choose among every actor's inputs and drawn from the
// input's JSON Schema (decl.InputSchema: enums, consts, bounds, lengths,
// patterns, formats, required and optional properties, nullable types,
// nested objects, arrays and maps, allOf, oneOf, $refs), kept when
// decl.DecodeInput accepts it. It applies the sequence with Initial and
// Transition, twice, and fails on the first law broken: a panic; an input
// that changes the state of an actor other than the one that dispatched
// it (compared as each actor's StateOfX, in JSON); a state whose JSON does
// not decode and encode back to the same bytes; an error of
// invariants.Check; a second run that computes another state at some
// position. invariants.Admit runs before each input, as the agent's
// admission step: an input it rejects is skipped, not a failure. A stub
// still panicking "not implemented" skips the sequence. The failure names
// the law and the input after which it broke, and prints the shortest
// part of the sequence that still breaks it, one input a line
// ("2 user {"type":"send-user-message",...}"); go's fuzzer minimises the
// bytes and saves them under impl/agent/testdata/fuzz/FuzzTransitions,
// where every go test runs them again. Run it with
//
//	go test -run '^$' -fuzz FuzzTransitions -fuzztime 30s ./impl/agent
//
// A plain go test runs its seed corpus (the empty sequence, and each input
// type once) in milliseconds. The file also declares transitionsModel(),
// the model it checks, so that a test of yours replays a printed sequence:
// modeltest.Run(transitionsModel(), seq), with seq read by
// modeltest.ReadSequence(text, decl.DecodeInput). TestFuzzTargetFindsSeededBugs
// seeds four bugs into a generated agent (a transition that writes into
// another actor's state, one that reads the clock, one that panics on an
// empty list, a false invariant) and finds each within seconds.
//
// Package impl/invariants is yours, created once as two stubs that accept
// everything, each in its own file and each only while the package
// declares no function of its name:
//
//	impl/invariants/check.go   func Check(state decl.AgentState) error
//	impl/invariants/admit.go   func Admit(state decl.AgentState, input decl.AgentInput) (decl.AgentInput, error)
//
// Check returns the invariant the state breaks (a reply answers a message
// that was sent; a counter is never negative), Admit what the agent's
// admission refuses, deterministically: derive a time from the state,
// never from the clock.
//
// # Hand-written code
//
// A person writes these functions: per actor, its initial state in
// impl/initials/<actor>.go, and per input, its transition in
// impl/transitions/<actor>_<input>.go; a finding of kind signature says
// how one declared otherwise must be declared. (Spec names are kebab-case,
// so the underscore separates actor and input; an input named test or like
// a GOOS or GOARCH gets _input added, so that the go command builds the
// file everywhere.) Generate
// creates a stub for each that is missing, from the text/template sources
// of package github.com/moora-go/moora/templates: a stub compiles, panics
// "not implemented: <actor>/<input>" (or "not implemented: initial state
// of <actor>"), and is never written again. The scan of impl/ reads it with
// go/parser only, never type-checking it (Check type-checks with the go
// command, as a separate stage), and reports orphans, wrong signatures,
// unparsable files and stubs still panicking, each with its position (the
// Findings of a Report); Options.Prune moves the orphans to impl/_pruned
// (PrunedDir), which the go command ignores, but never a file that
// declares something the rest of its package uses. Init writes a new
// agent: the starter, its code written out instead of stubs, or the agent
// of a spec of one's own, with a stub for every function.
//
// Who owns what:
//
//	decl/                               generated, rewritten freely
//	impl/agent/*.go                     generated: Initial, Transition,
//	                                    WithEffects, WithJobs, Definition and
//	                                    Create (createAgent)
//	impl/initials/initials.gen.go       generated: compile-time signature checks
//	impl/transitions/transitions.gen.go generated: each actor's transition, a
//	                                    type switch over its inputs
//	impl/agent/versions.go              generated: Versions, the spec's
//	                                    version history for the journal
//	agent.history.json                  generated: the spec's versions
//	decl/v<N>/                          generated: version N's declarations,
//	                                    for the migrations that read it
//	impl/initials/<actor>.go            yours: the actor's initial state
//	impl/transitions/<actor>_<input>.go yours: the transition of one input
//	impl/migrations/v<N>_to_v<N+1>.go   yours: the migrations of a breaking
//	                                    change, from version N to N+1
//	impl/agent/fuzz.gen_test.go         generated: FuzzTransitions
//	impl/invariants/{check,admit}.go    yours: the invariants and the
//	                                    admission of FuzzTransitions
//
// Generated files start with "// Code generated by agentgen. DO NOT EDIT."
// Yours never do: agentgen creates each of them once, as a stub that
// compiles and panics "not implemented: <actor>/<input>" (or "not
// implemented: initial state of <actor>"), or, in impl/invariants, that
// accepts everything, and never writes to it again.
// File names are the spec's kebab-case names as written, joined by an
// underscore (user_send-user-message.go); when an input's name would make
// the go command read the file as a test or as built for one system only
// (test, linux, amd64, ...), _input is added (user_test_input.go). Function
// names are the Go names: func User() decl.StateOfUser in
// impl/initials/user.go, func SendUserMessage(state decl.StateOfUser, input
// decl.SendUserMessage) decl.StateOfUser in
// impl/transitions/user_send-user-message.go. A function may move to any
// file of its package: no stub is created while the package declares it.
//
// Generate reads your code with go/parser only, never type-checking it, so
// code that does not compile never stops generation (Check type-checks it
// too). It reports, each as "file:line:col: message":
//
//   - an orphan: a file that declares none of the spec's functions but an
//     initial state or a transition for an actor or input the spec no
//     longer has (an exported func() decl.StateOfX or func(decl.StateOfX,
//     decl.T) decl.StateOfX where decl no longer declares StateOfX or T),
//     because it was removed or renamed. A helper that takes or returns a
//     state of the spec is no orphan. It is left in place; generate --prune
//     moves it to impl/_pruned/<package>/ beside the spec (a directory the go
//     command ignores, so the build works again), numbering the name if one
//     is already there, unless another file of its package (tests
//     included) uses a name it declares: then moving it would break the
//     build, and agentgen says what to move by hand;
//   - a wrong signature: a function declared other than the glue calls it,
//     or a stub's file that no longer declares its function (an input
//     renamed in the spec and the file name, but not yet in the code).
//     agentgen does not edit it, and says what the declaration must be;
//   - a file that does not parse; its package gets no new stubs until it
//     does, since a function behind the syntax error would be declared
//     twice;
//   - a stub that still panics "not implemented", as a warning;
//   - a property of an input that the input's transition never reads (no
//     input.Field names it, and the transition does not pass its input on
//     whole), as a warning at the transition with the property's place in
//     the spec: what is sent for it is validated and journaled, and never
//     reaches the state (a new required property the transition ignores is
//     stored as its zero value in the journal and nowhere else). A
//     property kept for the journal only is said so in the transition:
//     _ = input.Field.
//
// # Versions and migrations
//
// A durable agent's journal holds inputs and states in the shapes of the
// spec that wrote them, so the spec's data shapes are versioned. The
// history file beside the spec (agent.history.json beside
// agent.yaml) holds every version's spec, oldest first, numbered from 1, as
// indented JSON, one value a line, so that a new version is a diff of added
// lines; it is owned by agentgen (its first member, "//", is the generated
// header). Generate and Check read it and compare its newest version with
// the spec: when their data shapes differ, the spec is a new version (or,
// with Options.Amend, replaces the newest). Each difference is classified
// (a ShapeChange: the input or the state, a JSON Pointer inside it, what
// changed, the old and new shape, and where in the spec) as breaking for
// replay or compatible:
//
//	compatible   new optional property, new input type, input moved to another
//	             actor, property no longer required, nullable now, integer to
//	             number, enum value or oneOf variant added, constraint removed
//	             or loosened; for the state, a new state property, and a new
//	             optional property inside one (which an old snapshot decodes
//	             through as it is)
//	breaking     new required property, removed property or input type,
//	             property now required, type changed, no longer nullable, enum
//	             value or oneOf variant removed, constraint added or tightened,
//	             const changed, additionalProperties: false added; for the
//	             state, a removed state property and any other change inside
//	             one
//
// Descriptions, defaults and the names of $defs types are not data shapes:
// changing them makes no new version (the newest version's text is
// replaced). The state's validation keywords are not enforced at run time,
// and their changes are not reported.
//
// Generate writes what a new version needs: the history file; for each
// step with a breaking change, the older version's declarations as package
// vN in decl/vN (the newer one's too, or, while it is the spec's version,
// decl/vN with type aliases of decl, so that a migration written against it
// keeps compiling when a newer version arrives), where each type that did
// not change in the next version is an alias of that version's (so a type
// unchanged since version 1 is one Go type; unions, their variants and
// inputs are always a version's own); impl/agent/versions.go; and
// impl/migrations/conversions.go (owned), the conversion of the state and of
// each input changed in a breaking way, field by field:
//
//	func ConvertAgentStateFromV<N>(old vN.AgentState) vN+1.AgentState
//	func Convert<Input>FromV<N>(old vN.<Input>) vN+1.<Input>
//
// A property the same in both versions is assigned; a struct, slice, map,
// pointer or oneOf of changed types is converted element by element; an
// integer becomes a number, a value a pointer (optional or nullable now),
// an enum the newer enum (when it has every old value) or a string. Each
// property it cannot convert is a function a person writes, which the
// conversion calls, with a stub written once, not owned, in
// impl/migrations/vN_to_vN+1.go:
//
//	func <Struct><Property>FromV<N>(old vN.<Struct>) <the property's type>   a new required property; a changed type; an enum value or variant removed; a narrowed constraint
//	func <Input>FromV<N>(old vN.<Input>) vN+1.AgentInput                      an input type removed: nil drops it
//
// A property removed and one added that the old one converts to are
// offered as a rename: the stub returns the old value, with a paragraph
// asking for review. A property removed otherwise is not carried over (the
// conversion's doc says so). A migration of a whole input or of the whole
// state written in impl/migrations (func <Input>FromV<N>(old vN.<Input>)
// vN+1.<Input>, func AgentStateFromV<N>(old vN.AgentState) vN+1.AgentState)
// is used instead of the conversion; generate then writes no stub for it.
//
// A compatible change of the state needs nothing written. A step whose
// state changed only by new optional properties inside state properties and
// values added to enums needs no conversion: no old value has them, so
// impl/agent/versions.go decodes a snapshot of the older version into the
// newer version's state as it is (absent, nil). One whose values became
// nullable or optional, numbers or strings, or whose oneOfs gained a
// variant, is converted (gob drops a zero value, which a pointer decoded as
// it is would lose; a list or map nullable now is kept empty, not null).
// One with a new state property (a new actor or observation) is replayed
// over, as only a replay computes its value; AgentStateFromV<N>, when
// written, is used instead, which a compacted journal needs, and Generate
// says so. The Migrations of a Report are those still missing or stubs.
//
// A spec without its history file is version 1 of a new history, unless
// Generate and Check can tell that it is not: another spec's history is
// beside it (the spec was renamed: rename its history too), or decl/
// declares a later SpecVersion (the history was deleted: restore it). Both
// are errors, as journals of the lost versions would be read as version 1.
// A spec changed while no agent ran it (a first draft, an input renamed
// before any deploy) needs no migration: Generate with Options.Amend (agentgen generate --amend) replaces the
// newest version instead of adding one. Use it only then: a journal written
// under the version it replaces is read as the new one, which is what the
// migrations exist to prevent.
//
// # Files on disk
//
// A generated file is either owned (it carries the header; rewritten when
// its bytes change, deleted when no longer generated) or not (created once
// when missing and then left alone: a stub for hand-written code). Generate
// changes only files whose bytes differ, deletes owned .go files directly
// in a generator's directories (decl, impl/agent, impl/initials,
// impl/transitions; never in their subdirectories) that it no longer
// produces, and makes all changes or none. Check reports modified (with a
// unified diff), missing and extra files. A file at the path of an owned
// file that does not carry the header was written by a person: Generate
// and Check fail rather than overwrite it.
//
// # Performance
//
// BenchmarkGenerate runs the whole pipeline, from spec bytes to formatted
// files, on the starter spec (small) and on a generated spec of 50 actors,
// 950 observation properties and 250 inputs (large). BenchmarkFormatSource
// runs go/format.Source alone on the same output. BenchmarkGenerate also
// formats its output once more with go/format.Source alone after each run
// (outside its timer) and reports the ratio of the two as x-format: the
// cost of generating in units of formatting, steady even on a busy machine.
// Measured with
//
//	go test ./modelgen -run '^$' -bench 'Generate|FormatSource' -benchmem -count 5 -cpu 1,2
//
// on a 2-core AMD EPYC VM (linux/amd64, Go 1.26), otherwise idle (load
// average 1.5); medians of 5:
//
//	                       ns/op        out-bytes  x-format  B/op        allocs/op
//	Generate/small         1.54 ms      12127      3.11      0.84 MB     15.2 k
//	Generate/small-2       1.40 ms      12127      2.85      0.84 MB     15.2 k
//	Generate/large         110 ms       899518     2.37      70.1 MB     1.34 M
//	Generate/large-2       79.3 ms      899518     1.76      70.1 MB     1.34 M
//	FormatSource/small     0.49 ms      12127                0.22 MB     3.8 k
//	FormatSource/small-2   0.45 ms      12127                0.22 MB     3.8 k
//	FormatSource/large     46.9 ms      899518               18.7 MB     310 k
//	FormatSource/large-2   47.7 ms      899518               18.8 MB     310 k
//
// With both cores the large spec generates in 1.76 times (1.73 to 1.81 over
// the five runs) the time format.Source alone takes on its output, within
// the target of 2. Run alternately with the pipeline before its load was
// made faster (the input schema document written by an encoder of its own
// and checked from its tree, spec strings quoted without encoding/json),
// the large spec took 1.79 to 1.94 times formatting against 1.91 to 2.03.
// The target needs the second core, and so the pipeline keeps two places
// where independent work runs side by side: the model checks beside schema
// validation in the loader, and the files of decl/ rendered and formatted
// concurrently. Built without them and run alternately with the pipeline
// as it is, the large spec took 2.5 to 2.7 times formatting with both
// cores, against 1.8 to 2.0 with them; on one core (-cpu 1) it takes about
// 2.4 times. Formatting is about half of generation; parsing YAML
// (github.com/goccy/go-yaml, about a fifth of the total), rendering with
// jennifer and building the model are most of the rest. The small spec's
// fixed costs (compiling the input schemas, the first use of each
// template) weigh more against its short output: it generates in about 3
// times formatting.
// Schema validation is done once per distinct schema (see "Stages"), and
// The loader compiles the input schemas once per distinct input schema,
// concurrently: the large spec's 250 inputs have 5 distinct schemas.
//
// # What it is not
//
// modelgen does not run agents, and the code it generates has no behaviour
// beyond JSON encoding, input validation and routing inputs to their
// actors: initial states, transitions, effects and jobs are written by hand
// (package automata runs them). It does not
// accept arbitrary JSON Schema: a schema it cannot map to Go types exactly
// is an error.
package modelgen
