package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/delegate"
	"github.com/moora-go/moora/automata/devpanel"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/registry"
	pdecl "github.com/moora-go/moora/examples/supervisor/planner/decl"
	pagent "github.com/moora-go/moora/examples/supervisor/planner/impl/agent"
	"github.com/moora-go/moora/examples/supervisor/planner/impl/transitions"
	rdecl "github.com/moora-go/moora/examples/supervisor/researcher/decl"
	ragent "github.com/moora-go/moora/examples/supervisor/researcher/impl/agent"
	wdecl "github.com/moora-go/moora/examples/supervisor/writer/decl"
	wagent "github.com/moora-go/moora/examples/supervisor/writer/impl/agent"
)

// The paths the fleets' devpanels are served under.
const (
	plannerPath    = "/planner"
	researcherPath = "/researcher"
	writerPath     = "/writer"
)

// Team is the three fleets of agents, each of its spec, in its registry on
// its bbolt file, with its devpanels: the planners, and the researchers and
// writers they delegate to. The operator owns every agent.
type Team struct {
	Models Models

	Planners    *registry.Registry[pdecl.AgentState, pdecl.AgentInput]
	Researchers *registry.Registry[rdecl.AgentState, rdecl.AgentInput]
	Writers     *registry.Registry[wdecl.AgentState, wdecl.AgentInput]

	toResearcher *delegate.Delegator[rdecl.AgentState, rdecl.AgentInput]
	toWriter     *delegate.Delegator[wdecl.AgentState, wdecl.AgentInput]
	handler      http.Handler
	fleets       []*bolt.Fleet
}

