package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
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

func (c jsonCodec[S, I]) EncodeInput(in I) ([]byte, error) { return json.Marshal(in) }

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

func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}
