package inputjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// benchInputs are the shapes of input the benchmarks decode, each of about
// n elements.
var benchInputs = []struct {
	name string
	make func(n int) []byte
}{
	{"array", func(n int) []byte { // n children
		items := make([]string, n)
		for i := range items {
			items[i] = `{"name":"c","weight":` + strconv.Itoa(i) + `}`
		}
		return treeInput(`{"name":"r","children":[` + strings.Join(items, ",") + `]}`)
	}},
	{"object", func(n int) []byte { // n labels
		labels := make([]string, n)
		for i := range labels {
			labels[i] = `"k` + strconv.Itoa(i) + `":"v"`
		}
		return treeInput(`{"name":"r","labels":{` + strings.Join(labels, ",") + `}}`)
	}},
	{"string", func(n int) []byte { // a name of 20n bytes, a tenth of them escaped
		return treeInput(`{"name":"` + strings.Repeat(`abcdefghijklmnopq\"\n`, n) + `"}`)
	}},
	{"integers", func(n int) []byte { // n weights written with an exponent
		items := make([]string, n)
		for i := range items {
			items[i] = `{"name":"c","weight":` + strconv.Itoa(i) + `.0e1}`
		}
		return treeInput(`{"name":"r","children":[` + strings.Join(items, ",") + `]}`)
	}},
	{"forest", func(n int) []byte { // n/30 chains of 30 nodes, 60 levels deep
		items := make([]string, max(n/30, 1))
		for i := range items {
			items[i] = chain(30)
		}
		return treeInput(`{"name":"r","children":[` + strings.Join(items, ",") + `]}`)
	}},
}

// BenchmarkDecode decodes inputs of each shape, of n, 10n and 100n
// elements; time and memory per byte stay the same. The largest are over
// the default MaxBytes, which the benchmark raises.
func BenchmarkDecode(b *testing.B) {
	for _, in := range benchInputs {
		for _, n := range []int{1000, 10000, 100000} {
			data := in.make(n)
			b.Run(fmt.Sprintf("%s/n=%d", in.name, n), func(b *testing.B) {
				d := benchDecoder()
				if _, err := d.Decode(data); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				for b.Loop() {
					d.Decode(data)
				}
			})
		}
	}
}

// BenchmarkDecodeDepth decodes one chain of nodes, deeper and deeper. The
// two deepest are over the default MaxDepth, which the benchmark raises:
// their cost per byte grows with depth, the validator's (see Limits).
func BenchmarkDecodeDepth(b *testing.B) {
	for _, n := range []int{3, 30, 300, 3000} {
		data := treeInput(chain(n))
		b.Run(fmt.Sprintf("levels=%d", 2*n), func(b *testing.B) {
			d := benchDecoder()
			if _, err := d.Decode(data); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				d.Decode(data)
			}
		})
	}
}

// BenchmarkDecodeNumbers decodes n integers written with as many characters
// and as large an exponent as Decode allows; the schema validator reads
// each (they are integers, but too large for an int64, so Decode fails
// after validating them).
func BenchmarkDecodeNumbers(b *testing.B) {
	number := "9." + strings.Repeat("9", maxNumberLen-7) + "e1000"
	for _, n := range []int{10, 100, 1000} {
		items := make([]string, n)
		for i := range items {
			items[i] = `{"name":"c","weight":` + number + `}`
		}
		data := treeInput(`{"name":"r","children":[` + strings.Join(items, ",") + `]}`)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			d := benchDecoder()
			if _, err := d.Decode(data); err == nil || !strings.Contains(err.Error(), "does not fit in a Go int64") {
				b.Fatalf("Decode: %v, want a number that does not fit", err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				d.Decode(data)
			}
		})
	}
}

// BenchmarkRefuse decodes inputs over the limits: refusing them costs
// nothing (bytes, depth) or a parse (a number).
func BenchmarkRefuse(b *testing.B) {
	exponents := make([]string, 30000)
	for i := range exponents {
		exponents[i] = `{"name":"c","weight":1e999999}`
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"over-MaxBytes/100MB", bytes.Repeat([]byte(" "), 100<<20)},
		{"over-MaxDepth/1MB", bytes.Repeat([]byte("["), 1<<20)},
		{"exponents/1MB", treeInput(`{"name":"r","children":[` + strings.Join(exponents, ",") + `]}`)},
		{"digits/1MB", treeInput(`{"name":"r","weight":` + strings.Repeat("7", 1<<20-100) + `}`)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if _, err := treeDecoder.Decode(tc.data); err == nil {
				b.Fatal("Decode succeeded")
			}
			b.ReportAllocs()
			for b.Loop() {
				treeDecoder.Decode(tc.data)
			}
		})
	}
}

// BenchmarkDeeperThan scans 1 MiB for nesting: mostly strings, or mostly
// brackets.
func BenchmarkDeeperThan(b *testing.B) {
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"strings", sized(1 << 20)},
		{"brackets", bytes.Repeat([]byte("[[]]"), 1<<18)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.data)))
			for b.Loop() {
				deeperThan(tc.data, defaultMaxDepth)
			}
		})
	}
}

// benchDecoder returns the Decoder of tree inputs, with limits raised above
// every benchmark's input, and without the fast path: the benchmarks that
// use it measure the validator's, which every input can take.
func benchDecoder() *Decoder[input] {
	d := treeDecoder.WithLimits(Limits{MaxBytes: 1 << 30, MaxDepth: 10000})
	d.fast = nil
	return d
}

// BenchmarkDecodeFast decodes the inputs of BenchmarkDecode that the fast
// path takes, of n, 10n and 100n elements: as the validator's, its time and
// memory per byte stay the same.
func BenchmarkDecodeFast(b *testing.B) {
	for _, in := range benchInputs {
		if in.name == "object" || in.name == "integers" {
			continue // a map of over maxFastMapKeys keys; integers to rewrite
		}
		for _, n := range []int{1000, 10000, 100000} {
			data := in.make(n)
			b.Run(fmt.Sprintf("%s/n=%d", in.name, n), func(b *testing.B) {
				d := treeDecoder.WithLimits(Limits{MaxBytes: 1 << 30, MaxDepth: 10000})
				if _, ok := d.decodeFast(data); !ok {
					b.Fatal("not taken on the fast path")
				}
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				for b.Loop() {
					d.Decode(data)
				}
			})
		}
	}
}

// BenchmarkValidateClosed validates inputs of each shape, of n = 1,000
// elements, with the schema as the spec wrote it (open) and as Decode
// validates it (closed: an undeclared property refused), so that what
// closing costs is a ratio within one run.
func BenchmarkValidateClosed(b *testing.B) {
	schemas, err := benchDecoder().schemas()
	if err != nil {
		b.Fatal(err)
	}
	for _, in := range benchInputs {
		var doc any
		dec := json.NewDecoder(bytes.NewReader(in.make(1000)))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			b.Fatal(err)
		}
		for _, v := range []struct {
			name string
			s    *jsonschema.Schema
		}{{"open", schemas["tree"].open}, {"closed", schemas["tree"].closed}} {
			b.Run(in.name+"/"+v.name, func(b *testing.B) {
				for b.Loop() {
					if err := v.s.Validate(doc); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
