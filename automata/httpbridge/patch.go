package httpbridge

import "github.com/moora-go/moora/automata/internal/jsonpatch"

// op is one JSON Patch operation of a delta.
type op = jsonpatch.Op

// diff returns the JSON Patch from old to next, at a cost that follows the
// change (jsonpatch.Diff).
func diff[T any](old, next T) ([]op, error) { return jsonpatch.Diff(old, next) }
