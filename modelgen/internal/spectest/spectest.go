// Package spectest is what the tests of the version history, of the
// migrations generator and of the classification of changes share: a spec
// to start from, edits of it, and the model the loader makes of a spec.
package spectest

import (
	"strings"
	"testing"

	"github.com/moora-go/moora/modelgen/internal/model"
	"github.com/moora-go/moora/modelgen/internal/spec"
)

// Package is the import path every model of the tests is generated under.
const Package = "example.com/agent"

// Base is version 1 of the spec the tests start from: two actors that
// observe a draft of the user's, and three inputs.
const Base = `version: 1
actors: [user, llm]
observations:
  user:
    user: {draft: {type: string}}
  llm:
    user: {draft: {type: string}}
inputs:
  user:
    send-user-message:
      type: object
      description: Sends a message.
      properties: {id: {type: string}, content: {type: string}}
      required: [id, content]
  llm:
    send-assi-message:
      type: object
      properties: {id: {type: string}, content: {type: string}}
      required: [id, content]
    think:
      type: object
      properties: {thought: {type: string}}
      required: [thought]
`

// Edit returns text with each pair of old, new replaced once; it fails the
// test when an old text is not there, so that a case cannot silently test
// the text it started from.
func Edit(t testing.TB, text string, pairs ...string) string {
	t.Helper()
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(text, pairs[i]) {
			t.Fatalf("edit: %q is not in the spec", pairs[i])
		}
		text = strings.Replace(text, pairs[i], pairs[i+1], 1)
	}
	return text
}

// Build returns the model of the spec text, named name, as modelgen's
// loader makes it: parse, validate, decode, build; in Package. It fails the
// test when the spec is not valid.
func Build(t testing.TB, name, text string) *model.Model {
	t.Helper()
	root, err := spec.Parse(name, []byte(text))
	if err != nil {
		t.Fatalf("parsing %s: %v", name, err)
	}
	src := spec.NewSource(name, root)
	ds, err := spec.Validate(src)
	if err != nil {
		t.Fatalf("validating %s: %v", name, err)
	}
	if len(ds) > 0 {
		t.Fatalf("%s is not a valid spec:\n%v", name, ds)
	}
	sp, err := spec.Decode(root)
	if err != nil {
		t.Fatalf("decoding %s: %v", name, err)
	}
	m, err := model.Build(src, sp)
	if err != nil {
		t.Fatalf("building %s: %v", name, err)
	}
	m.Package = Package
	return m
}
