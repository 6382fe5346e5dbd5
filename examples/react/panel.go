package main

import (
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"slices"

	"github.com/moora-go/moora/automata/devpanel"
	"github.com/moora-go/moora/examples/react/decl"
	"github.com/moora-go/moora/examples/react/impl/agent"
)

//go:embed web
var webFiles embed.FS

// panelConfig is the devpanel of a run's agent, which work drives, with the
// ReAct views (web/views.js, served at /react/views.js by the handler
// returned) and the seed's event vocabulary as the timeline's notes. It has
// no Auth: the devpanel fleet, which serves the panels, authenticates.
func panelConfig(work Work) (devpanel.Config[decl.AgentState, decl.AgentInput], http.Handler, error) {
	views, err := fs.Sub(webFiles, "web")
	if err != nil {
		return devpanel.Config[decl.AgentState, decl.AgentInput]{}, nil, err
	}
	return devpanel.Config[decl.AgentState, decl.AgentInput]{
		Definition:  agent.Definition(),
		Decode:      decl.DecodeInput,
		InputSchema: decl.InputSchema(),
		Jobs:        work.JobKeys,
		Actor:       actor,
		Notes:       Notes,
		Extensions:  []string{"/react/views.js"},
		Traces:      work.Traces,
	}, http.StripPrefix("/react", http.FileServerFS(views)), nil
}

// JobKeys returns the keys of the jobs a state calls for, as the agent
// reconciles them (prefixed with the actor), without running any.
func (w Work) JobKeys(s decl.AgentState) []string {
	var keys []string
	for k := range maps.Keys(w.agentJobs(s.ContextOfAgent())) {
		keys = append(keys, "agent/"+k)
	}
	for k := range maps.Keys(w.toolkitJobs(s.ContextOfToolkit())) {
		keys = append(keys, "toolkit/"+k)
	}
	slices.Sort(keys)
	return keys
}

func actor(in decl.AgentInput) string {
	switch in.(type) {
	case decl.InputFromUser:
		return "user"
	case decl.InputFromAgent:
		return "agent"
	case decl.InputFromToolkit:
		return "toolkit"
	}
	return ""
}

// Notes labels an input with seed 002's event vocabulary: user.input,
// tool.request, tool.result, agent.transition, agent.log, system.alert,
// agent.finished; and agent.recover (the reflector out of error),
// agent.config (a configuration put in force) and agent.budget (the agent
// stopped for its budget).
func Notes(before, after decl.AgentState, in decl.AgentInput) []devpanel.Note {
	var notes []devpanel.Note
	note := func(typ, format string, args ...any) {
		notes = append(notes, devpanel.Note{Type: typ, Text: fmt.Sprintf(format, args...)})
	}
	switch in := in.(type) {
	case decl.UserRunTask:
		note("user.input", "run %s: %s", in.RunID, in.Goal)
	case decl.UserReply:
		note("user.input", "reply to %s: %s", in.RunID, in.Content)
	case decl.AgentReflect:
		note("agent.log", "%s: %s", in.Strategy, in.Reason)
	case decl.AgentPlan:
		for _, sub := range in.Subtasks {
			parent := "root"
			if sub.ParentID != nil && *sub.ParentID != "" {
				parent = *sub.ParentID
			}
			note("agent.log", "subtask %s of %s: %s", sub.TaskID, parent, sub.Description)
		}
		if in.Step != nil {
			note("agent.log", "plan %s: %s", in.Step.TaskID, in.Step.Goal)
		}
	case decl.AgentRecover:
		note("agent.recover", "%s: %s", in.Strategy, in.Reason)
	case decl.AgentStopForBudget:
		u, cost := after.Usage, 0.0
		if after.Usage.Cost != nil {
			cost = *after.Usage.Cost
		}
		note("agent.budget", "the planner's model stopped at %d tokens and $%.4f (budget: %d tokens, $%.4f; 0: no limit)",
			u.InputTokens+u.OutputTokens, cost, in.MaxTokens, in.MaxCost)
	case decl.AgentConfigure:
		g := in.Config.Guards
		note("agent.config", "%s (sha256 %.12s): maxIterations %d, maxDurationMs %d, maxFailures %d, maxRecoveries %d, maxDepth %d; strategies %v; recovery %v",
			in.Config.Source, in.Config.Digest, g.MaxIterations, g.MaxDurationMs, g.MaxFailures, deref(g.MaxRecoveries), deref(g.MaxDepth), in.Config.Strategies, in.Config.Recovery)
	}
	fresh := before.RunID != after.RunID
	newer := func(b, a int) int {
		if fresh {
			return 0
		}
		return min(b, a)
	}
	for _, c := range after.Calls[newer(len(before.Calls), len(after.Calls)):] {
		note("tool.request", "%s %s %v", c.CallID, c.Tool, c.Parameters)
	}
	for _, o := range after.Observations[min(len(before.Observations), len(after.Observations)):] {
		if o.Success {
			note("tool.result", "%s ok in %d ms", o.CallID, o.LatencyMs)
		} else {
			note("tool.result", "%s %s: %s", o.CallID, o.ErrorKind, o.Error)
		}
	}
	for _, t := range after.Transitions[newer(len(before.Transitions), len(after.Transitions)):] {
		note("agent.transition", "%s → %s: %s", t.From, t.To, t.Reason)
	}
	for _, a := range after.Alerts[newer(len(before.Alerts), len(after.Alerts)):] {
		note("system.alert", "%s: %s", a.Guard, a.Message)
	}
	for _, r := range after.Runs[min(len(before.Runs), len(after.Runs)):] {
		if r.Outcome == decl.RunRecordOutcomeFinished {
			note("agent.finished", "%s: %s", r.RunID, r.Answer)
		} else {
			note("system.alert", "%s ended in error: %s", r.RunID, r.Error)
		}
	}
	return notes
}
