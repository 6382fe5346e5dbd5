// Package backend holds what the journal's backends (bolt, jetstream)
// share in their implementations of journal.Fleet, and no caller of a Fleet
// needs.
package backend

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/moora-go/moora/automata/journal"
)

// PassedOver gathers, for a Fleet's List, the damaged agents it passes over
// (listing the others) into the one error List returns once it is done.
type PassedOver struct {
	first *journal.CorruptError
	more  int
}

// Add notes a damaged agent passed over: err, or a *journal.CorruptError wrapping it.
func (p *PassedOver) Add(err error) {
	if p.first != nil {
		p.more++
		return
	}
	var ce *journal.CorruptError
	if !errors.As(err, &ce) {
		ce = &journal.CorruptError{Err: err}
	}
	p.first = ce
}

// Err returns nil when no agent was passed over; else the first one's
// *journal.CorruptError, saying how many more there were.
func (p *PassedOver) Err() error {
	switch {
	case p.first == nil:
		return nil
	case p.more == 0:
		return p.first
	}
	return &journal.CorruptError{Err: fmt.Errorf("%w; and %d more damaged agents were passed over", p.first.Err, p.more)}
}

// ListEntry is an agent a Fleet's List read: its id and info, or the
// damage that has List pass it over.
type ListEntry struct {
	ID   string
	Info journal.AgentInfo
	Err  error
}

// List is a Fleet's List: it calls fn with each agent read takes, a page at
// a time (read returns at most page entries, those after the id it is
// given, in order of id; a shorter page is the last), and none held
// between pages, so that fn may use the fleet. An entry with an error is
// passed over, and once the walk ends List returns the first of them,
// saying how many more there were (PassedOver); or fn's own error, ErrStop
// ending the walk without one.
func List(after string, page int, read func(after string) ([]ListEntry, error), fn func(id string, info journal.AgentInfo) error) error {
	var passed PassedOver
	for {
		entries, err := read(after)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.Err != nil {
				passed.Add(e.Err)
				continue
			}
			if err := fn(e.ID, e.Info); err != nil {
				if errors.Is(err, journal.ErrStop) {
					return passed.Err()
				}
				return err
			}
		}
		if len(entries) < page {
			return passed.Err()
		}
		after = entries[len(entries)-1].ID
	}
}

// DecodeAgentInfo reads an agent's stored AgentInfo (its JSON encoding)
// strictly: one JSON object with an "owner" and a "created" time, a "fork"
// (DecodeFork) and a "delegated" (DecodeDelegation) if any, no other member,
// and nothing after it. The error says what is wrong, as a phrase that
// follows the meta's name ("is not a JSON object"); the caller says where.
func DecodeAgentInfo(data []byte) (journal.AgentInfo, error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return journal.AgentInfo{}, errors.New("is not a JSON object")
	}
	var m struct {
		Owner   *string         `json:"owner"`
		Created *time.Time      `json:"created"`
		Fork    json.RawMessage `json:"fork"`
		Deleg   json.RawMessage `json:"delegated"`
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&m); err != nil {
		return journal.AgentInfo{}, fmt.Errorf("is not an AgentInfo: %v", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return journal.AgentInfo{}, errors.New("holds more than one JSON object")
	}
	switch {
	case m.Owner == nil:
		return journal.AgentInfo{}, errors.New("has no owner")
	case m.Created == nil:
		return journal.AgentInfo{}, errors.New("has no created time")
	}
	info := journal.AgentInfo{Owner: *m.Owner, Created: *m.Created}
	if m.Fork != nil {
		fork, err := DecodeFork(m.Fork)
		if err != nil {
			return journal.AgentInfo{}, fmt.Errorf("is not an AgentInfo: %v", err)
		}
		info.Fork = fork
	}
	if m.Deleg != nil {
		d, err := DecodeDelegation(m.Deleg)
		if err != nil {
			return journal.AgentInfo{}, fmt.Errorf("is not an AgentInfo: %v", err)
		}
		info.Delegated = d
	}
	return info, nil
}

// DecodeFork reads the member "fork" of an agent's stored AgentInfo
// strictly: an object with exactly an "agent", an id CheckAgentID takes, and
// a "seq", a positive integer.
func DecodeFork(data []byte) (*journal.ForkOrigin, error) {
	var f struct {
		Agent *string `json:"agent"`
		Seq   *uint64 `json:"seq"`
	}
	if err := decodeStrict(data, "fork", &f); err != nil {
		return nil, err
	}
	switch {
	case f.Agent == nil || f.Seq == nil:
		return nil, errors.New("member fork wants members agent and seq")
	case *f.Seq == 0:
		return nil, errors.New("member fork: seq 0")
	}
	if err := journal.CheckAgentID(*f.Agent); err != nil {
		return nil, fmt.Errorf("member fork: %w", err)
	}
	return &journal.ForkOrigin{Agent: *f.Agent, Seq: *f.Seq}, nil
}

// DecodeDelegation reads the member "delegated" of an agent's stored
// AgentInfo strictly: an object with exactly an "agent", an id CheckAgentID
// takes, a "job", a key of 1 to 512 bytes, and a "depth", a positive
// integer.
func DecodeDelegation(data []byte) (*journal.Delegation, error) {
	var d struct {
		Agent *string `json:"agent"`
		Job   *string `json:"job"`
		Depth *int    `json:"depth"`
	}
	if err := decodeStrict(data, "delegated", &d); err != nil {
		return nil, err
	}
	switch {
	case d.Agent == nil || d.Job == nil || d.Depth == nil:
		return nil, errors.New("member delegated wants members agent, job and depth")
	case len(*d.Job) == 0 || len(*d.Job) > 512:
		return nil, fmt.Errorf("member delegated: a job key of %d bytes, want 1 to 512", len(*d.Job))
	case *d.Depth < 1:
		return nil, fmt.Errorf("member delegated: depth %d", *d.Depth)
	}
	if err := journal.CheckAgentID(*d.Agent); err != nil {
		return nil, fmt.Errorf("member delegated: %w", err)
	}
	return &journal.Delegation{Agent: *d.Agent, Job: *d.Job, Depth: *d.Depth}, nil
}

// decodeStrict decodes data, the member name of an AgentInfo, into v: one
// JSON object, no member v does not have, nothing after it.
func decodeStrict(data []byte, name string, v any) error {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("member %s is not a JSON object", name)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("member %s: %w", name, err)
	}
	if _, err := d.Token(); err != io.EOF {
		return fmt.Errorf("member %s holds more than one JSON object", name)
	}
	return nil
}
