package reflexor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/toolkit"
)

// Streams receives the text of the brain's messages as it streams: the
// chunks of a message, in order, then its whole content when it completes,
// or why it failed when the brain's call of the model failed (then Fail
// may come without a chunk before it: the call failed before the reply
// began). The text never enters the state until then; Streams is how a page
// sees it grow (the HTTP bridge's token streams), or a terminal.
type Streams interface {
	Chunk(messageID, text string)
	End(messageID, content string)
	Fail(messageID, reason string)
}

// work is the injected side of the agent: the brain's model, its system
// prompt, the tools, and where streamed text goes.
type work struct {
	model  llm.Model
	system string
	tools  *toolkit.Kit
	// compressAfter is how many messages after the summary's cut make the
	// brain compress the history before it answers (0: never).
	compressAfter int
	// streams receives streamed text; nil discards it.
	streams Streams
	// logger logs the brain's failed calls; nil: slog.Default().
	logger *slog.Logger
	// prices price each call of the model; budget bounds their totals.
	prices llm.Prices
	budget llm.Budget
	// now is the server's clock, for the deadlines of approvals; nil:
	// time.Now.
	now func() time.Time
}

// clock is w's clock.
func (w work) clock() time.Time {
	if w.now == nil {
		return time.Now()
	}
	return w.now()
}

// The brain's own tools, which are not the toolkit's: they become the
// brain's inputs brain-compress-history and brain-load-tool-call. A
// scripted model (llm.Scripted) that stands in for a real one answers
// them: a request whose RequiredTool is CompressTool asks for a call of it
// with {"summary": "…"}, what the conversation so far comes to; LoadTool,
// offered when older tool calls are summarised away, takes {"toolCallId":
// "…"}, one of the ids the system prompt lists, and brings that call's
// details back into the next request.
const (
	CompressTool = "compress_history"
	LoadTool     = "load_tool_call"
)

// jobFns returns each actor's jobs, on its context (agent.WithJobs prefixes
// the keys with the actor's name):
//
//   - the brain's ask-brain-{signalsCutAt} (the seed's AskBrain): when a user
//     message or a tool result is newer than calledBrainAt and no tool call
//     waits for its result, an ask for the signals up to the newest,
//     signalsCutAt; and, for each message still streaming, the ask that
//     writes it, so that a newer ask can start while one streams;
//   - the brain's stop-for-budget-{signalsCutAt}, instead of an ask, once the
//     usage has reached the budget: it records budgetExhausted (and that
//     the signals are answered, with no reply) unless the state already
//     has it, with the same limits, and no signal is newer. A message
//     still streaming is written even then: its ask was allowed;
//   - the toolkit's request-toolkit-{toolCallId} (the seed's
//     RequestToolkit): one per tool call without a result.
//
// Both are pure functions of their context: a restored agent calls for the
// same jobs, under the same keys.
func (w work) jobFns() decl.JobFns {
	return decl.JobFns{Brain: w.brainJobs, Toolkit: w.toolkitJobs}
}

func (w work) brainJobs(c decl.ContextOfBrain) map[string]automata.Job[decl.AgentInput] {
	jobs := map[string]automata.Job[decl.AgentInput]{}
	for _, m := range c.AssistantMessages {
		if m.Streaming {
			jobs[askKey(m.CalledBrainAt)] = w.ask(c, m.CalledBrainAt)
		}
	}
	if w.budget.Reached(usedTokens(c.Usage), usedCost(c.Usage)) {
		cut := max(signalsCutAt(c), c.CalledBrainAt)
		if ex := c.BudgetExhausted; cut > c.CalledBrainAt || ex.Timestamp == 0 || ex.MaxTokens != w.budget.Tokens || ex.MaxCost != w.budget.Cost {
			jobs["stop-for-budget-"+strconv.FormatInt(cut, 10)] = w.stop(cut)
		}
		return jobs
	}
	if cut := signalsCutAt(c); cut > c.CalledBrainAt && len(pendingCalls(c.ToolCalls, c.ToolResults)) == 0 {
		jobs[askKey(cut)] = w.ask(c, cut)
	}
	return jobs
}

// usedTokens and usedCost are the totals that a budget bounds.
func usedTokens(u decl.Usage) int64 { return u.InputTokens + u.OutputTokens }

func usedCost(u decl.Usage) float64 {
	if u.Cost == nil {
		return 0
	}
	return *u.Cost
}

