// Package otelenv sets up OpenTelemetry for the examples from the standard
// environment: when OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_METRICS_ENDPOINT)
// is set, traces and metrics go there over OTLP/HTTP, with the exporters'
// own variables (OTEL_EXPORTER_OTLP_HEADERS, ..._TIMEOUT, ..._INSECURE) and
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES for the resource; when it
// is not, nothing is set up and the examples record nothing.
package otelenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Providers are what Setup made: nil providers when the environment names
// no endpoint.
type Providers struct {
	Tracer trace.TracerProvider
	Meter  metric.MeterProvider
	// Shutdown flushes what is buffered and stops the exporters; it is
	// never nil.
	Shutdown func(context.Context) error
}

// Enabled reports whether the environment asks for export.
func Enabled() bool {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}

// Setup makes the providers the environment asks for, for the example
// named service (the default service.name; OTEL_SERVICE_NAME wins), and
// installs W3C trace context as the global propagator. The spans go to each
// of local too (such as the devpanel's recorder of traces, which keeps
// them in memory): with local and no endpoint, Setup makes a TracerProvider
// that exports nothing, and no MeterProvider.
func Setup(ctx context.Context, service string, local ...sdktrace.SpanProcessor) (Providers, error) {
	p := Providers{Shutdown: func(context.Context) error { return nil }}
	var opts []sdktrace.TracerProviderOption
	for _, sp := range local {
		opts = append(opts, sdktrace.WithSpanProcessor(sp))
	}
	if !Enabled() {
		if len(local) > 0 {
			tp := sdktrace.NewTracerProvider(opts...)
			p.Tracer, p.Shutdown = tp, tp.Shutdown
		}
		return p, nil
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", service)))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return p, err
	}
	// OTEL_SERVICE_NAME, read by WithFromEnv, comes after the default.
	if name := os.Getenv("OTEL_SERVICE_NAME"); name != "" {
		res, _ = resource.Merge(res, resource.NewSchemaless(attribute.String("service.name", name)))
	}
	spans, err := otlptracehttp.New(ctx)
	if err != nil {
		return p, err
	}
	metrics, err := otlpmetrichttp.New(ctx)
	if err != nil {
		return p, errors.Join(err, spans.Shutdown(ctx))
	}
	tp := sdktrace.NewTracerProvider(append(opts, sdktrace.WithBatcher(spans), sdktrace.WithResource(res))...)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)), sdkmetric.WithResource(res))
	otel.SetTextMapPropagator(propagation.TraceContext{})
	p.Tracer, p.Meter = tp, mp
	p.Shutdown = func(ctx context.Context) error { return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx)) }
	return p, nil
}

// Flush sends what is buffered and stops the exporters, waiting at most
// five seconds, and says so on w if that fails (an endpoint that does not
// answer): what the examples do as they exit.
func (p Providers) Flush(w io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		fmt.Fprintln(w, "flushing the telemetry:", err)
	}
}
