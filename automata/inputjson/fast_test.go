package inputjson_test

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	persistent "github.com/moora-go/moora/automata/agents/persistent/decl"
	reflexor "github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/inputjson"
	chattest "github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/modeltest"
	starter "github.com/moora-go/moora/decl"
	react "github.com/moora-go/moora/examples/react/decl"
	allof "github.com/moora-go/moora/modelgen/testdata/allof/decl"
	maps_ "github.com/moora-go/moora/modelgen/testdata/maps/decl"
	names "github.com/moora-go/moora/modelgen/testdata/names/decl"
	oneof "github.com/moora-go/moora/modelgen/testdata/oneof/decl"
	optional "github.com/moora-go/moora/modelgen/testdata/optional-nullable/decl"
	threeactors "github.com/moora-go/moora/modelgen/testdata/three-actors/decl"
	validation "github.com/moora-go/moora/modelgen/testdata/validation-json/decl"
)

// declPackage is a generated decl package: its input schema and DecodeInput.
type declPackage struct {
	name   string
	schema []byte
	decode func([]byte) (modeltest.Input, error)
}

func pkg[I modeltest.Input](name string, schema []byte, decode func([]byte) (I, error)) declPackage {
	return declPackage{name, schema, func(data []byte) (modeltest.Input, error) {
		in, err := decode(data)
		if err != nil {
			return nil, err
		}
		return in, nil
	}}
}

var declPackages = []declPackage{
	pkg("starter", starter.InputSchema(), starter.DecodeInput),
	pkg("chattest", chattest.InputSchema(), chattest.DecodeInput),
	pkg("persistent", persistent.InputSchema(), persistent.DecodeInput),
	pkg("reflexor", reflexor.InputSchema(), reflexor.DecodeInput),
	pkg("react", react.InputSchema(), react.DecodeInput),
	pkg("allof", allof.InputSchema(), allof.DecodeInput),
	pkg("maps", maps_.InputSchema(), maps_.DecodeInput),
	pkg("names", names.InputSchema(), names.DecodeInput),
	pkg("oneof", oneof.InputSchema(), oneof.DecodeInput),
	pkg("optional-nullable", optional.InputSchema(), optional.DecodeInput),
	pkg("three-actors", threeactors.InputSchema(), threeactors.DecodeInput),
	pkg("validation-json", validation.InputSchema(), validation.DecodeInput),
}

// differ compares Decode's two paths on one generated decl package: a
// Decoder of its schema whose decode function is the package's DecodeInput
// (so that the Go types, their tags and their UnmarshalJSON are the
// package's), on the fast path and on the validator's.
type differ struct {
	p       declPackage
	d       *inputjson.Decoder[modeltest.Input]
	model   modeltest.Model[struct{}, modeltest.Input]
	drawn   [][]byte       // the inputs that Sequence drew, valid
	fastBy  map[string]int // inputs taken on the fast path, by type
	checked int
}

func newDiffer(t testing.TB, p declPackage) *differ {
	var doc struct {
		Inputs map[string]json.RawMessage `json:"inputs"`
		Actors map[string][]string        `json:"actors"`
	}
	if err := json.Unmarshal(p.schema, &doc); err != nil {
		t.Fatal(err)
	}
	decoders := map[string]func([]byte) (modeltest.Input, error){}
	for typ := range doc.Inputs {
		decoders[typ] = p.decode
	}
	df := &differ{p: p, d: inputjson.NewDecoder(string(p.schema), decoders), fastBy: map[string]int{}}
	df.model = modeltest.Model[struct{}, modeltest.Input]{
		Initial:    func() struct{} { return struct{}{} },
		Transition: func(s struct{}, _ modeltest.Input) struct{} { return s },
		Schema:     p.schema,
		Decode: func(data []byte) (modeltest.Input, error) {
			df.drawn = append(df.drawn, data)
			return p.decode(data)
		},
	}
	for _, a := range slices.Sorted(maps.Keys(doc.Actors)) {
		df.model.Actors = append(df.model.Actors, modeltest.Actor[struct{}]{Name: a, State: func(struct{}) any { return nil }})
	}
	return df
}

// check decodes data on both paths: what the fast path takes, the
// validator must accept, decoded to the same value; and the package's
// DecodeInput must accept what the validator accepts, and only that.
func (df *differ) check(t testing.TB, data []byte) {
	t.Helper()
	df.checked++
	fast, ok := inputjson.DecodeFast(df.d, data)
	slow, err := inputjson.DecodeValidated(df.d, data)
	if ok {
		df.fastBy[fast.InputType()]++
		if err != nil {
			t.Fatalf("%s: the fast path took %s, which the validator refuses: %v", df.p.name, data, err)
		}
		// As JSON too: reflect.DeepEqual holds -0 and 0 equal.
		fastJSON, _ := json.Marshal(fast)
		slowJSON, _ := json.Marshal(slow)
		if !reflect.DeepEqual(fast, slow) || string(fastJSON) != string(slowJSON) {
			t.Fatalf("%s: %s decodes to %#v on the fast path, %#v on the validator's", df.p.name, data, fast, slow)
		}
	}
	got, gotErr := df.p.decode(data)
	if (gotErr == nil) != (err == nil) {
		t.Fatalf("%s: DecodeInput(%s) = %v, the validator's path: %v", df.p.name, data, gotErr, err)
	}
	if err == nil && !reflect.DeepEqual(got, slow) {
		t.Fatalf("%s: DecodeInput(%s) = %#v, the validator's path: %#v", df.p.name, data, got, slow)
	}
}