// OpenTeam opens the team's fleets in dir (planners.db, researchers.db,
// writers.db); its devpanels let in the operator of token.
func OpenTeam(dir, token string, models Models, logger *slog.Logger) (*Team, error) {
	t := &Team{Models: models}
	fail := func(err error) (*Team, error) { return nil, errors.Join(err, t.Close(context.Background())) }
	open := func(name string) (*bolt.Fleet, error) {
		f, err := bolt.OpenFleet(filepath.Join(dir, name))
		if err == nil {
			t.fleets = append(t.fleets, f)
		}
		return f, err
	}
	identify := httpbridge.Identities(token, nil)
	mux := http.NewServeMux()

	// The workers first: the planners' jobs delegate to them.
	rfleet, err := open("researchers.db")
	if err != nil {
		return fail(err)
	}
	rpanels, err := devpanel.NewFleet(devpanel.FleetConfig[rdecl.AgentState, rdecl.AgentInput]{
		Panel: devpanel.Config[rdecl.AgentState, rdecl.AgentInput]{
			Definition: ragent.Definition(), Decode: rdecl.DecodeInput, InputSchema: rdecl.InputSchema(),
			Jobs: func(s rdecl.AgentState) []string {
				return jobKeys("researcher", t.researcherJobs(s.ContextOfResearcher()))
			},
			Actor: func(in rdecl.AgentInput) string { return in.InputActor() },
			Notes: ResearcherNotes,
		},
		Identify:       identify,
		DelegatorPanel: plannerPanel,
	})
	if err != nil {
		return fail(err)
	}
	t.Researchers, err = registry.New(registry.Config[rdecl.AgentState, rdecl.AgentInput]{Fleet: rfleet, Logger: logger,
		Open: func(id string, s journal.Store) (*journal.Machine[rdecl.AgentState, rdecl.AgentInput], error) {
			return rpanels.OpenAgent(id, s, journal.Options[rdecl.AgentState, rdecl.AgentInput]{Codec: journal.JSONGob[rdecl.AgentState](rdecl.DecodeInput), JobKeys: true, Logger: logger},
				ragent.WithJobs(rdecl.JobFns{Researcher: t.researcherJobs}))
		}})
	if err != nil {
		return fail(err)
	}
	mux.Handle(researcherPath+"/", http.StripPrefix(researcherPath, rpanels.Handler(t.Researchers)))

	wfleet, err := open("writers.db")
	if err != nil {
		return fail(err)
	}
	wpanels, err := devpanel.NewFleet(devpanel.FleetConfig[wdecl.AgentState, wdecl.AgentInput]{
		Panel: devpanel.Config[wdecl.AgentState, wdecl.AgentInput]{
			Definition: wagent.Definition(), Decode: wdecl.DecodeInput, InputSchema: wdecl.InputSchema(),
			Jobs:  func(s wdecl.AgentState) []string { return jobKeys("writer", t.writerJobs(s.ContextOfWriter())) },
			Actor: func(in wdecl.AgentInput) string { return in.InputActor() },
			Notes: WriterNotes,
		},
		Identify:       identify,
		DelegatorPanel: plannerPanel,
	})
	if err != nil {
		return fail(err)
	}
	t.Writers, err = registry.New(registry.Config[wdecl.AgentState, wdecl.AgentInput]{Fleet: wfleet, Logger: logger,
		Open: func(id string, s journal.Store) (*journal.Machine[wdecl.AgentState, wdecl.AgentInput], error) {
			return wpanels.OpenAgent(id, s, journal.Options[wdecl.AgentState, wdecl.AgentInput]{Codec: journal.JSONGob[wdecl.AgentState](wdecl.DecodeInput), JobKeys: true, Logger: logger},
				wagent.WithJobs(wdecl.JobFns{Writer: t.writerJobs}))
		}})
	if err != nil {
		return fail(err)
	}
	mux.Handle(writerPath+"/", http.StripPrefix(writerPath, wpanels.Handler(t.Writers)))

	pfleet, err := open("planners.db")
	if err != nil {
		return fail(err)
	}
	pconfig := devpanel.Config[pdecl.AgentState, pdecl.AgentInput]{
		Definition: pagent.Definition(), Decode: pdecl.DecodeInput, InputSchema: pdecl.InputSchema(),
		Jobs:  func(s pdecl.AgentState) []string { return jobKeys("planner", t.plannerJobs("")(s.ContextOfPlanner())) },
		Actor: func(in pdecl.AgentInput) string { return in.InputActor() },
		Notes: Notes,
	}
	ppanels, err := devpanel.NewFleet(devpanel.FleetConfig[pdecl.AgentState, pdecl.AgentInput]{
		Panel:         pconfig,
		Identify:      identify,
		SubAgentPanel: SubAgentPanel,
	})
	if err != nil {
		return fail(err)
	}
	t.Planners, err = registry.New(registry.Config[pdecl.AgentState, pdecl.AgentInput]{Fleet: pfleet, Logger: logger,
		Open: func(id string, s journal.Store) (*journal.Machine[pdecl.AgentState, pdecl.AgentInput], error) {
			return ppanels.OpenAgent(id, s, journal.Options[pdecl.AgentState, pdecl.AgentInput]{Codec: journal.JSONGob[pdecl.AgentState](pdecl.DecodeInput), JobKeys: true, Logger: logger},
				pagent.WithJobs(pdecl.JobFns{Planner: t.plannerJobs(id)}))
		}})
	if err != nil {
		return fail(err)
	}
	mux.Handle(plannerPath+"/", http.StripPrefix(plannerPath, ppanels.Handler(t.Planners)))
	mux.Handle("GET /{$}", http.RedirectHandler(plannerPath+"/", http.StatusFound))

	if t.toResearcher, err = delegate.New(delegate.Config[rdecl.AgentState, rdecl.AgentInput]{
		Registry: t.Researchers, Owner: httpbridge.OperatorName, Parents: t.Planners.Info,
		Cancel: func() rdecl.AgentInput { return rdecl.LeadCancel{} },
	}); err != nil {
		return fail(err)
	}
	if t.toWriter, err = delegate.New(delegate.Config[wdecl.AgentState, wdecl.AgentInput]{
		Registry: t.Writers, Owner: httpbridge.OperatorName, Parents: t.Planners.Info,
		Cancel: func() wdecl.AgentInput { return wdecl.LeadCancel{} },
	}); err != nil {
		return fail(err)
	}
	t.handler = mux
	return t, nil
}

// Handler serves the devpanels: the planners' under /planner/, the
// researchers' under /researcher/, the writers' under /writer/; / is the
// planners'.
func (t *Team) Handler() http.Handler { return t.handler }

