package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/tools/txtar"
)

// walkthrough is the README section that TestReadmeWalkthrough runs.
const walkthrough = "## Your first agent"

// block is one fenced code block of a README section.
type block struct {
	lang string // the info string: sh, yaml, go, text
	body string
	line int // of the opening fence in README.md
}

// readmeBlocks returns the fenced code blocks of the README section whose
// heading is heading, in order.
func readmeBlocks(t *testing.T, heading string) []block {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	start := -1
	for i, l := range lines {
		if l == heading {
			start = i
			break
		}
	}
	if start < 0 {
		t.Fatalf("README.md has no section %q", heading)
	}
	var blocks []block
	var cur *block
	for i := start + 1; i < len(lines); i++ {
		l := lines[i]
		switch {
		case cur == nil && strings.HasPrefix(l, "## "):
			return blocks
		case cur == nil && strings.HasPrefix(l, "```"):
			cur = &block{lang: strings.TrimPrefix(l, "```"), line: i + 1}
		case cur != nil && l == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.body += l + "\n"
		}
	}
	if cur != nil {
		t.Fatalf("README.md:%d: code block not closed", cur.line)
	}
	return blocks
}

// TestReadmeWalkthrough runs the README's "Your first agent" as it is
// written there: its shell blocks, in order, in one shell, in an empty
// directory; its yaml and go blocks written, at the point they appear, to
// the file their first line names; agentgen on PATH. Only the port changes,
// to a free one. The output must show each POST answered with its seq, and
// the state stream's snapshot as the README's text block shows it (with
// the server's stamp, whatever time it is), then with the ticket still
// there after a restart, acknowledged.
func TestReadmeWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs an agent")
	}
	for _, tool := range []string{"go", "sh", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("needs %s (CI installs it)", tool)
			}
			t.Skipf("needs %s", tool)
		}
	}
	port := freePort(t)
	var script bytes.Buffer
	// Whatever happens, the agents started in the background end with the
	// script.
	script.WriteString("set -e\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n")
	var want []string // regexps of the output, from the text blocks
	for _, b := range readmeBlocks(t, walkthrough) {
		body := strings.ReplaceAll(b.body, "localhost:8080", "localhost:"+port)
		switch b.lang {
		case "sh":
			fmt.Fprintf(&script, "# README.md:%d\n%s", b.line, body)
		case "yaml", "go":
			first, _, _ := strings.Cut(body, "\n")
			file := strings.TrimSpace(strings.TrimLeft(first, "#/"))
			if file == "" || strings.Contains(file, " ") {
				t.Fatalf("README.md:%d: a %s block must name its file on its first line, not %q", b.line, b.lang, first)
			}
			fmt.Fprintf(&script, "# README.md:%d\nmkdir -p %s\ncat > %s <<'README_EOF'\n%sREADME_EOF\n", b.line, filepath.Dir(file), file, body)
		case "text":
			for l := range strings.Lines(body) {
				// The server's stamp is a time: any number stands for it.
				re := regexp.QuoteMeta(strings.TrimSuffix(l, "\n"))
				re = regexp.MustCompile(`"openedAt":\d+`).ReplaceAllString(re, `"openedAt":[1-9][0-9]{12}`)
				want = append(want, "(?m)^"+re+"$")
			}
		default:
			t.Fatalf("README.md:%d: a %q block in %s: the test knows sh, yaml, go and text", b.line, b.lang, walkthrough)
		}
	}
	if len(want) == 0 {
		t.Fatal("the walkthrough shows no output to check")
	}
	ar := &txtar.Archive{
		Comment: []byte(strings.Join([]string{
			"# The README's walkthrough, extracted from README.md by TestReadmeWalkthrough.",
			"env GOPROXY=off",
			"exec sh walkthrough.sh",
			// Each POST answered, with its position in the journal.
			`stdout '^\{"seq":1\}$'`,
			`stdout '^\{"seq":2\}$'`,
			// After the restart: the ticket, read back, acknowledged.
			`stdout '^data: \{"seq":2,"view":\{.*"acknowledged":\["t1"\].*"id":"t1".*"openedAt":[1-9][0-9]{12}'`,
			"",
		}, "\n")),
		Files: []txtar.File{{Name: "walkthrough.sh", Data: script.Bytes()}},
	}
	var checks []string
	for _, re := range want {
		checks = append(checks, "stdout "+quoteScriptArg(re))
	}
	ar.Comment = append(ar.Comment, []byte(strings.Join(checks, "\n")+"\n")...)
	dir := t.TempDir()
	file := filepath.Join(dir, "walkthrough.txtar")
	if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
		t.Fatal(err)
	}
	p := scriptParams(t)
	p.Files = []string{file}
	testscript.Run(t, p)
}

// quoteScriptArg quotes s for a testscript command line.
func quoteScriptArg(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// freePort returns a TCP port on loopback that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}
