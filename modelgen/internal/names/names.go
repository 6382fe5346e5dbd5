// Package names turns the names of a spec (kebab-case actors and inputs,
// PascalCase $defs types, properties in any case) into the forms generated
// code and diagnostics use, and suggests the closest name for a misspelled
// one. It owns the case conversions; which Go identifier a spec element
// becomes is decided in package model.
package names

import (
	"fmt"
	"strings"
	"unicode"
)

// Words splits a spec name into words: at any character that is not a letter
// or digit, and at camel-case humps ("userID" -> user, ID; "HTTPServer" ->
// HTTP, Server).
func Words(s string) []string {
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

// PascalCase turns a kebab-, snake- or camel-case name into a Go name
// without initialisms: task-manager -> TaskManager, llm -> Llm.
func PascalCase(s string) string { return joinWords(s, false) }

// FieldName turns a property name into a Go field name with Go's common
// initialisms: id -> ID, userId -> UserID, apiURL -> APIURL.
func FieldName(s string) string { return joinWords(s, true) }

func joinWords(s string, initialisms bool) string {
	var b strings.Builder
	for _, w := range Words(s) {
		b.WriteString(title(w, initialisms))
	}
	return b.String()
}

// LowerCamel is the name generated code uses for variables and parameters:
// task-manager -> taskManager.
func LowerCamel(s string) string {
	ws := Words(s)
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

// KebabCase is the kebab-case form of a name, for suggestions.
func KebabCase(s string) string {
	ws := Words(s)
	for i, w := range ws {
		ws[i] = strings.ToLower(w)
	}
	return strings.Join(ws, "-")
}

// DidYouMean is the hint for a likely misspelling of suggestion, or
// otherwise.
func DidYouMean(suggestion, otherwise string) string {
	if suggestion == "" {
		return otherwise
	}
	return fmt.Sprintf("did you mean %q?", suggestion)
}

// Suggest returns the candidate closest to word when it is close enough to
// be a likely misspelling, or "".
func Suggest(word string, candidates []string) string {
	best, bestDist := "", -1
	for _, c := range candidates {
		dist := editDistance(strings.ToLower(word), strings.ToLower(c))
		limit := max(1, min(len(word), len(c))/3)
		if dist <= limit && (bestDist < 0 || dist < bestDist) {
			best, bestDist = c, dist
		}
	}
	return best
}

// editDistance is the Damerau-Levenshtein distance (with adjacent
// transpositions) between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
