package automata

import (
	"strconv"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// namedInput is an input whose type name is its own: an I that is not
// generated can have any number of them.
type namedInput string

func (n namedInput) InputType() string { return string(n) }

// TestTelemetryKeepsBoundedInputTypes: the attributes kept for input types
// are bounded (maxInputTypes), however many types a peer's inputs name;
// the types past the bound are still recorded, with attributes made for
// each.
func TestTelemetryKeepsBoundedInputTypes(t *testing.T) {
	tel := newTelemetry(sdktrace.NewTracerProvider(), sdkmetric.NewMeterProvider())
	for i := range 3 * maxInputTypes {
		typ := "type-" + strconv.Itoa(i)
		tel.input(t.Context(), namedInput(typ), uint64(i+1), inputTimes{start: time.Now()}, nil)
		if a := tel.attrs(typ); a.name != "moora.input "+typ {
			t.Fatalf("attributes of %s: %q", typ, a.name)
		}
	}
	if n := len(tel.types); n != maxInputTypes {
		t.Errorf("%d input types kept, want the bound %d", n, maxInputTypes)
	}
}
