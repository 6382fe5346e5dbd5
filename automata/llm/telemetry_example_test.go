package llm_test

import (
	"context"
	"fmt"
	"slices"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/moora-go/moora/automata/llm"
)

// A model call traced and measured. A program would give Traced the
// providers it exports with (OTLP, say), and usually the same ones to
// automata.WithTelemetry, so that each call is a child of its job's span;
// here an in-memory recorder and reader show what is recorded.
func ExampleTraced() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))

	model := llm.Traced(llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		return llm.Response{Text: "Rain, then sun.", Usage: llm.Usage{InputTokens: 9, OutputTokens: 4}}, nil
	}}, tp, mp)

	// The span of the job that calls the model: a machine with
	// automata.WithTelemetry puts it in the job's context.
	ctx, job := tp.Tracer("example").Start(context.Background(), "moora.job")
	resp, err := model.Complete(ctx, llm.Request{
		System:   "You talk about the weather.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "And tomorrow?"}},
	}, func(chunk string) { fmt.Printf("chunk %q\n", chunk) })
	job.End()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("reply:", resp.Text)

	chat := spans.Ended()[0]
	fmt.Printf("span %q, kind %v, child of the job: %v\n", chat.Name(), chat.SpanKind(), chat.Parent().SpanID() == job.SpanContext().SpanID())
	for _, a := range chat.Attributes() {
		if a.Key != "gen_ai.response.time_to_first_chunk" { // a time, which varies
			fmt.Printf("  %s = %s\n", a.Key, a.Value.String())
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if h, ok := m.Data.(metricdata.Histogram[int64]); ok && m.Name == "gen_ai.client.token.usage" {
			var lines []string // input and output, in no set order
			for _, p := range h.DataPoints {
				typ, _ := p.Attributes.Value("gen_ai.token.type")
				lines = append(lines, fmt.Sprintf("%s %s: %d %s", m.Name, typ.AsString(), p.Sum, m.Unit))
			}
			slices.Sort(lines)
			for _, l := range lines {
				fmt.Println(l)
			}
		}
	}
	// Output:
	// chunk "Rain,"
	// chunk " then"
	// chunk " sun."
	// reply: Rain, then sun.
	// span "chat scripted", kind client, child of the job: true
	//   gen_ai.operation.name = chat
	//   gen_ai.provider.name = moora.scripted
	//   gen_ai.request.model = scripted
	//   gen_ai.request.stream = true
	//   gen_ai.response.finish_reasons = ["stop"]
	//   gen_ai.usage.input_tokens = 9
	//   gen_ai.usage.output_tokens = 4
	//   moora.llm.tool_call.count = 0
	// gen_ai.client.token.usage input: 9 {token}
	// gen_ai.client.token.usage output: 4 {token}
}
