package structured_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/structured"
)

// A typed value from a model: here a scripted one, which answers a triage.
func ExampleAsk() {
	model := llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		args, _ := json.Marshal(Triage{Severity: "critical", Summary: "invoices down"})
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: "c1", Name: req.RequiredTool, Arguments: args}}}, nil
	}}
	ctx := context.Background() // in a job, the job's: automata.JobKey(ctx) is its key
	ticket := "The invoices page is down for everyone."
	triage, usage, err := structured.Ask[Triage](ctx, model, llm.Request{System: "Triage the ticket.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: ticket}}, IdempotencyKey: automata.JobKey(ctx)}, structured.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(triage.Severity, triage.Summary, usage.InputTokens > 0)
	// Output: critical invoices down true
}
