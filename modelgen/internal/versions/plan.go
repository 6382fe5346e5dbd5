package versions

import (
	"fmt"
	"slices"

	"github.com/moora-go/moora/modelgen/internal/evolve"
	"github.com/moora-go/moora/modelgen/internal/model"
	"github.com/moora-go/moora/modelgen/internal/spec"
)

// Plan is what a history and the spec make together: the history to write,
// with the spec as its newest version, and each step between two versions
// with what it needs.
type Plan struct {
	// History is the history to write.
	History *History
	// Current is the spec's version, the newest of History.
	Current int
	// Pending are the changes from the newest version of the history as
	// read to the spec: what generate records as a new version. Nil when
	// the spec is that version, or the history was empty.
	Pending []evolve.Change
	// New says that History has a version the history as read has not.
	New bool
	// Amended says that the spec's shapes replaced the newest version's.
	Amended bool
	// Steps are the steps from each version to the next, oldest first.
	Steps []*Step
	// Model is the spec's model.
	Model *model.Model
}

// Step is what changed from version From to From+1.
type Step struct {
	From    int
	Changes []evolve.Change
	// Inputs are the input types of version From whose records need a
	// migration (their shape changed in a breaking way, or they were
	// removed), in the order of that version's inputs: by actor, then name.
	Inputs []*StepInput
	// State says that the state needs a migration: its shape changed in a
	// breaking way.
	State bool
	// StateChanged says that the state's shape changed: without a
	// migration, a snapshot of version From is replayed over, unless
	// StateDecodes.
	StateChanged bool
	// StateDecodes says that the state changed, compatibly, only in ways
	// a snapshot of version From decodes through as it is
	// (evolve.Change.Decodes): it is decoded into version From+1's state,
	// with no migration to write and no replay.
	StateDecodes bool
	// StateConverts says that the state changed, compatibly, in ways that
	// a snapshot of version From does not decode through as it is (a
	// value nullable or optional now, an integer now a number, an enum
	// now a string, a oneOf variant added: gob does not keep a zero value
	// behind a pointer), but with no new state property (whose value a
	// replay computes): the generated conversion brings the state up, with
	// nothing to write and no replay.
	StateConverts bool
	// Old and New are the models of versions From and From+1, set when
	// the step needs a migration or the state changed (a state migration
	// is then optional); New is Plan.Model when From+1 is the spec's
	// version.
	Old, New *model.Model
	// Src is the document of version From+1, where the changes are.
	Src *spec.Source
}

// NeedsCode says whether the step needs migrations.
func (s *Step) NeedsCode() bool { return s.State || len(s.Inputs) > 0 }

// StepInput is one input type a step migrates.
type StepInput struct {
	Name string
	Old  *model.Input // in version From
	New  *model.Input // in version From+1; nil when the type was removed
}

// NewPlan plans the history of the spec whose model is m, from the history
// h read beside it. With amend, a spec whose shapes changed replaces the
// newest version instead of adding one: for a version no agent ran.
func NewPlan(h *History, m *model.Model, amend bool) (*Plan, error) {
	cur := &Version{Src: m.Src, model: m}
	sp, err := spec.Decode(m.Src.Root())
	if err != nil {
		return nil, err
	}
	cur.sp = sp
	p := &Plan{Model: m, History: &History{File: h.File, Versions: slices.Clone(h.Versions)}}
	if newest := h.Newest(); newest == nil {
		cur.Number, p.New = 1, true
		p.History.Versions = append(p.History.Versions, cur)
	} else {
		old, err := newest.Spec()
		if err != nil {
			return nil, err
		}
		p.Pending = evolve.Compare(old, sp)
		if len(p.Pending) == 0 || amend {
			// The same shapes (or amend): the spec's text replaces the
			// newest's.
			p.Amended = len(p.Pending) > 0
			cur.Number = newest.Number
			p.History.Versions[len(p.History.Versions)-1] = cur
		} else {
			cur.Number, p.New = newest.Number+1, true
			p.History.Versions = append(p.History.Versions, cur)
		}
	}
	p.Current = cur.Number
	vs := p.History.Versions
	for i := 0; i+1 < len(vs); i++ {
		step, err := p.step(vs[i], vs[i+1])
		if err != nil {
			return nil, err
		}
		p.Steps = append(p.Steps, step)
	}
	return p, nil
}

func (p *Plan) step(from, to *Version) (*Step, error) {
	a, err := from.Spec()
	if err != nil {
		return nil, err
	}
	b, err := to.Spec()
	if err != nil {
		return nil, err
	}
	s := &Step{From: from.Number, Changes: evolve.Compare(a, b), Src: to.Src}
	breaking := make(map[string]bool)
	decodes, newProperty := true, false
	for _, c := range s.Changes {
		switch {
		case c.Input == "":
			s.StateChanged = true
			s.State = s.State || c.Breaking
			decodes = decodes && c.Decodes
			newProperty = newProperty || c.What == evolve.NewStateProperty
		case c.Breaking:
			breaking[c.Input] = true
		}
	}
	s.StateDecodes = s.StateChanged && !s.State && decodes
	s.StateConverts = s.StateChanged && !s.State && !decodes && !newProperty
	if !s.NeedsCode() && !s.StateChanged && len(breaking) == 0 {
		return s, nil
	}
	if s.Old, err = from.Model(p.Model.Package); err != nil {
		return nil, err
	}
	if s.New, err = to.Model(p.Model.Package); err != nil {
		return nil, err
	}
	for _, in := range s.Old.Inputs {
		if !breaking[in.Name] {
			continue
		}
		si := &StepInput{Name: in.Name, Old: in}
		if i := slices.IndexFunc(s.New.Inputs, func(n *model.Input) bool { return n.Name == in.Name }); i >= 0 {
			si.New = s.New.Inputs[i]
		}
		s.Inputs = append(s.Inputs, si)
	}
	if len(s.Inputs) != len(breaking) {
		return nil, fmt.Errorf("versions: step %d to %d: the breaking changes name inputs that version %d does not have", s.From, s.From+1, s.From)
	}
	return s, nil
}

// Pos is the position of a change of step s (or of the pending changes,
// for s nil) in its document.
func (p *Plan) Pos(s *Step, c evolve.Change) spec.Pos {
	src := p.Model.Src
	if s != nil {
		src = s.Src
	}
	if c.Ptr == "" {
		return spec.Pos{File: src.File(), Line: 1, Col: 1}
	}
	return src.ValuePos(c.Ptr)
}