// variants returns data, an input, changed one place at a time: each
// value replaced by others of other types and forms (null, a string, an
// integer written 1.0, a long string, a number with an exponent, an
// escaped string, …), each key written in another case, a key added and a
// key written twice. Most are refused; some are valid another way.
func variants(t testing.TB, data []byte) [][]byte {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	replacements := []any{nil, true, "", "x", "\u00e9\t\"", strings.Repeat("y", 300),
		json.Number("0"), json.Number("-1"), json.Number("1.0"), json.Number("2.5"), json.Number("1e2"),
		json.Number("99999999999999999999"), json.Number("-130"), json.Number("131"),
		[]any{}, []any{"x"}, map[string]any{}}
	var out [][]byte
	emit := func() {
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	var walk func(v any, set func(any))
	walk = func(v any, set func(any)) {
		for _, r := range replacements {
			set(r)
			emit()
		}
		set(v)
		switch v := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				e := v[k]
				walk(e, func(r any) { v[k] = r })
				other := strings.ToUpper(k[:min(1, len(k))]) + k[min(1, len(k)):]
				if other == k {
					other = strings.ToLower(k)
				}
				if other != k {
					delete(v, k)
					v[other] = e
					emit()
					delete(v, other)
					v[k] = e
				}
			}
			v["zzUndeclared"] = "x"
			emit()
			delete(v, "zzUndeclared")
		case []any:
			for i, e := range v {
				walk(e, func(r any) { v[i] = r })
			}
		}
	}
	walk(doc, func(r any) { doc = r })
	// Written twice: the first key again, at the end of the object.
	if i := strings.IndexByte(string(data), ','); i > 0 && data[0] == '{' {
		out = append(out, []byte(string(data[:len(data)-1])+","+string(data[1:i])+"}"))
	}
	return out
}

// TestFastAgreesWithValidator draws inputs from the schema of each
// generated decl package of this repository, and compares Decode's two
// paths on each and on its variants. The starter agent's inputs are all
// taken on the fast path; validation-json's "register", whose schema has a
// pattern and formats, never.
func TestFastAgreesWithValidator(t *testing.T) {
	sequences := 6
	if testing.Short() {
		sequences = 2
	}
	for _, p := range declPackages {
		t.Run(p.name, func(t *testing.T) {
			df := newDiffer(t, p)
			rng := rand.New(rand.NewPCG(1, 2))
			for range sequences {
				src := make([]byte, 96)
				for i := range src {
					src[i] = byte(rng.Uint32())
				}
				if _, err := modeltest.Sequence(df.model, src); err != nil {
					t.Fatal(err)
				}
			}
			if len(df.drawn) == 0 {
				t.Fatal("no input drawn")
			}
			fastDrawn := 0
			for _, data := range df.drawn {
				before := sum(df.fastBy)
				df.check(t, data)
				fastDrawn += sum(df.fastBy) - before
				for _, v := range variants(t, data) {
					df.check(t, v)
				}
			}
			t.Logf("%d inputs drawn, %d fast; %d checked, %d fast %v", len(df.drawn), fastDrawn, df.checked, sum(df.fastBy), df.fastBy)
			switch p.name {
			case "starter", "chattest":
				if fastDrawn != len(df.drawn) {
					t.Errorf("%d of the %d inputs drawn were taken on the fast path, want all", fastDrawn, len(df.drawn))
				}
			case "validation-json":
				if df.fastBy["register"] != 0 || df.fastBy["set-status"] == 0 {
					t.Errorf("fast: %v, want set-status and no register", df.fastBy)
				}
			}
		})
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// FuzzFastAgreesWithValidator compares Decode's two paths on the fuzzer's
// bytes, as an input and as the source of a sequence of inputs drawn from
// the schemas of the generated decl packages.
func FuzzFastAgreesWithValidator(f *testing.F) {
	differs := make([]*differ, len(declPackages))
	for i, p := range declPackages {
		differs[i] = newDiffer(f, p)
	}
	f.Add([]byte{0, 1, 2, 3})
	for _, s := range []string{
		`{"type":"send-user-message","id":"a","content":"b","timestamp":1}`,
		`{"type":"send-user-message","id":"a","Content":"b","timestamp":1}`,
		`{"type":"send-user-message","id":"a","content":"\ud800","timestamp":1}`,
		`{"type":"send-user-message","id":"a","content":"b","timestamp":1.0}`,
		`{"type":"send-user-message","id":"a","content":"b","timestamp":1,"id":"c"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, df := range differs {
			df.check(t, data)
			df.drawn = df.drawn[:0]
			if _, err := modeltest.Sequence(df.model, data); err != nil {
				t.Fatal(err)
			}
			for _, in := range slices.Clone(df.drawn) {
				df.check(t, in)
			}
		}
	})
}

// BenchmarkStarterInput decodes an input of the starter agent (a chat
// message of 200 bytes) with its DecodeInput, taken on the fast path, and
// on the validator's path.
func BenchmarkStarterInput(b *testing.B) {
	data := []byte(`{"type":"send-user-message","id":"m-000042","content":"` + strings.Repeat("What is the weather in Paris? ", 6) + `","timestamp":1733212800000}`)
	df := newDiffer(b, declPackages[0])
	for _, path := range []struct {
		name   string
		decode func([]byte) (modeltest.Input, error)
	}{
		{"fast", declPackages[0].decode},
		{"validated", func(data []byte) (modeltest.Input, error) { return inputjson.DecodeValidated(df.d, data) }},
	} {
		b.Run(path.name, func(b *testing.B) {
			if _, err := path.decode(data); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				path.decode(data)
			}
		})
	}
}
