package main

import (
	"context"
	"sync"
	"testing"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/examples/react/decl"
)

// countingPlanner is RulePlanner that asks its model once per decision
// first, as an LLM planner would, and records each call's usage.
type countingPlanner struct {
	RulePlanner
	model llm.Model
	mu    sync.Mutex
	calls []llm.Usage
	n     int64
	// each, if not zero, is the usage of every call.
	each llm.Usage
}

func (p *countingPlanner) ask(ctx context.Context, key string) error {
	p.mu.Lock()
	p.n++
	u := llm.Usage{InputTokens: 100 * p.n, OutputTokens: 7, CacheReadInputTokens: 50}
	if p.each != (llm.Usage{}) {
		u = p.each
	}
	p.calls = append(p.calls, u)
	p.mu.Unlock()
	_, err := p.model.Complete(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "plan"}}, IdempotencyKey: key}, nil)
	return err
}

func (p *countingPlanner) Decompose(ctx context.Context, key, goal, prompt string) ([]string, error) {
	if err := p.ask(ctx, key); err != nil {
		return nil, err
	}
	return p.RulePlanner.Decompose(ctx, key, goal, prompt)
}

func (p *countingPlanner) PlanTask(ctx context.Context, key string, t Task) (Planned, error) {
	if err := p.ask(ctx, key); err != nil {
		return Planned{}, err
	}
	return p.RulePlanner.PlanTask(ctx, key, t)
}

// TestUsage: the planner's calls of the model, metered (Metered) and
// priced from Work.Prices, are handed in with the plans, and the state's
// usage, which the user observes (and the devpanel shows), is their sum.
func TestUsage(t *testing.T) {
	p := &countingPlanner{}
	prices := llm.Prices{"scripted": {Input: 2, Output: 10, CacheRead: 0.2}}
	p.model = Metered(llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return llm.Response{Text: "ok", Usage: p.calls[len(p.calls)-1]}, nil
	}}, prices)
	w := testWork(t, never)
	w.Planner = p
	r, a := runTask(t, testRuns(t, w, 0), decl.UserRunTask{RunID: "metered", Goal: "compute 6*7 and count words in todo.txt"})
	if r.Outcome != decl.RunRecordOutcomeFinished {
		t.Fatalf("run %+v", r)
	}
	s := a.Current()
	p.mu.Lock()
	defer p.mu.Unlock()
	var in, out, read int64
	var cost float64
	for _, u := range p.calls {
		in, out, read = in+u.InputTokens, out+u.OutputTokens, read+u.CacheReadInputTokens
		cost += prices.Cost("scripted", u)
	}
	u := s.ContextOfUser().Usage
	if len(p.calls) < 2 || u.InputTokens != in || u.OutputTokens != out || u.Calls == nil || *u.Calls != int64(len(p.calls)) ||
		u.CacheReadInputTokens == nil || *u.CacheReadInputTokens != read || u.Cost == nil || *u.Cost != cost {
		t.Errorf("the user sees the usage %+v; want the sum of %d calls: %d in, %d out, %d cache read, $%v", u, len(p.calls), in, out, read, cost)
	}
}
