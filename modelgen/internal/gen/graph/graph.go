package graph

import (
	"fmt"
	"io"
	"strings"

	"github.com/moora-go/moora/modelgen/internal/model"
)

// Formats are the formats WriteGraph knows.
var Formats = []string{"mermaid", "dot"}

// Write writes the actor graph of a model: one node per actor with its
// derived state and context, and one edge per observation, from observer to
// target, labelled with the observed properties. format is mermaid or dot.
func Write(w io.Writer, m *model.Model, format string) error {
	var b strings.Builder
	switch format {
	case "mermaid":
		mermaid(&b, m)
	case "dot":
		dot(&b, m)
	default:
		return fmt.Errorf("unknown graph format %q (want mermaid or dot)", format)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func propList(fs []*model.Field) string {
	if len(fs) == 0 {
		return "(none)"
	}
	return model.FieldNames(fs)
}

func mermaid(b *strings.Builder, m *model.Model) {
	b.WriteString("flowchart LR\n")
	for _, a := range m.Actors {
		fmt.Fprintf(b, "  %s[\"<b>%s</b><br/>state: %s<br/>context: %s\"]\n",
			mermaidID(a), a.Name, propList(a.State), propList(a.Context))
	}
	for _, o := range m.Observations {
		fmt.Fprintf(b, "  %s -->|\"%s\"| %s\n", mermaidID(o.Observer), model.FieldNames(o.Fields), mermaidID(o.Target))
	}
}

// mermaidID avoids mermaid's reserved words (end) and dashes in node ids.
func mermaidID(a *model.Actor) string { return "actor_" + strings.ReplaceAll(a.Name, "-", "_") }

func dot(b *strings.Builder, m *model.Model) {
	b.WriteString("digraph agent {\n  rankdir=LR;\n  node [shape=box];\n")
	for _, a := range m.Actors {
		fmt.Fprintf(b, "  %q [label=%q];\n", a.Name,
			fmt.Sprintf("%s\nstate: %s\ncontext: %s", a.Name, propList(a.State), propList(a.Context)))
	}
	for _, o := range m.Observations {
		fmt.Fprintf(b, "  %q -> %q [label=%q];\n", o.Observer.Name, o.Target.Name, model.FieldNames(o.Fields))
	}
	b.WriteString("}\n")
}
