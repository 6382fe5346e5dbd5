package otelenv

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestSetupExportsToTheEndpoint: with OTEL_EXPORTER_OTLP_ENDPOINT set to a
// real server on loopback, a span and a metric reach it over OTLP/HTTP
// (POST /v1/traces and /v1/metrics, protobuf) by Shutdown, with the
// service's name in them.
func TestSetupExportsToTheEndpoint(t *testing.T) {
	var mu sync.Mutex
	got := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[r.URL.Path] = append(got[r.URL.Path], b...)
		mu.Unlock()
		if r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("%s: Content-Type %q", r.URL.Path, r.Header.Get("Content-Type"))
		}
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "")
	p, err := Setup(context.Background(), "otelenv-test")
	if err != nil {
		t.Fatal(err)
	}
	if p.Tracer == nil || p.Meter == nil {
		t.Fatal("no providers with an endpoint set")
	}
	_, span := p.Tracer.Tracer("test").Start(context.Background(), "a-span-to-find")
	span.End()
	counter, err := p.Meter.Meter("test").Int64Counter("a.counter.to.find")
	if err != nil {
		t.Fatal(err)
	}
	counter.Add(context.Background(), 1)
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for path, want := range map[string]string{"/v1/traces": "a-span-to-find", "/v1/metrics": "a.counter.to.find"} {
		body := string(got[path])
		if !strings.Contains(body, want) || !strings.Contains(body, "otelenv-test") {
			t.Errorf("%s: %d bytes, without %q or the service's name", path, len(body), want)
		}
	}
}

// TestSetupWithoutEndpoint: without the variables, no providers, and a
// Shutdown that does nothing.
func TestSetupWithoutEndpoint(t *testing.T) {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		t.Setenv(v, "")
	}
	p, err := Setup(context.Background(), "x")
	if err != nil || p.Tracer != nil || p.Meter != nil || p.Shutdown(context.Background()) != nil {
		t.Errorf("providers %v %v, err %v", p.Tracer, p.Meter, err)
	}
}

// TestSetupLocalOnly: without an endpoint, a local span processor gets the
// spans, and nothing is exported (there is no MeterProvider).
func TestSetupLocalOnly(t *testing.T) {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		t.Setenv(v, "")
	}
	rec := tracetest.NewSpanRecorder()
	p, err := Setup(context.Background(), "x", rec)
	if err != nil || p.Tracer == nil || p.Meter != nil {
		t.Fatalf("providers %v %v, err %v", p.Tracer, p.Meter, err)
	}
	_, span := p.Tracer.Tracer("test").Start(context.Background(), "local")
	span.End()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Ended()); n != 1 {
		t.Errorf("%d spans recorded locally", n)
	}
}
