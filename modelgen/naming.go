package modelgen

import (
	"go/token"
	"strings"
	"unicode"
)

// words splits a spec name into words: at any character that is not a letter
// or digit, and at camel-case humps ("userID" -> user, ID; "HTTPServer" ->
// HTTP, Server).
func words(s string) []string {
	var out []string
	rs := []rune(s)
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, string(rs[start:end]))
		}
		start = -1
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := rs[i-1]
		switch {
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			flush(i)
			start = i
		case unicode.IsUpper(r) && unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
			flush(i)
			start = i
		}
	}
	flush(len(rs))
	return out
}

// commonInitialisms are the initialisms Go spells in capitals (the golint
// list). LLM is not one of them: the actor llm is Llm.
var commonInitialisms = map[string]bool{
	"ACL": true, "API": true, "ASCII": true, "CPU": true, "CSS": true, "DNS": true,
	"EOF": true, "GUID": true, "HTML": true, "HTTP": true, "HTTPS": true, "ID": true,
	"IP": true, "JSON": true, "LHS": true, "QPS": true, "RAM": true, "RHS": true,
	"RPC": true, "SLA": true, "SMTP": true, "SQL": true, "SSH": true, "TCP": true,
	"TLS": true, "TTL": true, "UDP": true, "UI": true, "UID": true, "UUID": true,
	"URI": true, "URL": true, "UTF8": true, "VM": true, "XML": true, "XMPP": true,
	"XSRF": true, "XSS": true,
}

// title capitalizes a word; a word in all capitals is treated as an ordinary
// word ("IN_PROGRESS" -> InProgress).
func title(w string, initialisms bool) string {
	up := strings.ToUpper(w)
	if initialisms && commonInitialisms[up] {
		return up
	}
	rs := []rune(w)
	if up == w {
		rs = []rune(strings.ToLower(w))
	}
	rs[0] = unicode.ToUpper(rs[0])
	return string(rs)
}

// pascalCase turns a kebab-, snake- or camel-case name into a Go name
// without initialisms: task-manager -> TaskManager, llm -> Llm.
func pascalCase(s string) string { return joinWords(s, false) }

// fieldName turns a property name into a Go field name with Go's common
// initialisms: id -> ID, userId -> UserID, apiURL -> APIURL.
func fieldName(s string) string { return joinWords(s, true) }

func joinWords(s string, initialisms bool) string {
	var b strings.Builder
	for _, w := range words(s) {
		b.WriteString(title(w, initialisms))
	}
	return b.String()
}

// lowerCamel is the name generated code uses for variables and parameters:
// task-manager -> taskManager.
func lowerCamel(s string) string {
	ws := words(s)
	if len(ws) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(strings.ToLower(ws[0]))
	for _, w := range ws[1:] {
		b.WriteString(title(w, false))
	}
	return b.String()
}

// kebabCase is the kebab-case form of a name, for suggestions.
func kebabCase(s string) string {
	ws := words(s)
	for i, w := range ws {
		ws[i] = strings.ToLower(w)
	}
	return strings.Join(ws, "-")
}

var predeclared = map[string]bool{
	"any": true, "bool": true, "byte": true, "comparable": true, "complex64": true,
	"complex128": true, "error": true, "float32": true, "float64": true, "int": true,
	"int8": true, "int16": true, "int32": true, "int64": true, "rune": true,
	"string": true, "uint": true, "uint8": true, "uint16": true, "uint32": true,
	"uint64": true, "uintptr": true, "true": true, "false": true, "iota": true,
	"nil": true, "append": true, "cap": true, "clear": true, "close": true,
	"complex": true, "copy": true, "delete": true, "imag": true, "len": true,
	"make": true, "max": true, "min": true, "new": true, "panic": true,
	"print": true, "println": true, "real": true, "recover": true,
}

// reservedWord says whether a Go identifier is a keyword or a predeclared
// name, and which.
func reservedWord(id string) (string, bool) {
	if token.IsKeyword(id) {
		return "a Go keyword", true
	}
	if predeclared[id] {
		return "a predeclared Go identifier", true
	}
	return "", false
}

// nameTable resolves the package-level identifiers of a generated package
// (or the members of one type) and reports two spec elements claiming one.
type nameTable struct {
	d     *diags
	owner map[string]nameOwner
}

type nameOwner struct {
	what string // "input \"send-message\""
	ptr  string // "" for names agentgen itself declares
}

func newNameTable(d *diags) *nameTable {
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
		t.d.atKey(ptr, "its Go name "+id+" is taken by "+prev.what, hint)
	} else {
		p := t.d.src.keyPos(prev.ptr)
		t.d.atKey(ptr, "its Go name "+id+" is also the Go name of "+prev.what+" ("+posShort(p)+")", hint)
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