// stop is the brain stopping for its budget, having answered the signals
// up to cut.
func (w work) stop(cut int64) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		dispatch(decl.BrainStopForBudget{CalledBrainAt: cut, MaxTokens: w.budget.Tokens, MaxCost: w.budget.Cost})
		return nil
	}
}

// record hands in the usage of a call of the model, priced, with
// brain-record-usage: before the inputs of the call's answer, so that a call
// is counted once the journal has anything of its answer.
func (w work) record(dispatch automata.Dispatch[decl.AgentInput], cut int64, u llm.Usage) {
	in := decl.BrainRecordUsage{CalledBrainAt: cut, Usage: decl.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}}
	if u.CacheReadInputTokens != 0 {
		in.Usage.CacheReadInputTokens = &u.CacheReadInputTokens
	}
	if u.CacheCreationInputTokens != 0 {
		in.Usage.CacheCreationInputTokens = &u.CacheCreationInputTokens
	}
	name := llm.NameOf(w.model)
	if name != "" {
		in.Model = &name
	}
	if cost := w.prices.Cost(name, u); cost != 0 {
		in.Usage.Cost = &cost
	}
	dispatch(in)
}

func askKey(signalsCutAt int64) string { return "ask-brain-" + strconv.FormatInt(signalsCutAt, 10) }

func (w work) toolkitJobs(c decl.ContextOfToolkit) map[string]automata.Job[decl.AgentInput] {
	pending := pendingCalls(c.ToolCalls, c.ToolResults)
	if len(pending) == 0 {
		return nil
	}
	jobs := make(map[string]automata.Job[decl.AgentInput], len(pending))
	for _, call := range pending {
		if call.NeedsApproval == nil || !*call.NeedsApproval {
			jobs["request-toolkit-"+call.ID] = w.request(call)
			continue
		}
		// A call that waits for approval runs once approved, with the
		// arguments approved; denied, it is refused; until then, it waits
		// for its deadline, and is refused when that comes first.
		i := slices.IndexFunc(c.Approvals, func(a decl.Approval) bool { return a.ToolCallID == call.ID })
		switch {
		case i >= 0 && c.Approvals[i].Approved:
			if args := c.Approvals[i].Arguments; args != nil && *args != "" {
				call.Arguments = *args
			}
			jobs["request-toolkit-"+call.ID] = w.request(call)
		case i >= 0:
			jobs["refuse-toolkit-"+call.ID] = refuse(call.ID, decl.ToolkitRefuseReasonDenied, c.Approvals[i].Reason, 0, nil)
		default:
			var deadline int64
			if call.ApprovalDeadline != nil {
				deadline = *call.ApprovalDeadline
			}
			jobs["deadline-toolkit-"+call.ID] = refuse(call.ID, decl.ToolkitRefuseReasonDeadline, nil, deadline, w.clock)
		}
	}
	return jobs
}

// refuse refuses a tool call that waited for approval, for reason; with a
// clock, at the deadline (Unix milliseconds) only, waiting for it on a
// timer: the approver's word cancels the job first (its key vanishes).
func refuse(id string, reason decl.ToolkitRefuseReason, detail *string, deadline int64, clock func() time.Time) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		if clock != nil {
			t := time.NewTimer(time.Duration(deadline-clock().UnixMilli()) * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		dispatch(decl.ToolkitRefuse{ToolCallID: id, Reason: reason, Detail: detail})
		return nil
	}
}

// signalsCutAt is the time of the newest signal the brain answers: a user
// message or a tool result.
func signalsCutAt(c decl.ContextOfBrain) int64 {
	var cut int64
	if n := len(c.UserMessages); n > 0 {
		cut = c.UserMessages[n-1].Timestamp
	}
	if n := len(c.ToolResults); n > 0 {
		cut = max(cut, c.ToolResults[n-1].Timestamp)
	}
	return cut
}

// pendingCalls returns the tool calls that have no result yet.
func pendingCalls(calls []decl.ToolCallRecord, results []decl.ToolResult) []decl.ToolCallRecord {
	answered := make(map[string]bool, len(results))
	for _, r := range results {
		answered[r.ToolCallID] = true
	}
	var pending []decl.ToolCallRecord
	for _, c := range calls {
		if !answered[c.ID] {
			pending = append(pending, c)
		}
	}
	return pending
}

