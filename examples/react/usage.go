package main

import (
	"context"
	"sync"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/examples/react/decl"
)

// The agent's usage of the model: the LLM planner's calls are made inside
// the plan jobs (plan, replan), each of which meters them (withMeter) and
// hands their tokens and cost in with the plan it dispatches (agent-plan's
// usage), so that the journal has them and the state's usage, the agent's
// totals, is a pure function of its inputs. The model is wrapped by Metered,
// which counts each call in the meter of the job that made it and prices it
// from the price table, a configuration (Work.Prices).

// Metered returns m, whose calls, made in a plan's job, are counted in that
// plan's usage, each priced with prices by the name m gives itself
// (llm.Named); a model without a price costs 0.
func Metered(m llm.Model, prices llm.Prices) llm.Model {
	return metered{m, prices, llm.NameOf(m)}
}

type metered struct {
	llm.Model
	prices llm.Prices
	name   string
}

func (m metered) Complete(ctx context.Context, req llm.Request, onChunk func(string)) (llm.Response, error) {
	resp, err := m.Model.Complete(ctx, req, onChunk)
	if mt, ok := ctx.Value(meterKey{}).(*meter); ok && (err == nil || resp.Usage != (llm.Usage{})) {
		mt.add(resp.Usage, m.prices.Cost(m.name, resp.Usage))
	}
	return resp, err
}

func (m metered) ModelName() string { return m.name }

// SupportsResponseFormat says what m's model says (llm.ResponseFormatter).
func (m metered) SupportsResponseFormat() bool { return llm.SupportsResponseFormat(m.Model) }

func (m metered) ProviderName() string {
	if n, ok := m.Model.(llm.Named); ok {
		return n.ProviderName()
	}
	return ""
}

type meterKey struct{}

// meter sums the usage of the calls of one job.
type meter struct {
	mu    sync.Mutex
	calls int64
	u     llm.Usage
	cost  float64
}

// withMeter returns ctx with a new meter, and the meter.
func withMeter(ctx context.Context) (context.Context, *meter) {
	m := &meter{}
	return context.WithValue(ctx, meterKey{}, m), m
}

func (m *meter) add(u llm.Usage, cost float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	m.u.InputTokens += u.InputTokens
	m.u.OutputTokens += u.OutputTokens
	m.u.CacheReadInputTokens += u.CacheReadInputTokens
	m.u.CacheCreationInputTokens += u.CacheCreationInputTokens
	m.cost += cost
}

// usage is what the meter counted, as agent-plan's usage: nil for no call.
func (m *meter) usage() *decl.Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.calls == 0 {
		return nil
	}
	u := decl.Usage{InputTokens: m.u.InputTokens, OutputTokens: m.u.OutputTokens, Calls: ptr(m.calls)}
	if m.u.CacheReadInputTokens != 0 {
		u.CacheReadInputTokens = ptr(m.u.CacheReadInputTokens)
	}
	if m.u.CacheCreationInputTokens != 0 {
		u.CacheCreationInputTokens = ptr(m.u.CacheCreationInputTokens)
	}
	if m.cost != 0 {
		u.Cost = ptr(m.cost)
	}
	return &u
}

// metering returns job with a meter in its context, the plans it dispatches
// carrying what the meter counted until then (and the meter restarting).
func metering(job automata.Job[decl.AgentInput]) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		ctx, m := withMeter(ctx)
		return job(ctx, func(in decl.AgentInput) {
			if p, ok := in.(decl.AgentPlan); ok {
				p.Usage = m.usage()
				m.reset()
				in = p
			}
			dispatch(in)
		})
	}
}

func (m *meter) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls, m.u, m.cost = 0, llm.Usage{}, 0
}
