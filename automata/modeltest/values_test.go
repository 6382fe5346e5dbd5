package modeltest

import (
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"testing"

	persistent "github.com/moora-go/moora/automata/agents/persistent/decl"
	reflexor "github.com/moora-go/moora/automata/agents/reflexor/decl"
	starter "github.com/moora-go/moora/decl"
	react "github.com/moora-go/moora/examples/react/decl"
)

// TestDrawnInputsAreValid draws inputs of the agents of this repository
// from random bytes: every input type must come out valid (DecodeInput
// accepts it) in most draws, or the fuzz targets would never test it.
func TestDrawnInputsAreValid(t *testing.T) {
	agents := []struct {
		name   string
		schema []byte
		decode func([]byte) error
	}{
		{"starter", starter.InputSchema(), func(b []byte) error { _, err := starter.DecodeInput(b); return err }},
		{"reflexor", reflexor.InputSchema(), func(b []byte) error { _, err := reflexor.DecodeInput(b); return err }},
		{"persistent", persistent.InputSchema(), func(b []byte) error { _, err := persistent.DecodeInput(b); return err }},
		{"react", react.InputSchema(), func(b []byte) error { _, err := react.DecodeInput(b); return err }},
	}
	for _, a := range agents {
		t.Run(a.name, func(t *testing.T) {
			var doc schemaDoc
			if err := json.Unmarshal(a.schema, &doc); err != nil {
				t.Fatal(err)
			}
			g := &generator{doc: &doc, patterns: map[string]*regexp.Regexp{}}
			r := rand.New(rand.NewPCG(1, 2))
			for name, s := range doc.Inputs {
				valid := 0
				const draws = 200
				for range draws {
					data := make([]byte, r.IntN(64))
					for i := range data {
						data[i] = byte(r.Uint32())
					}
					v, err := g.value(&source{data: data}, s, 0)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					raw, _ := json.Marshal(v)
					if err := a.decode(raw); err != nil {
						t.Logf("%s: %v\n%s", name, err, raw)
						continue
					}
					valid++
				}
				if valid < draws*9/10 {
					t.Errorf("%s: %d of %d drawn inputs are valid", name, valid, draws)
				}
			}
		})
	}
}