// request runs a tool call on the toolkit, under the job's key as its
// idempotency key (the same after a restart), and hands in its result, or
// its error: an unknown tool and arguments that do not match the tool's
// schema are errors the brain reads, as a tool's own failure is.
func (w work) request(call decl.ToolCallRecord) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		r := w.tools.Run(ctx, toolkit.Call{ID: call.ID, Name: call.Name, Arguments: json.RawMessage(call.Arguments), Key: automata.JobKey(ctx)})
		if r.Kind == toolkit.KindCancelled {
			return ctx.Err() // cancelled: nothing to report
		}
		if r.Err != nil {
			dispatch(decl.ToolkitError{ToolCallID: call.ID, Error: r.Err.Error()})
			return nil
		}
		dispatch(decl.ToolkitRespond{ToolCallID: call.ID, Result: r.Output})
		return nil
	}
}

// ask is the brain answering the signals up to cut, as its context c shows
// them: it compresses the history first when it has grown past
// compressAfter, then asks the model, streams the reply's text into message
// m-{cut}, loads old tool calls back when the model asks for them, and hands
// in the tool calls and the message. Its inputs carry calledBrainAt = cut;
// their timestamps are stamped by the server's admission step.
//
// A call of the model that fails (a limit of the provider, an HTTP error,
// a timeout, a broken connection, a reply the provider's content filter
// withheld) ends the ask: it is logged, the message's stream ends with the
// reason, and brain-send-message-fail makes m-{cut} a failed reply in the
// state, so that the user sees why and the next message is answered. An
// ask cut short by its context (the agent closing) reports nothing: the
// state still calls for it, and a restarted agent asks again.
func (w work) ask(c decl.ContextOfBrain, cut int64) automata.Job[decl.AgentInput] {
	answer := w.answer(c, cut)
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		err := answer(ctx, dispatch)
		if err == nil || ctx.Err() != nil {
			return err
		}
		id := messageID(cut)
		why := reason(err)
		w.log().LogAttrs(ctx, slog.LevelWarn, "reflexor: the brain's call of the model failed",
			slog.String("moora.job.key", automata.JobKey(ctx)), slog.String("reflexor.message.id", id), slog.String("error", err.Error()))
		if w.streams != nil {
			w.streams.Fail(id, why)
		}
		dispatch(decl.BrainSendMessageFail{CalledBrainAt: cut, MessageID: id, Error: why})
		return nil
	}
}

func (w work) log() *slog.Logger {
	if w.logger != nil {
		return w.logger
	}
	return slog.Default()
}

// messageID is the id of the message of the ask for the signals up to cut.
func messageID(cut int64) string { return "m-" + strconv.FormatInt(cut, 10) }

// reason is what a failed reply says of err, for whoever reads the
// conversation: the kind of failure (llm's error kinds, the HTTP status, the
// content filter), never the provider's address or the server's own words,
// which may name an internal host or part of a key. The log has the whole
// error.
func reason(err error) string {
	var what string
	switch {
	case errors.Is(err, errContentFilter):
		what = errContentFilter.Error()
	case errors.Is(err, llm.ErrResponseTooLarge):
		what = "the reply passed the provider's size limit (response too large)"
	case errors.Is(err, llm.ErrResponseTimeout):
		what = "the reply passed the provider's time limit (response took too long)"
	case errors.Is(err, llm.ErrStreamStalled):
		what = "the model stopped sending (stream stalled)"
	case errors.Is(err, llm.ErrMalformedStream):
		what = "the reply was cut off or garbled (malformed stream)"
	case errors.Is(err, llm.ErrRateLimited):
		what = "the model's server is rate limiting calls (rate limited); try again later"
	case errors.Is(err, llm.ErrContextLength):
		what = "the conversation is too long for the model (context length exceeded)"
	case errors.Is(err, llm.ErrUnreachable):
		what = "the model's server could not be reached (server unreachable)"
	case errors.Is(err, llm.ErrUnauthorized), errors.Is(err, llm.ErrMissingKey):
		what = "the model's server refused the agent's key (unauthorized)"
	default:
		what = "the call of the model failed"
		if e, ok := errors.AsType[*llm.Error](err); ok && e.StatusCode != 0 {
			what += fmt.Sprintf(" (HTTP %d)", e.StatusCode)
		}
	}
	if errors.Is(err, errCompressing) {
		what += ", compressing the history"
	}
	return what
}

// errCompressing marks a failure of the call that compresses the history.
var errCompressing = errors.New("compressing the history")

// errContentFilter is the error of a reply that the provider's content
// filter withheld.
var errContentFilter = errors.New("the provider's content filter withheld the reply")

