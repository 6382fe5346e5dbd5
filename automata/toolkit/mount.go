package toolkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Mount is a set of a kit's tools that changes while the kit runs, such
// as an MCP server's (package toolkit/mcp keeps one in step with its
// server's tool list). Make one with Kit.Mount, give it its tools with
// Set, as often as they change, and remove them with Close. Its tools are
// under every guard of the kit's others (see the package doc, "Guards").
//
// A tool of a mount whose name is already taken — by a tool given to New,
// or by a tool of a mount mounted before it — is given the mount's prefix
// (its name is prefix+name); when that is taken too, or is not a name a
// chat API takes, or the mount has no prefix, the tool is left out, and
// Set says so. Names are given again at every change of any mount, in that
// order of precedence, so that the same tools make the same names however
// they arrived: a tool whose name a mount before it takes later is renamed
// then.
//
// A tool Set again with the same name, description, parameters and
// policy limits keeps its circuit breaker and its slots (and the Allow and
// Filter of its policy as first given); one that changed starts afresh,
// and the calls of it that are running end as they would have.
type Mount struct {
	k      *Kit
	prefix string
	// Guarded by k.mu.
	given   []*entry          // as Set gave them, under their given names, in order
	entries map[string]*entry // what is in the kit's set, by name in the kit
	names   []string          // the names in the kit of given, in order, those left out left out
	closed  bool
}

// Mount adds a mount to the kit, after the tools given to New and the
// mounts before it; prefix is what a tool of it whose name is taken is
// given ("" leaves such a tool out). It has no tools until Set.
func (k *Kit) Mount(prefix string) *Mount {
	m := &Mount{k: k, prefix: prefix, entries: map[string]*entry{}}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.mounts = append(k.mounts, m)
	return m
}

// Set makes tools the mount's tools, in that order, in place of those it
// had. A tool that is wrong — as New would say, or whose name is taken (see
// Mount) — is left out and the others are set: the error lists each left
// out and why. After Close, Set sets nothing.
func (m *Mount) Set(tools ...Tool) error {
	k := m.k
	k.mu.Lock()
	defer k.mu.Unlock()
	if m.closed {
		return errors.New("toolkit: Set on a closed mount")
	}
	var errs []error
	given := make([]*entry, 0, len(tools))
	byName := make(map[string]*entry, len(tools))
	old := make(map[string]*entry, len(m.given))
	for _, e := range m.given {
		old[e.name] = e
	}
	for _, t := range tools {
		if o := old[t.name]; o != nil && t.err == nil && byName[t.name] == nil && same(o.Tool, t) {
			given = append(given, o)
			byName[t.name] = o
			continue
		}
		e, err := k.entry(t, byName)
		if err != nil {
			errs = append(errs, fmt.Errorf("toolkit: tool %q left out: %w", clip(t.name, maxNameBytes), err))
			continue
		}
		given = append(given, e)
		byName[t.name] = e
	}
	m.given = given
	errs = append(errs, k.rebuild(m)...)
	return errors.Join(errs...)
}

// same says whether t is o, given again: the same name, description and
// parameters, under the same policy settings that can be compared (not
// its funcs, Allow and Filter: a tool kept keeps those it was first given).
func same(o, t Tool) bool {
	p, err := t.policy.withDefaults()
	if err != nil {
		return false
	}
	q := o.policy
	params := t.parameters
	if len(params) == 0 {
		params = json.RawMessage(noParameters)
	}
	return o.name == t.name && o.description == t.description && bytes.Equal(o.parameters, params) &&
		o.remote == t.remote && o.url == t.url &&
		p.Timeout == q.Timeout && p.Retries == q.Retries && p.Backoff == q.Backoff &&
		p.MaxConcurrent == q.MaxConcurrent && p.MaxResultBytes == q.MaxResultBytes &&
		p.BreakerFailures == q.BreakerFailures && p.BreakerCooldown == q.BreakerCooldown
}

// Close removes the mount's tools from the kit; the calls of them that are
// running end as they would have. Close is idempotent.
func (m *Mount) Close() {
	k := m.k
	k.mu.Lock()
	defer k.mu.Unlock()
	if m.closed {
		return
	}
	m.closed = true
	m.given = nil
	for i, o := range k.mounts {
		if o == m {
			k.mounts = append(k.mounts[:i:i], k.mounts[i+1:]...)
			break
		}
	}
	k.rebuild(nil)
}

// Names returns the names in the kit of the mount's tools, in the order
// Set gave them, those left out left out.
func (m *Mount) Names() []string {
	m.k.mu.Lock()
	defer m.k.mu.Unlock()
	return append([]string(nil), m.names...)
}

// rebuild gives every mount's tools their names again, in order of
// precedence, and stores the kit's new toolset. It returns what it left
// out of changed (nil: of none), the mount whose Set called it: the others
// were told of theirs when they changed. k.mu is held.
func (k *Kit) rebuild(changed *Mount) []error {
	var errs []error
	set := &toolset{byName: make(map[string]*entry, len(k.fixed))}
	for _, e := range k.fixed {
		set.tools = append(set.tools, e)
		set.byName[e.name] = e
	}
	for _, m := range k.mounts {
		entries := make(map[string]*entry, len(m.given))
		m.names = m.names[:0]
		for _, g := range m.given {
			name := g.name
			if set.byName[name] != nil {
				name = m.prefix + g.name
				why := ""
				switch {
				case m.prefix == "":
					why = "the mount has no prefix"
				case set.byName[name] != nil:
					why = fmt.Sprintf("so is %q, with the mount's prefix", name)
				case !validName(name):
					why = fmt.Sprintf("%q, with the mount's prefix, is not 1 to 64 letters, digits, '_' or '-'", name)
				}
				if why != "" {
					if m == changed {
						errs = append(errs, fmt.Errorf("toolkit: tool %q left out: its name is taken by another tool and %s", g.name, why))
					}
					continue
				}
			}
			e := g
			if name != g.name {
				// Renamed: an entry of its own under that name, kept
				// while the name holds.
				if o := m.entries[name]; o != nil && o.given == g {
					e = o
				} else {
					e = &entry{Tool: g.Tool, slots: g.slots, given: g}
					e.name = name
					if k.tel != nil {
						e.tel = k.tel.of(e)
					}
				}
			}
			entries[name] = e
			m.names = append(m.names, name)
			set.tools = append(set.tools, e)
			set.byName[name] = e
		}
		m.entries = entries
	}
	k.set.Store(set)
	return errs
}

// names lists the set's tools' names, for an error: cut to at most
// maxNamesBytes.
func (s *toolset) names() string {
	var b strings.Builder
	for i, e := range s.tools {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(e.name)
		if b.Len() > maxNamesBytes {
			return clip(b.String(), maxNamesBytes) + fmt.Sprintf(" (%d tools)", len(s.tools))
		}
	}
	return b.String()
}

// maxNamesBytes bounds the list of tools an error about a name that is no
// tool's gives: a mount may bring many.
const maxNamesBytes = 2 << 10
