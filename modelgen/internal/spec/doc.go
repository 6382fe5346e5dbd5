// Package spec is the front end of modelgen: it owns the spec format and
// everything that turns the bytes of a spec file into a Spec.
//
//   - Parse reads YAML (with github.com/goccy/go-yaml) or JSON (with
//     encoding/json's tokenizer) into a tree of Nodes that keeps the line
//     and column of every key and value; syntax errors, bad UTF-8,
//     duplicate and empty keys, and documents deeper than MaxDepth or
//     larger than MaxNodes values are Diagnostics at their position, as is
//     a YAML block mapping of more than MaxBlockEntries; a document of more
//     than MaxBytes is one at its first line, before it is parsed (the
//     steps of reading YAML that the ReAct example's configuration reader
//     takes too, the token limits, positions and syntax errors, are
//     package internal/yamlpos);
//   - Validate checks the tree against the JSON Schema of the spec format
//     (FormatSchema, reflected from the Spec types by ReflectSchema) and
//     reports every leaf error at the offending key or value;
//   - Decode turns a valid tree into the Spec types;
//   - Source finds values and their positions by JSON Pointer, and Diags
//     collects Diagnostics against it for the later stages.
//
// It knows nothing of Go: which Go identifiers a spec becomes, and the
// checks that need them, belong to package model.
package spec
