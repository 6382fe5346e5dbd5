package llm

// Price is what a model charges, in US dollars per million tokens. It is
// configuration (an agent's price table, Prices), not code: an agent's job
// prices each call with it when the call returns, and dispatches the cost with
// the call's usage, so that the journal keeps what each call cost at the
// prices of its day and the state stays a pure function of its inputs.
type Price struct {
	// Input is the price of a prompt's tokens that the cache neither read
	// nor wrote.
	Input float64
	// Output is the price of a reply's tokens.
	Output float64
	// CacheRead is the price of the prompt's tokens read from the prompt
	// cache (Usage.CacheReadInputTokens); 0: priced as Input.
	CacheRead float64
	// CacheWrite is the price of the prompt's tokens written to the
	// prompt cache (Usage.CacheCreationInputTokens); 0: priced as Input.
	CacheWrite float64
}

// Cost is what a call of usage u costs at price p, in US dollars.
func (p Price) Cost(u Usage) float64 {
	read, write := p.CacheRead, p.CacheWrite
	if read == 0 {
		read = p.Input
	}
	if write == 0 {
		write = p.Input
	}
	plain := max(u.InputTokens-u.CacheReadInputTokens-u.CacheCreationInputTokens, 0)
	return (float64(plain)*p.Input + float64(u.CacheReadInputTokens)*read +
		float64(u.CacheCreationInputTokens)*write + float64(u.OutputTokens)*p.Output) / 1e6
}

// Prices is a price table: the price of each model, by the name it gives
// itself (Named's ModelName, such as "gpt-4o-mini"; "scripted" for
// Scripted).
type Prices map[string]Price

// Cost is what a call of usage u of the model named model costs, in US
// dollars: 0 for a model the table has no price for.
func (ps Prices) Cost(model string, u Usage) float64 {
	p, ok := ps[model]
	if !ok {
		return 0
	}
	return p.Cost(u)
}

// NameOf is the name m gives itself (Named's ModelName), or "" when it
// does not.
func NameOf(m Model) string {
	if n, ok := m.(Named); ok {
		return n.ModelName()
	}
	return ""
}

// Budget bounds what an agent (a conversation) may spend on calls of its
// model. It is configuration: the agent's state keeps the totals of its
// calls, and the job-deriving function asks for no more calls once Reached
// says so, so that the call that crosses the budget is made (it was allowed:
// the totals were under it) and recorded, and none after it.
type Budget struct {
	// Tokens is the most tokens, input and output (Usage.InputTokens +
	// Usage.OutputTokens, the cached ones included), that the calls may
	// add up to; 0: no limit.
	Tokens int64
	// Cost is the most US dollars the calls may add up to, priced by the
	// agent's Prices; 0: no limit.
	Cost float64
}

// Reached reports whether totals of tokens and cost have reached b: at or
// past either of its limits.
func (b Budget) Reached(tokens int64, cost float64) bool {
	return (b.Tokens > 0 && tokens >= b.Tokens) || (b.Cost > 0 && cost >= b.Cost)
}