// answer is ask's work: it returns the error of a call of the model that
// failed, having dispatched nothing but what came before the failure
// (a compression, loaded tool calls, the message's start).
func (w work) answer(c decl.ContextOfBrain, cut int64) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		key := automata.JobKey(ctx)
		if w.compressAfter > 0 {
			if at, ok := compressionCut(c, cut, w.compressAfter); ok {
				req := w.conversation(c, cut)
				req.Tools = append(req.Tools, llm.Tool{
					Name:        CompressTool,
					Description: "Summarises the conversation so far, so that the summary replaces it.",
					Parameters:  json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string","description":"What was said and done, briefly."}},"required":["summary"],"additionalProperties":false}`),
				})
				req.RequiredTool = CompressTool
				req.IdempotencyKey = key + "-compress"
				resp, err := w.model.Complete(ctx, req, nil)
				if err == nil || resp.Usage != (llm.Usage{}) {
					w.record(dispatch, cut, resp.Usage)
				}
				if err == nil && resp.FinishReason == llm.FinishContentFilter {
					err = errContentFilter
				}
				if err != nil {
					return fmt.Errorf("%w: %w", errCompressing, err)
				}
				var args struct {
					Summary string `json:"summary"`
				}
				if len(resp.ToolCalls) != 1 || json.Unmarshal(resp.ToolCalls[0].Arguments, &args) != nil {
					return fmt.Errorf("compressing the history: the model did not call %s with a summary", CompressTool)
				}
				dispatch(decl.BrainCompressHistory{CalledBrainAt: cut, Summary: args.Summary, CutAt: at})
				c.ContextSummary, c.SummaryCutAt = args.Summary, at // this ask's own view
			}
		}
		id := messageID(cut)
		started := false
		onChunk := func(text string) {
			if !started {
				started = true
				dispatch(decl.BrainSendMessageStart{CalledBrainAt: cut, MessageID: id})
			}
			if w.streams != nil {
				w.streams.Chunk(id, text)
			}
		}
		var text strings.Builder
		for round := 0; ; round++ {
			req := w.conversation(c, cut)
			req.IdempotencyKey = key
			if round > 0 {
				req.IdempotencyKey += "-" + strconv.Itoa(round)
			}
			resp, err := w.model.Complete(ctx, req, onChunk)
			if err == nil || resp.Usage != (llm.Usage{}) {
				w.record(dispatch, cut, resp.Usage)
			}
			if err == nil && resp.FinishReason == llm.FinishContentFilter {
				err = errContentFilter
			}
			if err != nil {
				return fmt.Errorf("asking the brain: %w", err)
			}
			text.WriteString(resp.Text)
			calls := map[string]decl.ToolCallRequest{}
			loaded := false
			for _, tc := range resp.ToolCalls {
				if tc.Name != LoadTool {
					// A model's call ids are unique within one
					// conversation, which compression shortens:
					// the ask's cut makes them unique for good.
					req := decl.ToolCallRequest{Name: tc.Name, Arguments: string(tc.Arguments)}
					if ok, wait := w.tools.NeedsApproval(tc.Name, tc.Arguments); ok {
						deadline := w.clock().Add(wait).UnixMilli()
						req.NeedsApproval, req.ApprovalDeadline = &ok, &deadline
					}
					calls[fmt.Sprintf("t%d-%s", cut, tc.ID)] = req
					continue
				}
				var args struct {
					ToolCallID string `json:"toolCallId"`
				}
				i := -1
				if json.Unmarshal(tc.Arguments, &args) == nil {
					i = slices.IndexFunc(c.ToolCalls, func(r decl.ToolCallRecord) bool { return r.ID == args.ToolCallID })
				}
				if i >= 0 && !c.ToolCalls[i].IsLoaded && round < 3 {
					dispatch(decl.BrainLoadToolCall{CalledBrainAt: cut, ToolCallID: args.ToolCallID})
					c.ToolCalls = slices.Clone(c.ToolCalls) // this ask's own view
					c.ToolCalls[i].IsLoaded = true
					loaded = true
				}
			}
			if loaded && len(calls) == 0 && resp.Text == "" {
				continue // ask again, with the tool calls loaded
			}
			// The tool calls before the message completes: completing it
			// ends this job (its key is the streaming message's).
			if len(calls) > 0 || !started {
				dispatch(decl.BrainCallTools{CalledBrainAt: cut, ToolCalls: calls})
			}
			if started {
				dispatch(decl.BrainSendMessageComplete{CalledBrainAt: cut, MessageID: id, Content: text.String()})
				if w.streams != nil {
					w.streams.End(id, text.String())
				}
			}
			return nil
		}
	}
}

