package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/moora-go/moora/automata/toolkit"
)

// BenchmarkCall measures a toolkit call of add, the same Go function, as a
// Go tool of the kit (go) and as a tool of an MCP server over stdio (mcp:
// goServer, this test binary run again), and reports their ratio in one
// run (mcp/go, on the mcp line).
func BenchmarkCall(b *testing.B) {
	add := func(a AddArgs) string { return fmt.Sprint(a.A + a.B) }
	args := json.RawMessage(`{"a":2,"b":40}`)
	ctx := context.Background()
	var goNs float64
	b.Run("go", func(b *testing.B) {
		kit, err := toolkit.New(toolkit.Config{}, toolkit.Func("add", "Adds two integers.", func(_ context.Context, a AddArgs) (string, error) { return add(a), nil }))
		if err != nil {
			b.Fatal(err)
		}
		call := toolkit.Call{ID: "c", Name: "add", Arguments: args, Key: "job/c"}
		b.ReportAllocs()
		for b.Loop() {
			if r := kit.Run(ctx, call); r.Output != "42" {
				b.Fatal(r.Content())
			}
		}
		goNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("mcp", func(b *testing.B) {
		kit, _ := toolkit.New(toolkit.Config{})
		cfg := self(b, "go")
		cfg.Logger = slog.New(slog.DiscardHandler)
		mount(b, kit, cfg)
		call := toolkit.Call{ID: "c", Name: "add", Arguments: args, Key: "job/c"}
		b.ReportAllocs()
		for b.Loop() {
			if r := kit.Run(ctx, call); r.Output != "42" {
				b.Fatal(r.Content())
			}
		}
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		if goNs > 0 {
			b.ReportMetric(ns/goNs, "x-go")
		}
	})
}
