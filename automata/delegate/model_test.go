package delegate_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/delegate"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/registry"
)

// The parent of these tests asks for tasks and keeps their results; each
// task is delegated to a child, which answers it with the task upper-cased
// once its work (a job) is let through.
type (
	parentState struct {
		Tasks   []string          `json:"tasks"` // asked, without a result
		Results map[string]string `json:"results"`
	}
	parentInput struct {
		Ask    string `json:"ask,omitempty"`
		Drop   string `json:"drop,omitempty"` // the parent no longer wants the task
		Task   string `json:"task,omitempty"` // with Result: a task's result
		Result string `json:"result,omitempty"`
	}
	childState struct {
		Task      string `json:"task"`
		Answer    string `json:"answer"`
		Cancelled bool   `json:"cancelled"`
	}
	childInput struct {
		Task   string `json:"task,omitempty"`
		Answer string `json:"answer,omitempty"`
		Cancel bool   `json:"cancel,omitempty"`
	}
)

var parentModel = automata.Definition[parentState, parentInput]{
	Initial: func() parentState { return parentState{} },
	Transition: func(s parentState, in parentInput) parentState {
		switch {
		case in.Ask != "":
			s.Tasks = automata.Append(s.Tasks, in.Ask)
		case in.Drop != "":
			s.Tasks = slices.DeleteFunc(slices.Clone(s.Tasks), func(t string) bool { return t == in.Drop })
		case in.Task != "" && slices.Contains(s.Tasks, in.Task):
			s.Tasks = slices.DeleteFunc(slices.Clone(s.Tasks), func(t string) bool { return t == in.Task })
			results := map[string]string{}
			for k, v := range s.Results {
				results[k] = v
			}
			results[in.Task] = in.Result
			s.Results = results
		}
		return s
	},
}

var childModel = automata.Definition[childState, childInput]{
	Initial: func() childState { return childState{} },
	Transition: func(s childState, in childInput) childState {
		switch {
		case in.Task != "":
			s.Task = in.Task
		case in.Answer != "" && !s.Cancelled:
			s.Answer = in.Answer
		case in.Cancel:
			s.Cancelled = true
		}
		return s
	},
}

// childWork is the child's job: it answers the task once let lets it (nil:
// at once).
func childWork(let func(ctx context.Context, task string) error) automata.Option[childState, childInput] {
	return automata.WithJobs(func(s childState) map[string]automata.Job[childInput] {
		if s.Task == "" || s.Answer != "" || s.Cancelled {
			return nil
		}
		return map[string]automata.Job[childInput]{"work": func(ctx context.Context, dispatch automata.Dispatch[childInput]) error {
			if let != nil {
				if err := let(ctx, s.Task); err != nil {
					return err
				}
			}
			dispatch(childInput{Answer: strings.ToUpper(s.Task)})
			return nil
		}}
	})
}

// parentJobs delegates each task of agent id's state.
func parentJobs(d *delegate.Delegator[childState, childInput], id string) automata.Option[parentState, parentInput] {
	return automata.WithJobs(func(s parentState) map[string]automata.Job[parentInput] {
		jobs := map[string]automata.Job[parentInput]{}
		for _, task := range s.Tasks {
			jobs["task/"+task] = delegate.Job(d, id, childInput{Task: task},
				func(c childState) (parentInput, bool) {
					return parentInput{Task: task, Result: c.Answer}, c.Answer != ""
				},
				func(err error) parentInput { return parentInput{Task: task, Result: "failed: " + err.Error()} })
		}
		return jobs
	})
}

// team is a parent registry and a child registry, each on a bbolt fleet
// of its own in dir.
type team struct {
	parents  *registry.Registry[parentState, parentInput]
	children *registry.Registry[childState, childInput]
	d        *delegate.Delegator[childState, childInput]
	pfleet   *bolt.Fleet
	cfleet   *bolt.Fleet
}

func openTeam(t testing.TB, dir string, cfg delegate.Config[childState, childInput], let func(ctx context.Context, task string) error) *team {
	t.Helper()
	return openTeamWith(t, dir, cfg, let, nil)
}

// openTeamWith is openTeam with jobs as the parents' jobs (nil: parentJobs).
func openTeamWith(t testing.TB, dir string, cfg delegate.Config[childState, childInput], let func(ctx context.Context, task string) error,
	jobs func(tm *team, id string) automata.Option[parentState, parentInput]) *team {
	t.Helper()
	if jobs == nil {
		jobs = func(tm *team, id string) automata.Option[parentState, parentInput] { return parentJobs(tm.d, id) }
	}
	quiet := slog.New(slog.DiscardHandler)
	tm := &team{}
	var err error
	if tm.cfleet, err = bolt.OpenFleet(filepath.Join(dir, "children.db")); err != nil {
		t.Fatal(err)
	}
	if tm.pfleet, err = bolt.OpenFleet(filepath.Join(dir, "parents.db")); err != nil {
		t.Fatal(err)
	}
	tm.children, err = registry.New(registry.Config[childState, childInput]{Fleet: tm.cfleet, Logger: quiet,
		Open: func(_ string, s journal.Store) (*journal.Machine[childState, childInput], error) {
			return journal.Open(s, childModel, journal.Options[childState, childInput]{Codec: journal.JSON[childState, childInput](nil), Logger: quiet}, childWork(let))
		}})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Registry, cfg.Owner = tm.children, "team"
	if cfg.Cancel == nil {
		cfg.Cancel = func() childInput { return childInput{Cancel: true} }
	}
	if tm.d, err = delegate.New(cfg); err != nil {
		t.Fatal(err)
	}
	tm.parents, err = registry.New(registry.Config[parentState, parentInput]{Fleet: tm.pfleet, Logger: quiet,
		Open: func(id string, s journal.Store) (*journal.Machine[parentState, parentInput], error) {
			return journal.Open(s, parentModel, journal.Options[parentState, parentInput]{Codec: journal.JSON[parentState, parentInput](nil), Logger: quiet}, jobs(tm, id))
		}})
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// close closes the parents first (their jobs hold the children), then the
// children, then the fleets.
func (tm *team) close(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	if err := tm.parents.Close(ctx); err != nil {
		t.Error(err)
	}
	if err := tm.children.Close(ctx); err != nil {
		t.Error(err)
	}
	if err := tm.pfleet.Close(); err != nil {
		t.Error(err)
	}
	if err := tm.cfleet.Close(); err != nil {
		t.Error(err)
	}
}

// children lists the ids of the team's children with their info.
func (tm *team) childInfos(t testing.TB) map[string]journal.AgentInfo {
	t.Helper()
	infos := map[string]journal.AgentInfo{}
	err := tm.children.List("", func(id string, info journal.AgentInfo) error {
		infos[id] = info
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return infos
}