// Close closes the planners first (their jobs hold the workers), then the
// workers, then the fleets.
func (t *Team) Close(ctx context.Context) error {
	var errs []error
	if t.Planners != nil {
		errs = append(errs, t.Planners.Close(ctx))
	}
	if t.Researchers != nil {
		errs = append(errs, t.Researchers.Close(ctx))
	}
	if t.Writers != nil {
		errs = append(errs, t.Writers.Close(ctx))
	}
	for _, f := range t.fleets {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// The keys of the planner's jobs, without its actor's prefix: the split of
// request n by the planner's model, and its delegations.
func splitKey(n int64) string    { return fmt.Sprintf("split-%d", n) }
func researchKey(n int64) string { return fmt.Sprintf("research-%d", n) }
func writeKey(n int64) string    { return fmt.Sprintf("write-%d", n) }

// ResearcherOf is the id of the researcher that request n of planner
// delegates to; WriterOf, of the writer.
func ResearcherOf(planner string, n int64) string {
	return delegate.ChildID(planner, "planner/"+researchKey(n))
}
func WriterOf(planner string, n int64) string {
	return delegate.ChildID(planner, "planner/"+writeKey(n))
}

// SubAgentPanel is where the panel is of the worker a planner's job
// delegates to (FleetConfig.SubAgentPanel): the researchers' panels for
// its research, the writers' for its writing.
func SubAgentPanel(parent, key string) string {
	switch {
	case strings.HasPrefix(key, "planner/research-"):
		return researcherPath + "/agents/" + delegate.ChildID(parent, key) + "/"
	case strings.HasPrefix(key, "planner/write-"):
		return writerPath + "/agents/" + delegate.ChildID(parent, key) + "/"
	}
	return ""
}

// plannerPanel is where a worker's planner's panel is
// (FleetConfig.DelegatorPanel).
func plannerPanel(parent string) string { return plannerPath + "/agents/" + parent + "/" }

// plannerJobs are the jobs of planner id: with the planner between
// requests and a request it has not taken up, its model splits it; then it
// delegates the research to a researcher, then the writing, with the
// findings, to a writer.
func (t *Team) plannerJobs(id string) pdecl.JobsFnOfPlanner {
	return func(c pdecl.ContextOfPlanner) map[string]automata.Job[pdecl.AgentInput] {
		n := c.Working
		switch {
		case transitions.Between(c.Phase) && int64(len(c.Requests)) > n:
			n++
			request := c.Requests[n-1]
			return map[string]automata.Job[pdecl.AgentInput]{splitKey(n): func(ctx context.Context, dispatch automata.Dispatch[pdecl.AgentInput]) error {
				tasks, err := Split(ctx, t.Models.Planner, automata.JobKey(ctx), request)
				switch {
				case ctx.Err() != nil:
					return ctx.Err()
				case err != nil:
					dispatch(pdecl.PlannerFailed{Working: n, Error: err.Error()})
					return nil
				}
				dispatch(pdecl.PlannerSplit{Working: n, Request: request, ResearchTask: tasks.Research, WritingTask: tasks.Writing})
				return nil
			}}
		case c.Phase == pdecl.PhaseResearching:
			return map[string]automata.Job[pdecl.AgentInput]{researchKey(n): delegate.Job(t.toResearcher, id, rdecl.AgentInput(rdecl.LeadTask{Task: c.ResearchTask}),
				func(s rdecl.AgentState) (pdecl.AgentInput, bool) {
					return pdecl.PlannerResearched{Working: n, Research: s.Findings}, s.Findings != ""
				},
				func(err error) pdecl.AgentInput {
					return pdecl.PlannerFailed{Working: n, Error: "the research: " + err.Error()}
				})}
		case c.Phase == pdecl.PhaseWriting:
			return map[string]automata.Job[pdecl.AgentInput]{writeKey(n): delegate.Job(t.toWriter, id, wdecl.AgentInput(wdecl.LeadTask{Task: c.WritingTask, Research: c.Research}),
				func(s wdecl.AgentState) (pdecl.AgentInput, bool) {
					return pdecl.PlannerWritten{Working: n, Answer: s.Text}, s.Text != ""
				},
				func(err error) pdecl.AgentInput {
					return pdecl.PlannerFailed{Working: n, Error: "the writing: " + err.Error()}
				})}
		}
		return nil
	}
}

// researcherJobs: a researcher with a task wanted and no findings asks its
// model for them.
func (t *Team) researcherJobs(c rdecl.ContextOfResearcher) map[string]automata.Job[rdecl.AgentInput] {
	if c.Task == "" || c.Findings != "" || c.Cancelled {
		return nil
	}
	return map[string]automata.Job[rdecl.AgentInput]{"findings": func(ctx context.Context, dispatch automata.Dispatch[rdecl.AgentInput]) error {
		findings, err := Answer(ctx, t.Models.Researcher, automata.JobKey(ctx), researcherPrompt, c.Task)
		if err != nil {
			return fmt.Errorf("the researcher's model: %w", err)
		}
		dispatch(rdecl.ResearcherFindings{Findings: findings})
		return nil
	}}
}

// writerJobs: a writer with a task wanted and no text asks its model for
// it, giving it the findings.
func (t *Team) writerJobs(c wdecl.ContextOfWriter) map[string]automata.Job[wdecl.AgentInput] {
	if c.Task == "" || c.Text != "" || c.Cancelled {
		return nil
	}
	return map[string]automata.Job[wdecl.AgentInput]{"draft": func(ctx context.Context, dispatch automata.Dispatch[wdecl.AgentInput]) error {
		text, err := Answer(ctx, t.Models.Writer, automata.JobKey(ctx), writerPrompt, c.Task+findingsHeader+c.Research)
		if err != nil {
			return fmt.Errorf("the writer's model: %w", err)
		}
		dispatch(wdecl.WriterDraft{Text: text})
		return nil
	}}
}

// jobKeys are the keys of jobs as the agent reconciles them (prefixed with
// the actor), for the devpanel's Jobs monitor.
func jobKeys[I any](actor string, jobs map[string]automata.Job[I]) []string {
	var keys []string
	for k := range maps.Keys(jobs) {
		keys = append(keys, actor+"/"+k)
	}
	slices.Sort(keys)
	return keys
}

// Notes labels the planner's inputs on its timeline.
func Notes(before, after pdecl.AgentState, in pdecl.AgentInput) []devpanel.Note {
	switch in := in.(type) {
	case pdecl.UserAsk:
		return []devpanel.Note{{Type: "user.ask", Text: in.Request}}
	case pdecl.PlannerSplit:
		return []devpanel.Note{{Type: "planner.split", Text: fmt.Sprintf("request %d: research %q, then write %q", in.Working, in.ResearchTask, in.WritingTask)}}
	case pdecl.PlannerResearched:
		return []devpanel.Note{{Type: "researcher.findings", Text: in.Research}}
	case pdecl.PlannerWritten:
		return []devpanel.Note{{Type: "writer.text", Text: in.Answer}}
	case pdecl.PlannerFailed:
		return []devpanel.Note{{Type: "planner.failed", Text: in.Error}}
	}
	return nil
}

// ResearcherNotes labels a researcher's inputs on its timeline.
func ResearcherNotes(_, _ rdecl.AgentState, in rdecl.AgentInput) []devpanel.Note {
	switch in := in.(type) {
	case rdecl.LeadTask:
		return []devpanel.Note{{Type: "lead.task", Text: in.Task}}
	case rdecl.LeadCancel:
		return []devpanel.Note{{Type: "lead.cancel", Text: "the planner no longer wants the findings"}}
	case rdecl.ResearcherFindings:
		return []devpanel.Note{{Type: "researcher.findings", Text: in.Findings}}
	}
	return nil
}

// WriterNotes labels a writer's inputs on its timeline.
func WriterNotes(_, _ wdecl.AgentState, in wdecl.AgentInput) []devpanel.Note {
	switch in := in.(type) {
	case wdecl.LeadTask:
		return []devpanel.Note{{Type: "lead.task", Text: in.Task + findingsHeader + in.Research}}
	case wdecl.LeadCancel:
		return []devpanel.Note{{Type: "lead.cancel", Text: "the planner no longer wants the text"}}
	case wdecl.WriterDraft:
		return []devpanel.Note{{Type: "writer.text", Text: in.Text}}
	}
	return nil
}
