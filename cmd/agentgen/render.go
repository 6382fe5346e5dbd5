package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/moora-go/moora/modelgen"
)

// printDiagnostics prints the diagnostics, one a line. On a terminal each
// is followed by its line of the spec with a caret under its column, as
// go vet and the Rust compiler show them.
func printDiagnostics(w io.Writer, ds []modelgen.Diagnostic) {
	show := isTerminal(w)
	files := make(map[string][]byte)
	for _, d := range ds {
		fmt.Fprintln(w, d)
		if !show || d.Line == 0 {
			continue
		}
		data, ok := files[d.File]
		if !ok {
			data, _ = os.ReadFile(d.File)
			files[d.File] = data
		}
		io.WriteString(w, excerpt(data, d.Line, d.Col))
	}
}

// isTerminal says whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// excerpt shows line of data with a caret under column col (in characters;
// 0 for none), or "" when data has no such line:
//
//	7 |      b: {type: string}
//	  |      ^
func excerpt(data []byte, line, col int) string {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	lines := strings.Split(string(data), "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	text := strings.TrimRight(lines[line-1], "\r")
	num := strconv.Itoa(line)
	gutter := strings.Repeat(" ", len(num))
	var b strings.Builder
	fmt.Fprintf(&b, " %s | %s\n", num, text)
	if col > 0 {
		var pad strings.Builder
		for i, r := range []rune(text) {
			if i >= col-1 {
				break
			}
			if r == '\t' {
				pad.WriteByte('\t')
			} else {
				pad.WriteByte(' ')
			}
		}
		fmt.Fprintf(&b, " %s | %s^\n", gutter, pad.String())
	}
	return b.String()
}

// printFindings prints what the scan of impl/ found: errors to errs and
// warnings to warns, as "path:line:col: [warning: ]message". The errors of
// the type check (kind build) go to errs, with as much of the position as
// they have.
func printFindings(errs, warns io.Writer, fs []modelgen.Finding) {
	for _, f := range fs {
		switch {
		case f.Kind == "build":
			fmt.Fprintln(errs, located(f))
		case f.Warning:
			fmt.Fprintf(warns, "%s:%d:%d: warning: %s\n", f.Path, f.Line, f.Col, f.Message)
		default:
			fmt.Fprintf(errs, "%s:%d:%d: %s\n", f.Path, f.Line, f.Col, f.Message)
		}
	}
}

// located formats a type error as "path:line:col: message", with as much
// of the position as it has.
func located(f modelgen.Finding) string {
	switch {
	case f.Path == "":
		return f.Message
	case f.Line == 0:
		return fmt.Sprintf("%s: %s", f.Path, f.Message)
	case f.Col == 0:
		return fmt.Sprintf("%s:%d: %s", f.Path, f.Line, f.Message)
	}
	return fmt.Sprintf("%s:%d:%d: %s", f.Path, f.Line, f.Col, f.Message)
}

// printWritten prints the files written, one a line: "created path".
func printWritten(w io.Writer, cs []modelgen.FileChange) {
	for _, c := range cs {
		fmt.Fprintf(w, "%s %s\n", c.Kind, c.Path)
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func countBreaking(cs []modelgen.ShapeChange) int {
	n := 0
	for _, c := range cs {
		if c.Breaking {
			n++
		}
	}
	return n
}