// compressionCut says whether the history must be compressed before the
// ask for the signals up to cut, and up to when: when more than after
// messages follow the summary's cut, everything but the newest user
// message and what followed it is summarised.
func compressionCut(c decl.ContextOfBrain, cut int64, after int) (int64, bool) {
	var times []int64
	for _, m := range c.UserMessages {
		if m.Timestamp > c.SummaryCutAt && m.Timestamp <= cut {
			times = append(times, m.Timestamp)
		}
	}
	newestUser := int64(0)
	if len(times) > 0 {
		newestUser = times[len(times)-1]
	}
	for _, m := range c.AssistantMessages {
		if m.Timestamp > c.SummaryCutAt && m.Timestamp <= cut && !m.Streaming && m.Error == nil {
			times = append(times, m.Timestamp)
		}
	}
	if len(times) <= after || newestUser == 0 {
		return 0, false
	}
	at := int64(0)
	for _, t := range times {
		if t < newestUser {
			at = max(at, t)
		}
	}
	return at, at > c.SummaryCutAt
}

// conversation is what the brain is sent for the signals up to cut (the
// seed's context management): the system prompt with the summary and the
// ids of the tool calls it covers, then the messages after the summary's
// cut, each tool call after the cut (or loaded back) in full, followed by
// its result. The brain may call the toolkit's tools and load_tool_call.
func (w work) conversation(c decl.ContextOfBrain, cut int64) llm.Request {
	type item struct {
		at  int64
		msg llm.Message
		ids []string // tool calls of an assistant message, answered after it
	}
	var items []item
	for _, m := range c.UserMessages {
		if m.Timestamp > c.SummaryCutAt && m.Timestamp <= cut {
			items = append(items, item{at: m.Timestamp, msg: llm.Message{Role: llm.RoleUser, Content: m.Content}})
		}
	}
	for _, m := range c.AssistantMessages {
		if m.Timestamp > c.SummaryCutAt && m.Timestamp <= cut && !m.Streaming && m.Error == nil && m.Content != "" {
			items = append(items, item{at: m.Timestamp, msg: llm.Message{Role: llm.RoleAssistant, Content: m.Content}})
		}
	}
	results := map[string]decl.ToolResult{}
	for _, r := range c.ToolResults {
		results[r.ToolCallID] = r
	}
	var older []string
	groups := map[int64]int{} // the calls of one input, one assistant message
	for _, tc := range c.ToolCalls {
		if _, ok := results[tc.ID]; !ok || tc.Timestamp > cut {
			continue // no result yet: not sent until it has one
		}
		if tc.Timestamp <= c.SummaryCutAt && !tc.IsLoaded {
			older = append(older, fmt.Sprintf("%s (%s)", tc.ID, tc.Name))
			continue
		}
		i, ok := groups[tc.Timestamp]
		if !ok {
			i = len(items)
			groups[tc.Timestamp] = i
			items = append(items, item{at: tc.Timestamp, msg: llm.Message{Role: llm.RoleAssistant}})
		}
		items[i].msg.ToolCalls = append(items[i].msg.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: json.RawMessage(tc.Arguments)})
		items[i].ids = append(items[i].ids, tc.ID)
	}
	slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(a.at, b.at) })

	var system strings.Builder
	system.WriteString(w.system)
	if c.ContextSummary != "" {
		fmt.Fprintf(&system, "\n\nSummary of the conversation so far:\n%s", c.ContextSummary)
	}
	if len(older) > 0 {
		fmt.Fprintf(&system, "\n\nEarlier tool calls, whose details %s can load: %s.", LoadTool, strings.Join(older, ", "))
	}
	req := llm.Request{System: system.String()}
	for _, it := range items {
		req.Messages = append(req.Messages, it.msg)
		for _, id := range it.ids {
			r := results[id]
			content := r.Content
			if r.IsError {
				content = "error: " + content
			}
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: content})
		}
	}
	if w.tools != nil {
		req.Tools = append(req.Tools, w.tools.LLMTools()...)
	}
	if len(older) > 0 {
		req.Tools = append(req.Tools, llm.Tool{
			Name:        LoadTool,
			Description: "Loads the details of an earlier tool call, by id, into the conversation.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"toolCallId":{"type":"string"}},"required":["toolCallId"],"additionalProperties":false}`),
		})
	}
	return req
}
