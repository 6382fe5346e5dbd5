package journal

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/moora-go/moora/automata/internal/jsonvalid"
)

// Codec turns inputs and states into bytes and back. Decoding must accept
// exactly what encoding produced; replay depends on it.
type Codec[S, I any] interface {
	EncodeInput(I) ([]byte, error)
	DecodeInput([]byte) (I, error)
	EncodeState(S) ([]byte, error)
	DecodeState([]byte) (S, error)
}

// JSON is a Codec that writes inputs and states with encoding/json and reads
// inputs with decodeInput, or with encoding/json when it is nil. For a
// generated agent, pass decl.DecodeInput: the inputs are an interface, and
// their JSON carries the "type" discriminator that DecodeInput reads (and
// validates against the input's schema).
func JSON[S, I any](decodeInput func([]byte) (I, error)) Codec[S, I] {
	return jsonCodec[S, I]{decodeInput}
}

type jsonCodec[S, I any] struct {
	decodeInput func([]byte) (I, error)
}

// EncodeInput writes in as json.Marshal does. An input that is a
// json.Marshaler (a generated input writes its "type" so) is written by its
// MarshalJSON, called once, whose output Marshal would check and compact
// at encoding/json's pace: when it is already as Marshal would write it (a
// generated input's, which MarshalJSON makes with json.Marshal, is), it is
// taken as it is; otherwise it is compacted and escaped as Marshal does, and
// an error is Marshal's.
func (c jsonCodec[S, I]) EncodeInput(in I) ([]byte, error) {
	m, ok := any(in).(json.Marshaler)
	if !ok || nilPointer(m) {
		return json.Marshal(in)
	}
	data, err := m.MarshalJSON()
	if err == nil && jsonvalid.Marshaled(data) {
		return bytes.Clone(data), nil // Marshal copies it too
	}
	if err == nil {
		var compact bytes.Buffer
		if err = json.Compact(&compact, data); err == nil {
			var escaped bytes.Buffer
			json.HTMLEscape(&escaped, compact.Bytes())
			return escaped.Bytes(), nil
		}
	}
	return nil, &json.MarshalerError{Type: reflect.TypeOf(m), Err: err}
}

// nilPointer reports whether v holds a nil pointer, which json.Marshal
// writes as null without calling its MarshalJSON.
func nilPointer(v any) bool {
	r := reflect.ValueOf(v)
	return r.Kind() == reflect.Pointer && r.IsNil()
}

func (c jsonCodec[S, I]) DecodeInput(data []byte) (I, error) {
	if c.decodeInput != nil {
		return c.decodeInput(data)
	}
	var in I
	return in, strictUnmarshal(data, &in)
}

func (c jsonCodec[S, I]) EncodeState(s S) ([]byte, error) { return json.Marshal(s) }

func (c jsonCodec[S, I]) DecodeState(data []byte) (S, error) {
	var s S
	return s, strictUnmarshal(data, &s)
}

// strictUnmarshal is json.Unmarshal, which already rejects anything after
// the value; a json.Decoder would buffer a large state twice over.
func strictUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// JSONGob is a Codec that journals inputs as JSON, like JSON, and snapshots
// the state with encoding/gob. The journal stays readable and validated on
// the way back (pass decl.DecodeInput); the snapshots decode about nine
// times faster than JSON (118 MB of starter-model state: 1.6 s as JSON,
// 0.18 s as gob), which is what Open spends its time on.
//
// gob needs the concrete types behind interface-typed fields of the state
// registered with gob.Register before the first snapshot; gob also does not
// tell a nil slice or map from an empty one, so a restored state holds nil
// where the live one held an empty value.
func JSONGob[S, I any](decodeInput func([]byte) (I, error)) Codec[S, I] {
	return gobStateCodec[S, I]{jsonCodec[S, I]{decodeInput}}
}

type gobStateCodec[S, I any] struct{ jsonCodec[S, I] }

func (gobStateCodec[S, I]) EncodeState(s S) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&s); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (gobStateCodec[S, I]) DecodeState(data []byte) (S, error) {
	var s S
	r := bytes.NewReader(data)
	if err := gob.NewDecoder(r).Decode(&s); err != nil {
		return s, err
	}
	if r.Len() > 0 {
		return s, fmt.Errorf("%d bytes of trailing data after the state", r.Len())
	}
	return s, nil
}

// EncodeStateValue and DecodeStateValue write and read states of any type
// as EncodeState and DecodeState do theirs (migrate.StateCodec): how a
// snapshot of an earlier version of the spec is read into that version's
// state, for its migration.
func (c jsonCodec[S, I]) EncodeStateValue(state any) ([]byte, error) { return json.Marshal(state) }

// DecodeStateValue decodes into ptr, a pointer to a state of any type.
func (c jsonCodec[S, I]) DecodeStateValue(data []byte, ptr any) error {
	return strictUnmarshal(data, ptr)
}

// EncodeStateValue is EncodeState for a state of any type.
func (gobStateCodec[S, I]) EncodeStateValue(state any) ([]byte, error) {
	var buf bytes.Buffer
	// EncodeState encodes a pointer to the state, which gob writes as the
	// value: the bytes are the same.
	if err := gob.NewEncoder(&buf).Encode(state); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DecodeStateValue is DecodeState into ptr, a pointer to a state of any
// type.
func (gobStateCodec[S, I]) DecodeStateValue(data []byte, ptr any) error {
	r := bytes.NewReader(data)
	if err := gob.NewDecoder(r).Decode(ptr); err != nil {
		return err
	}
	if r.Len() > 0 {
		return fmt.Errorf("%d bytes of trailing data after the state", r.Len())
	}
	return nil
}
