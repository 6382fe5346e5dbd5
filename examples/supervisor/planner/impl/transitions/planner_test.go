package transitions_test

import (
	"testing"

	"github.com/moora-go/moora/examples/supervisor/planner/decl"
	"github.com/moora-go/moora/examples/supervisor/planner/impl/agent"
)

// TestPlannerRequests runs the planner's machine through requests: each
// taken up in turn, an answer or a failure for the one at work only, a
// split for the next request only, and between requests only.
func TestPlannerRequests(t *testing.T) {
	split := func(n int64) decl.AgentInput {
		return decl.PlannerSplit{Working: n, Request: "r", ResearchTask: "find", WritingTask: "write"}
	}
	for _, c := range []struct {
		name    string
		inputs  []decl.AgentInput
		phase   decl.Phase
		working int64
		answer  string
		err     string
	}{
		{"asked, not split yet", []decl.AgentInput{decl.UserAsk{Request: "r"}}, decl.PhaseIdle, 0, "", ""},
		{"split", []decl.AgentInput{decl.UserAsk{Request: "r"}, split(1)}, decl.PhaseResearching, 1, "", ""},
		{"a split of a later request is not the next", []decl.AgentInput{split(2)}, decl.PhaseIdle, 0, "", ""},
		{"a second split while at work", []decl.AgentInput{split(1), split(2)}, decl.PhaseResearching, 1, "", ""},
		{"written before researched changes nothing", []decl.AgentInput{split(1), decl.PlannerWritten{Working: 1, Answer: "a"}}, decl.PhaseResearching, 1, "", ""},
		{"answered", []decl.AgentInput{split(1), decl.PlannerResearched{Working: 1, Research: "f"}, decl.PlannerWritten{Working: 1, Answer: "a"}}, decl.PhaseDone, 1, "a", ""},
		{"findings of another request", []decl.AgentInput{split(1), decl.PlannerResearched{Working: 2, Research: "f"}}, decl.PhaseResearching, 1, "", ""},
		{"the research failed", []decl.AgentInput{split(1), decl.PlannerFailed{Working: 1, Error: "e"}}, decl.PhaseFailed, 1, "", "e"},
		{"the split of the next failed", []decl.AgentInput{decl.PlannerFailed{Working: 1, Error: "e"}}, decl.PhaseFailed, 1, "", "e"},
		{"after a failure, the next request", []decl.AgentInput{decl.PlannerFailed{Working: 1, Error: "e"}, split(2)}, decl.PhaseResearching, 2, "", ""},
		{"after an answer, the next request starts afresh", []decl.AgentInput{split(1), decl.PlannerResearched{Working: 1, Research: "f"}, decl.PlannerWritten{Working: 1, Answer: "a"}, split(2)}, decl.PhaseResearching, 2, "", ""},
		{"a late failure of a request answered", []decl.AgentInput{split(1), decl.PlannerResearched{Working: 1, Research: "f"}, decl.PlannerWritten{Working: 1, Answer: "a"}, decl.PlannerFailed{Working: 1, Error: "e"}}, decl.PhaseDone, 1, "a", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			def := agent.Definition()
			s := def.Initial()
			for _, in := range c.inputs {
				s = def.Transition(s, in)
			}
			if s.Phase != c.phase || s.Working != c.working || s.Answer != c.answer || s.Error != c.err {
				t.Errorf("phase %s, working %d, answer %q, error %q; want %s, %d, %q, %q", s.Phase, s.Working, s.Answer, s.Error, c.phase, c.working, c.answer, c.err)
			}
		})
	}
}
