package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docSnippets are the documents whose Go snippets must be code an Example
// runs: the README (but for the walkthrough, which TestReadmeWalkthrough
// runs whole), and the package docs that show how to wire an agent.
var docSnippets = []string{
	"README.md",
	"automata/journal/doc.go",
	"automata/journal/bolt/doc.go",
	"automata/journal/pebble/doc.go",
	"automata/httpbridge/doc.go",
	"automata/devpanel/doc.go",
	"automata/registry/doc.go",
	"automata/agents/reflexor/doc.go",
	"automata/agents/persistent/doc.go",
	"impl/agent/create.go",
}

// TestDocSnippetsAreExamples checks that the Go the documentation shows is
// code that compiles, and runs: each line of each snippet (but for lines
// with "...", which stand for code left out, and comments) is a line of
// some Example function of the repository, its comment aside and its
// spaces collapsed. A signature that changes breaks the Example, and the
// snippet that still shows the old one fails here.
func TestDocSnippetsAreExamples(t *testing.T) {
	root := filepath.Join("..", "..")
	examples := exampleLines(t, root)
	for _, doc := range docSnippets {
		for _, s := range goSnippets(t, root, doc) {
			for i, l := range strings.Split(s.body, "\n") {
				n := normalizeLine(l)
				if n == "" || strings.Contains(n, "...") || strings.Contains(n, "…") {
					continue
				}
				if !examples[n] {
					t.Errorf("%s:%d: %q is in no Example function", doc, s.line+i+1, strings.TrimSpace(l))
				}
			}
		}
	}
}

// goSnippets returns the Go snippets of a document: the go blocks of a
// Markdown file outside the walkthrough, or the indented blocks of a Go
// file's package comment that are Go statements (once the lines with "..."
// are left out), not tables or output.
func goSnippets(t *testing.T, root, doc string) []block {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	lines := strings.Split(string(data), "\n")
	if strings.HasSuffix(doc, ".md") {
		inWalkthrough := false
		var cur *block
		for i, l := range lines {
			switch {
			case cur == nil && strings.HasPrefix(l, "## "):
				inWalkthrough = l == walkthrough
			case cur == nil && l == "```go" && !inWalkthrough:
				cur = &block{lang: "go", line: i + 1}
			case cur != nil && l == "```":
				out = append(out, *cur)
				cur = nil
			case cur != nil:
				cur.body += l + "\n"
			}
		}
		return out
	}
	var cur *block
	for i, l := range lines {
		code, ok := strings.CutPrefix(l, "//\t")
		if ok {
			if cur == nil {
				cur = &block{lang: "go", line: i}
			}
			cur.body += code + "\n"
			continue
		}
		if cur != nil && strings.Contains(cur.body, "(") && isStatements(cur.body) {
			out = append(out, *cur)
		}
		cur = nil
		if strings.HasPrefix(l, "package ") {
			break
		}
	}
	return out
}

// isStatements says whether a block of text is Go statements, but for its
// lines with "..." or "…".
func isStatements(body string) bool {
	var b strings.Builder
	for l := range strings.Lines(body) {
		if !strings.Contains(l, "...") && !strings.Contains(l, "…") {
			b.WriteString(l)
		}
	}
	_, err := parser.ParseFile(token.NewFileSet(), "", "package p\nfunc _() {\n"+b.String()+"\n}\n", parser.SkipObjectResolution)
	return err == nil
}

// exampleLines returns the lines of every Example function in the
// repository's tests, normalized.
func exampleLines(t *testing.T, root string) map[string]bool {
	t.Helper()
	lines := make(map[string]bool)
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Example") {
				continue
			}
			body := src[fset.Position(fn.Body.Pos()).Offset:fset.Position(fn.Body.End()).Offset]
			for l := range strings.Lines(string(body)) {
				if n := normalizeLine(l); n != "" {
					lines[n] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// normalizeLine is a line of Go without its trailing comment, its leading
// and trailing space, and with its runs of spaces and tabs made one space;
// "" for a comment line.
func normalizeLine(l string) string {
	l = strings.TrimSpace(l)
	if strings.HasPrefix(l, "//") {
		return ""
	}
	if i := strings.Index(l, " // "); i >= 0 {
		l = l[:i]
	}
	return strings.Join(strings.Fields(l), " ")
}
