package reflexor

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/llm"
)

// meteredBrain is a scripted model whose n-th request (counting the user's
// messages in it) uses usage(n) tokens, and that records every call's usage.
type meteredBrain struct {
	mu    sync.Mutex
	calls []llm.Usage
	usage func(userMessages int) llm.Usage
}

func (b *meteredBrain) Complete(ctx context.Context, req llm.Request, onChunk func(string)) (llm.Response, error) {
	resp, err := llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		n := 0
		for _, m := range req.Messages {
			if m.Role == llm.RoleUser {
				n++
			}
		}
		return llm.Response{Text: fmt.Sprintf("answer %d", n), Usage: b.usage(n)}, nil
	}}.Complete(ctx, req, onChunk)
	if err == nil {
		b.mu.Lock()
		b.calls = append(b.calls, resp.Usage)
		b.mu.Unlock()
	}
	return resp, err
}

func (*meteredBrain) ModelName() string    { return "metered" }
func (*meteredBrain) ProviderName() string { return "test" }

func (b *meteredBrain) recorded() []llm.Usage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]llm.Usage(nil), b.calls...)
}

// budgetAgent is a Reflexor on the bolt journal in dir, with brain, prices
// and budget.
func budgetAgent(t *testing.T, dir string, brain llm.Model, prices llm.Prices, budget llm.Budget) *Agent {
	t.Helper()
	store, err := bolt.Open(filepath.Join(dir, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{
		Model:  brain,
		Store:  store,
		Prices: prices,
		Budget: budget,
		Options: []automata.Option[decl.AgentState, decl.AgentInput]{
			automata.WithPurityCheck[decl.AgentState, decl.AgentInput](),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// waitFor waits until the agent's state satisfies ok, and returns it.
func waitFor(t *testing.T, a *Agent, what string, ok func(decl.AgentState) bool) decl.AgentState {
	t.Helper()
	changed := make(chan struct{}, 1)
	unsubscribe := a.Machine().Subscribe(func(decl.AgentState) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	defer unsubscribe()
	deadline := time.After(hangGuard)
	for {
		if s := a.Machine().Current(); ok(s) {
			return s
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("hung waiting for %s; state %+v", what, a.Machine().Current())
		}
	}
}

// answeredTo reports whether the brain has answered the user's newest
// message, by a whole message or by stopping for its budget.
func answeredTo(s decl.AgentState) bool {
	for _, m := range s.AssistantMessages {
		if m.Streaming {
			return false
		}
	}
	return len(s.UserMessages) > 0 && s.CalledBrainAt >= s.UserMessages[len(s.UserMessages)-1].Timestamp
}

// TestBudget: an agent at 95% of its budget asks for one more call, which
// crosses it, and stops: budgetExhausted is in the user's view, with the
// totals, and the next message is not answered; a restart keeps it so and
// calls the model no more; the totals are the sum of the calls' usages, and
// their cost the sum of the calls' prices. A budget raised lets the next
// message be answered.
func TestBudget(t *testing.T) {
	dir := t.TempDir()
	brain := &meteredBrain{usage: func(n int) llm.Usage {
		if n == 1 {
			return llm.Usage{InputTokens: 80, OutputTokens: 15, CacheReadInputTokens: 40} // 95 of 100
		}
		return llm.Usage{InputTokens: 8, OutputTokens: 4, CacheCreationInputTokens: 3}
	}}
	prices := llm.Prices{"metered": {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}}
	budget := llm.Budget{Tokens: 100}
	ctx := context.Background()
	say := func(a *Agent, id, content string) decl.AgentState {
		t.Helper()
		if err := a.Machine().Dispatch(ctx, decl.UserSendMessage{MessageID: id, Content: content}); err != nil {
			t.Fatal(err)
		}
		return waitFor(t, a, "the brain to answer "+id, answeredTo)
	}

	a := budgetAgent(t, dir, brain, prices, budget)
	s := say(a, "u1", "hello")
	if got := usedTokens(s.Usage); got != 95 || s.BudgetExhausted.Timestamp != 0 {
		t.Fatalf("after the first call: %d tokens used, budgetExhausted %+v; want 95 and not exhausted", got, s.BudgetExhausted)
	}
	say(a, "u2", "one more")
	s = waitFor(t, a, "budgetExhausted", func(s decl.AgentState) bool { return s.BudgetExhausted.Timestamp != 0 })
	if n := len(brain.recorded()); n != 2 {
		t.Fatalf("the model was called %d times; want 2 (the call at 95%% is made)", n)
	}
	if got := s.AssistantMessages[len(s.AssistantMessages)-1].Content; got != "answer 2" {
		t.Errorf("the crossing call's answer is %q; want %q", got, "answer 2")
	}
	view := s.ContextOfUser()
	if view.BudgetExhausted.MaxTokens != 100 || usedTokens(view.Usage) != 95+12 {
		t.Errorf("the user's view: budgetExhausted %+v, usage %+v; want the limit 100 and 107 tokens", view.BudgetExhausted, view.Usage)
	}
	s = say(a, "u3", "and another")
	if n := len(brain.recorded()); n != 2 || len(s.AssistantMessages) != 2 {
		t.Fatalf("exhausted, a message made %d calls in all and %d replies; want 2 and 2", n, len(s.AssistantMessages))
	}
	// A chat client (the AI SDK's stream) and an MCP client see the reply
	// end with the budget, not wait for one.
	if r, ok := chatReply(s, "u3"); !ok || !r.Done || !strings.Contains(r.Error, "budget is exhausted") || len(r.Parts) != 0 {
		t.Errorf("the chat's reply to u3: %+v, want it done, no parts, the budget's error", r)
	}
	if !replied(decl.UserSendMessage{MessageID: "u3"}, s.ContextOfUser()) {
		t.Error("MCP's replied condition does not hold for u3: a call waiting for it would wait for its deadline")
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}

	a = budgetAgent(t, dir, brain, prices, budget)
	s = a.Machine().Current()
	if s.BudgetExhausted.Timestamp == 0 || !answeredTo(s) {
		t.Fatalf("after a restart: budgetExhausted %+v, answered %v; want it kept", s.BudgetExhausted, answeredTo(s))
	}
	if jobs := (work{budget: budget}).brainJobs(s.ContextOfBrain()); len(jobs) != 0 {
		t.Errorf("after a restart the state calls for the brain's jobs %v; want none", keys(jobs))
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	calls := brain.recorded()
	if len(calls) != 2 {
		t.Fatalf("after a restart the model was called %d times in all; want 2", len(calls))
	}
	var want decl.Usage
	var cost float64
	for _, u := range calls {
		want.InputTokens += u.InputTokens
		want.OutputTokens += u.OutputTokens
		cost += prices.Cost("metered", u)
	}
	if s.Usage.InputTokens != want.InputTokens || s.Usage.OutputTokens != want.OutputTokens ||
		deref(s.Usage.Calls) != 2 || deref(s.Usage.CacheReadInputTokens) != 40 || deref(s.Usage.CacheCreationInputTokens) != 3 || usedCost(s.Usage) != cost {
		t.Errorf("usage %s; want %d input, %d output, 40 cache read, 3 cache written tokens, 2 calls, $%v", jsonOf(s.Usage), want.InputTokens, want.OutputTokens, cost)
	}
	if cost == 0 {
		t.Error("the calls cost nothing; the price table was not used")
	}

	a = budgetAgent(t, dir, brain, prices, llm.Budget{Tokens: 1000})
	defer a.Close(ctx)
	s = say(a, "u4", "with more budget")
	if s.BudgetExhausted.Timestamp != 0 || len(brain.recorded()) != 3 {
		t.Errorf("with the budget raised: budgetExhausted %+v, %d calls; want it cleared and 3 calls", s.BudgetExhausted, len(brain.recorded()))
	}
}

// TestCostBudget: a budget in dollars stops the brain as one in tokens does.
func TestCostBudget(t *testing.T) {
	brain := &meteredBrain{usage: func(int) llm.Usage { return llm.Usage{InputTokens: 1000, OutputTokens: 1000} }}
	prices := llm.Prices{"metered": {Input: 1, Output: 9}} // $0.01 a call
	a := budgetAgent(t, t.TempDir(), brain, prices, llm.Budget{Cost: 0.015})
	defer a.Close(context.Background())
	for i := range 3 {
		if err := a.Machine().Dispatch(context.Background(), decl.UserSendMessage{MessageID: fmt.Sprint("u", i), Content: "hi"}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, a, "an answer", answeredTo)
	}
	s := waitFor(t, a, "budgetExhausted", func(s decl.AgentState) bool { return s.BudgetExhausted.Timestamp != 0 })
	if n := len(brain.recorded()); n != 2 || s.BudgetExhausted.MaxCost != 0.015 {
		t.Errorf("%d calls, budgetExhausted %+v; want 2 calls and the limit $0.015", n, s.BudgetExhausted)
	}
}

func deref[N int64 | float64](p *N) N {
	if p == nil {
		return 0
	}
	return *p
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
