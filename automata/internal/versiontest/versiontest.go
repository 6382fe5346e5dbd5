// Package versiontest is a small agent at two versions of its spec, for
// the tests of the packages that read a journal across versions (devpanel,
// httpbridge). Package journal's own suite (internal/storetest) has one of
// its own.
package versiontest

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/migrate"
)

// A small agent at two versions of its spec, as agentgen generates one
// (automata/journal/internal/storetest/versions.go has the journal's own):
// inputs carry their "type"; version 2 renames the note's property note to
// text and adds by, removes the input ping, and keeps notes as entries
// (dropping the count of pings).
type (
	Input interface{ InputType() string }

	NoteV1 struct {
		ID   string `json:"id"`
		Note string `json:"note"`
	}
	PingV1  struct{}
	StateV1 struct {
		Notes []string `json:"notes"`
		Pings int      `json:"pings"`
	}

	NoteV2 struct {
		ID   string `json:"id"`
		Text string `json:"text"`
		By   string `json:"by"`
	}
	EntryV2 struct {
		ID   string `json:"id"`
		Text string `json:"text"`
		By   string `json:"by"`
	}
	StateV2 struct {
		Entries []EntryV2 `json:"entries"`
	}
)

func (NoteV1) InputType() string { return "note" }
func (PingV1) InputType() string { return "ping" }
func (NoteV2) InputType() string { return "note" }

func (n NoteV1) MarshalJSON() ([]byte, error) {
	type plain NoteV1
	return json.Marshal(struct {
		Type string `json:"type"`
		plain
	}{"note", plain(n)})
}

func (PingV1) MarshalJSON() ([]byte, error) { return []byte(`{"type":"ping"}`), nil }

func (n NoteV2) MarshalJSON() ([]byte, error) {
	type plain NoteV2
	return json.Marshal(struct {
		Type string `json:"type"`
		plain
	}{"note", plain(n)})
}

// DecodeStrict decodes the properties of data but "type" into v, refusing
// unknown ones and missing required ones, as a generated DecodeInput
// validates against the input's schema.
func DecodeStrict(data []byte, v any, required ...string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	for _, r := range required {
		if _, ok := m[r]; !ok {
			return fmt.Errorf("missing property %q", r)
		}
	}
	delete(m, "type")
	rest, _ := json.Marshal(m)
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func DecodeV1(data []byte) (Input, error) {
	typ, err := migrate.InputType(data)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "note":
		var n struct {
			ID   string `json:"id"`
			Note string `json:"note"`
		}
		if err := DecodeStrict(data, &n, "id", "note"); err != nil {
			return nil, err
		}
		return NoteV1(n), nil
	case "ping":
		return PingV1{}, DecodeStrict(data, &struct{}{})
	}
	return nil, fmt.Errorf("unknown input type %q", typ)
}

func DecodeV2(data []byte) (Input, error) {
	typ, err := migrate.InputType(data)
	if err != nil {
		return nil, err
	}
	if typ != "note" {
		return nil, fmt.Errorf("unknown input type %q (want note)", typ)
	}
	var n struct {
		ID   string `json:"id"`
		Text string `json:"text"`
		By   string `json:"by"`
	}
	if err := DecodeStrict(data, &n, "id", "text", "by"); err != nil {
		return nil, err
	}
	return NoteV2(n), nil
}

var ModelV1 = automata.Definition[StateV1, Input]{
	Initial: func() StateV1 { return StateV1{} },
	Transition: func(s StateV1, in Input) StateV1 {
		switch in := in.(type) {
		case NoteV1:
			s.Notes = automata.Append(s.Notes, in.Note)
		case PingV1:
			s.Pings++
		}
		return s
	},
}

// ModelV2 is version 2, with its history: the note of version 1 migrated
// (by "user"), the ping dropped, and the state migrated (the ids are not in
// the state of version 1: they are n1, n2, ... in the order of the notes).
func ModelV2() automata.Definition[StateV2, Input] {
	decode := func(data []byte) (any, error) { return DecodeV1(data) }
	step := migrate.Step{
		Inputs: map[string]migrate.Input{
			"note": {Decode: decode, Migrate: func(in any) any { n := in.(NoteV1); return NoteV2{ID: n.ID, Text: n.Note, By: "user"} }},
			"ping": {Decode: decode, Migrate: func(any) any { return nil }},
		},
		StateChanged: true,
		State: &migrate.State{
			New: func() any { return new(StateV1) },
			Migrate: func(p any) any {
				var s StateV2
				for i, n := range p.(*StateV1).Notes {
					s.Entries = append(s.Entries, EntryV2{ID: fmt.Sprint("n", i+1), Text: n, By: "user"})
				}
				return s
			},
		},
	}
	return automata.Definition[StateV2, Input]{
		Initial: func() StateV2 { return StateV2{} },
		Transition: func(s StateV2, in Input) StateV2 {
			s.Entries = automata.Append(s.Entries, EntryV2(in.(NoteV2))) // a ping here would panic
			return s
		},
		Versions: &migrate.History{Current: 2, Steps: []migrate.Step{step}},
	}
}

// History is version 2's history, which ModelV2 carries.
func History() *migrate.History { return ModelV2().Versions }
