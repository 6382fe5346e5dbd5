package inputjson

import (
	"encoding/json"
	"fmt"
)

// SliceOf returns a function that decodes a JSON array, each element with
// dec, for element types encoding/json cannot fill by itself (the sealed
// interfaces of a oneOf). Empty data and null decode to nil. An element's
// error is returned with its index in front: "[2]: ...".
func SliceOf[T any](dec func([]byte) (T, error)) func([]byte) ([]T, error) {
	return func(data []byte) ([]T, error) {
		if len(data) == 0 {
			return nil, nil
		}
		var raws []json.RawMessage
		if err := json.Unmarshal(data, &raws); err != nil {
			return nil, err
		}
		if raws == nil {
			return nil, nil
		}
		out := make([]T, len(raws))
		for i, raw := range raws {
			v, err := dec(raw)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = v
		}
		return out, nil
	}
}

// MapOf returns a function that decodes a JSON object into a map, each value
// with dec, for value types encoding/json cannot fill by itself (the sealed
// interfaces of a oneOf). Empty data and null decode to nil. A value's error
// is returned with its quoted key in front: "\"k\": ...".
func MapOf[T any](dec func([]byte) (T, error)) func([]byte) (map[string]T, error) {
	return func(data []byte) (map[string]T, error) {
		if len(data) == 0 {
			return nil, nil
		}
		var raws map[string]json.RawMessage
		if err := json.Unmarshal(data, &raws); err != nil {
			return nil, err
		}
		if raws == nil {
			return nil, nil
		}
		out := make(map[string]T, len(raws))
		for k, raw := range raws {
			v, err := dec(raw)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", k, err)
			}
			out[k] = v
		}
		return out, nil
	}
}
