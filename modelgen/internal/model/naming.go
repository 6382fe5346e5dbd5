package model

import (
	"go/token"
	"go/types"
	"strings"

	"github.com/moora-go/moora/modelgen/internal/spec"
)

// reservedWord says whether a Go identifier is a keyword or a predeclared
// name, and which.
func reservedWord(id string) (string, bool) {
	if token.IsKeyword(id) {
		return "a Go keyword", true
	}
	if types.Universe.Lookup(id) != nil {
		return "a predeclared Go identifier", true
	}
	return "", false
}

// nameTable resolves the package-level identifiers of a generated package
// (or the members of one type) and reports two spec elements claiming one.
type nameTable struct {
	d     *spec.Diags
	owner map[string]nameOwner
}

type nameOwner struct {
	what string // "input \"send-message\""
	ptr  string // "" for names agentgen itself declares
}

func newNameTable(d *spec.Diags) *nameTable {
	return &nameTable{d: d, owner: make(map[string]nameOwner)}
}

// reserve claims names for agentgen itself.
func (t *nameTable) reserve(what string, names ...string) {
	for _, n := range names {
		t.owner[n] = nameOwner{what: what}
	}
}

// claim claims id for the spec element at ptr, reporting a clash at ptr.
// It reports false on a clash.
func (t *nameTable) claim(id, what, ptr, hint string) bool {
	prev, taken := t.owner[id]
	if !taken {
		t.owner[id] = nameOwner{what: what, ptr: ptr}
		return true
	}
	if prev.ptr == "" {
		// A name agentgen reserved: there is no other element to rename.
		if !strings.HasPrefix(hint, "move ") {
			hint = "rename it"
		}
		t.d.AtKey(ptr, "its Go name "+id+" is taken by "+prev.what, hint)
	} else {
		p := t.d.Src.KeyPos(prev.ptr)
		t.d.AtKey(ptr, "its Go name "+id+" is also the Go name of "+prev.what+" ("+posShort(p)+")", hint)
	}
	return false
}

// observationHint says what to rename when the Go name of an observation,
// which joins the names of its two actors, is already taken by the element
// holding id.
func (t *nameTable) observationHint(id string) string {
	prev := t.owner[id]
	switch {
	case strings.HasPrefix(prev.ptr, "/$defs/") && strings.Count(prev.ptr, "/") == 2:
		return "rename the $defs type"
	case strings.HasPrefix(prev.what, "observation "):
		return "rename one of the actors: the Go names of both observations join the names of their observer and target with Ob"
	}
	return "rename one of the actors, or " + prev.what
}

func posShort(p Pos) string {
	return strings.TrimPrefix(p.String(), p.File+":")
}
