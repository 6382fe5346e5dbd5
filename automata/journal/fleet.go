package journal

import (
	"fmt"
	"time"
)

// Fleet keeps the journals of many agents, each under its id: one Store per
// agent, and a little metadata (AgentInfo) beside it. The bbolt fleet
// (package bolt) keeps them all in one file and commits the inputs of many
// agents in one transaction.
//
// A Fleet is safe for concurrent use. Each agent's Store is used by one
// Machine at a time: a second Open of an id whose Store is open fails with
// ErrInUse until the first is closed.
type Fleet interface {
	// Create adds the agent id, with no records, and info. It fails with
	// ErrAgentExists if the fleet has id already, and with an error
	// wrapping ErrInvalidAgentID if CheckAgentID refuses id.
	Create(id string, info AgentInfo) error
	// Open returns the Store of agent id; closing it releases it. It fails
	// with ErrNoAgent if the fleet has no agent id.
	Open(id string) (Store, error)
	// Info returns what Create was given for id, or ErrNoAgent.
	Info(id string) (AgentInfo, error)
	// List calls fn with each agent whose id sorts after the given one
	// (all agents for ""), in order of id, until fn returns an error (which
	// List returns; ErrStop ends the walk without one).
	List(after string, fn func(id string, info AgentInfo) error) error
	// Delete removes agent id and every record it has. It fails with
	// ErrNoAgent if there is none, and with ErrInUse while its Store is
	// open. The other agents are untouched.
	Delete(id string) error
	// Close releases the fleet. The agents' Stores must be closed first.
	Close() error
}

// AgentInfo is what a Fleet keeps about an agent besides its journal.
type AgentInfo struct {
	// Owner is the identity the agent belongs to (see package
	// automata/registry): whoever created it.
	Owner string `json:"owner"`
	// Created is when the agent was created.
	Created time.Time `json:"created"`
	// Fork, for an agent started as a fork of another (Machine.Fork), says
	// which and where; nil for any other.
	Fork *ForkOrigin `json:"fork,omitempty"`
	// Delegated, for a sub-agent another agent's job started (package
	// automata/delegate), says which agent and job; nil for any other.
	Delegated *Delegation `json:"delegated,omitempty"`
}

// Delegation is where a sub-agent came from: the job Job of agent Agent
// started it, Depth levels below an agent nobody delegated to (1: a child
// of such an agent).
type Delegation struct {
	Agent string `json:"agent"`
	Job   string `json:"job"`
	Depth int    `json:"depth"`
}

// ForkOrigin is where a forked agent came from: its inputs up to Seq are
// Agent's, in Agent's journal, and its own journal starts after them.
type ForkOrigin struct {
	Agent string `json:"agent"`
	Seq   uint64 `json:"seq"`
}

// MaxAgentIDLen is the longest agent id.
const MaxAgentIDLen = 64

// CheckAgentID says whether id may name an agent: 1 to MaxAgentIDLen
// characters among ASCII letters, digits, '-' and '_'. The set fits every
// store (a NATS subject token, a bbolt key, a URL path segment) without
// escaping.
func CheckAgentID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty", ErrInvalidAgentID)
	}
	if len(id) > MaxAgentIDLen {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrInvalidAgentID, len(id), MaxAgentIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("%w: %q has %q at byte %d; allowed are ASCII letters, digits, '-' and '_'", ErrInvalidAgentID, id, c, i)
		}
	}
	return nil
}
