// Package schemaerr says what is wrong with a value a JSON Schema refused:
// each leaf of the validation error, "location: message", sorted and
// without repeats, for an error message that names where and what.
package schemaerr

import (
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Leaves returns the leaf causes of ve as "location: message" (the
// location "/" for the whole value), sorted, each once.
func Leaves(ve *jsonschema.ValidationError) []string {
	var problems []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := e.InstanceLocation
			if loc == "" {
				loc = "/"
			}
			problems = append(problems, loc+": "+e.Message)
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.Sort(problems)
	return slices.Compact(problems)
}
