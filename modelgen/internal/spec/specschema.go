package spec

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"

	invopop "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// specSchemaJSON is the JSON Schema of the spec format. It is produced from
// the spec types by ReflectSchema; TestSpecSchemaIsCurrent keeps the
// committed file equal to a fresh reflection (go test ./modelgen -update
// rewrites it). It is a file, not a reflection at run time, because the
// descriptions come from the doc comments in spec.go, which a binary does not
// carry.
//
//go:embed agent.schema.json
var specSchemaJSON []byte

// FormatSchemaURL is where editors can find the spec schema; the committed
// copy lives at modelgen/agent.schema.json in the repository.
const FormatSchemaURL = "https://raw.githubusercontent.com/moora-go/moora/main/modelgen/agent.schema.json"

// FormatSchema returns the JSON Schema of the spec format, for editors
// ("# yaml-language-server: $schema=...") and for agentgen schema.
func FormatSchema() []byte { return bytes.Clone(specSchemaJSON) }

// ReflectSchema produces the spec schema from the spec types. comment
// returns the doc comment of a type (field "") or of one of its fields.
func ReflectSchema(comment func(t reflect.Type, field string) string) ([]byte, error) {
	r := &invopop.Reflector{
		ExpandedStruct: true,
		Anonymous:      true,
		LookupComment:  comment,
		Mapper: func(t reflect.Type) *invopop.Schema {
			if t == reflect.TypeFor[json.Number]() {
				return &invopop.Schema{Type: "number"}
			}
			return nil
		},
	}
	s := r.Reflect(&Spec{})
	s.Title = "agentgen spec (version 1)"
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("encoding the spec schema: %w", err)
	}
	return buf.Bytes(), nil
}

const specSchemaResource = "https://moora-go.invalid/agentgen/agent.schema.json"

// specSchemas compiles the spec schema and its schema of one schema
// ($defs/Schema) once.
var specSchemas = sync.OnceValues(func() ([2]*jsonschema.Schema, error) {
	var out [2]*jsonschema.Schema
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource(specSchemaResource, bytes.NewReader(specSchemaJSON)); err != nil {
		return out, fmt.Errorf("loading the spec schema: %w", err)
	}
	for i, url := range []string{specSchemaResource, specSchemaResource + "#/$defs/Schema"} {
		s, err := c.Compile(url)
		if err != nil {
			return out, fmt.Errorf("compiling the spec schema: %w", err)
		}
		out[i] = s
	}
	return out, nil
})

func compiledSpecSchema() (*jsonschema.Schema, error) {
	s, err := specSchemas()
	return s[0], err
}

func compiledSchemaSchema() (*jsonschema.Schema, error) {
	s, err := specSchemas()
	return s[1], err
}

// specSchemaDoc is the spec schema as generic JSON, to look up the keys a
// failing keyword allows.
var specSchemaDoc = sync.OnceValue(func() any {
	var v any
	if err := json.Unmarshal(specSchemaJSON, &v); err != nil {
		panic(fmt.Sprintf("modelgen: embedded spec schema: %v", err))
	}
	return v
})

// schemaAt returns the value at a JSON Pointer in the spec schema.
func schemaAt(ptr string) any {
	v := specSchemaDoc()
	for _, p := range SplitPointer(ptr) {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// fragment returns the JSON Pointer fragment of an absolute keyword location.
func fragment(loc string) string {
	if i := strings.IndexByte(loc, '#'); i >= 0 {
		return loc[i+1:]
	}
	return ""
}
