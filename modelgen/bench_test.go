package modelgen

import (
	"fmt"
	"go/format"
	"os"
	"strings"
	"testing"
	"time"
)

// largeSpec returns a generated spec of 50 actors. Each actor owns 11
// properties (550 in all) of assorted types, observes itself, and sees 5 of
// the next actor's properties and 3 of the one after (950 observation
// properties); it dispatches 5 inputs (250 in all). 20 $defs types
// include enums, oneOfs and allOf.
func largeSpec() []byte {
	const actors = 50
	var b strings.Builder
	b.WriteString("version: 1\npackage: example.com/bench/large\nactors:\n")
	for i := range actors {
		fmt.Fprintf(&b, "  - actor-%d\n", i)
	}
	b.WriteString("$defs:\n")
	for i := range 5 {
		fmt.Fprintf(&b, "  Status%d: {type: string, enum: [idle, busy, done, failed]}\n", i)
		fmt.Fprintf(&b, `  Item%d:
    type: object
    properties:
      id: {type: string}
      title: {type: string, maxLength: 200}
      status: {$ref: "#/$defs/Status%d"}
      tags: {type: array, items: {type: string}}
      meta: {type: object, additionalProperties: {type: string}}
      score: {type: [number, "null"]}
    required: [id, title, status, tags]
`, i, i)
		fmt.Fprintf(&b, `  Event%d:
    oneOf:
      - type: object
        properties: {kind: {const: started}, at: {type: integer}}
        required: [kind, at]
      - type: object
        properties: {kind: {const: stopped}, at: {type: integer}, reason: {type: string}}
        required: [kind, at]
`, i)
		fmt.Fprintf(&b, `  Tagged%d:
    allOf: [{$ref: "#/$defs/Item%d"}]
    properties: {label: {type: string}}
`, i, i)
	}
	propType := func(k, i int) string {
		switch k % 6 {
		case 0:
			return "{type: string}"
		case 1:
			return "{type: integer, minimum: 0}"
		case 2:
			return fmt.Sprintf(`{type: array, items: {$ref: "#/$defs/Item%d"}}`, i%5)
		case 3:
			return fmt.Sprintf(`{type: object, additionalProperties: {$ref: "#/$defs/Event%d"}}`, i%5)
		case 4:
			return "{type: [boolean, \"null\"]}"
		}
		return fmt.Sprintf(`{$ref: "#/$defs/Tagged%d"}`, i%5)
	}
	b.WriteString("observations:\n")
	for i := range actors {
		fmt.Fprintf(&b, "  actor-%d:\n", i)
		for _, t := range []struct{ target, props int }{{i, 11}, {(i + 1) % actors, 5}, {(i + 2) % actors, 3}} {
			fmt.Fprintf(&b, "    actor-%d:\n", t.target)
			for k := range t.props {
				fmt.Fprintf(&b, "      a%dp%d: %s\n", t.target, k, propType(k, t.target))
			}
		}
	}
	b.WriteString("inputs:\n")
	for i := range actors {
		fmt.Fprintf(&b, "  actor-%d:\n", i)
		for j := range 5 {
			fmt.Fprintf(&b, `    do-%d-%d:
      type: object
      properties:
        at: {type: integer}
        note: {type: string}
        item: {$ref: "#/$defs/Item%d"}
        event: {$ref: "#/$defs/Event%d"}
      required: [at, item]
`, i, j, j, j)
		}
	}
	return []byte(b.String())
}

func TestLargeSpec(t *testing.T) {
	m, err := loadBytes("large.yaml", largeSpec())
	if err != nil {
		t.Fatal(err)
	}
	props := 0
	for _, o := range m.Observations {
		props += len(o.Fields)
	}
	if len(m.Actors) < 50 || props < 500 || len(m.Inputs) < 200 {
		t.Fatalf("large spec has %d actors, %d observation properties, %d inputs; want at least 50, 500, 200", len(m.Actors), props, len(m.Inputs))
	}
	if _, err := generateModel(m); err != nil {
		t.Fatal(err)
	}
}

func benchSpecs(b *testing.B) map[string][]byte {
	starter, err := os.ReadFile("testdata/starter/agent.yaml")
	if err != nil {
		b.Fatal(err)
	}
	return map[string][]byte{"small": starter, "large": largeSpec()}
}

// BenchmarkGenerate measures the whole pipeline, from spec bytes to
// formatted files: parsing, schema validation, model checks, derivation and
// emission (gofmt included). out-bytes is the size of the generated code.
//
// After each run, outside the timer, it also formats the output once more
// with go/format.Source alone, and reports the ratio of the two times as
// x-format: interleaving both keeps the ratio steady on a busy machine,
// where BenchmarkGenerate and BenchmarkFormatSource run minutes apart.
func BenchmarkGenerate(b *testing.B) {
	specs := benchSpecs(b)
	for _, name := range []string{"small", "large"} {
		spec := specs[name]
		b.Run(name, func(b *testing.B) {
			size := 0
			var gen, fmtOnly time.Duration
			for b.Loop() {
				start := time.Now()
				m, err := loadBytes("agent.yaml", spec)
				if err != nil {
					b.Fatal(err)
				}
				out, err := generateModel(m)
				if err != nil {
					b.Fatal(err)
				}
				gen += time.Since(start)
				b.StopTimer()
				start = time.Now()
				size = 0
				for _, f := range out.Files {
					size += len(f.Data)
					if _, err := format.Source(f.Data); err != nil {
						b.Fatal(err)
					}
				}
				fmtOnly += time.Since(start)
				b.StartTimer()
			}
			b.SetBytes(int64(size))
			b.ReportMetric(float64(size), "out-bytes")
			b.ReportMetric(float64(gen)/float64(fmtOnly), "x-format")
		})
	}
}

// BenchmarkFormatSource measures go/format.Source alone on the code
// BenchmarkGenerate produces, so that the cost of generation can be read
// as a multiple of the cost of formatting.
func BenchmarkFormatSource(b *testing.B) {
	specs := benchSpecs(b)
	for _, name := range []string{"small", "large"} {
		m, err := loadBytes("agent.yaml", specs[name])
		if err != nil {
			b.Fatal(err)
		}
		out, err := generateModel(m)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			size := 0
			for _, f := range out.Files {
				size += len(f.Data)
			}
			for b.Loop() {
				for _, f := range out.Files {
					if _, err := format.Source(f.Data); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.SetBytes(int64(size))
			b.ReportMetric(float64(size), "out-bytes")
		})
	}
}
