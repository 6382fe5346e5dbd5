package delegate_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/delegate"
	"github.com/moora-go/moora/automata/toolkit"
)

// TestTool: a model's tool call delegates to a child named by the call's
// idempotency key; the call made again under the same key (a restart's)
// finds the same child and its answer, and sends no second task.
func TestTool(t *testing.T) {
	tm := openTeam(t, t.TempDir(), delegate.Config[childState, childInput]{}, nil)
	defer tm.close(t)
	type args struct {
		Task string `json:"task" jsonschema:"the task"`
	}
	tool := delegate.Tool(tm.d, "boss", "delegate", "Hands a task to a sub-agent.",
		func(a args) childInput { return childInput{Task: a.Task} },
		func(s childState) (string, bool) { return s.Answer, s.Answer != "" }).
		With(toolkit.Policy{Timeout: time.Minute})
	kit, err := toolkit.New(toolkit.Config{}, tool)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r := kit.Run(context.Background(), toolkit.Call{ID: "c1", Name: "delegate", Arguments: json.RawMessage(`{"task":"sum"}`), Key: "call-7"})
		if r.Err != nil || r.Output != "SUM" {
			t.Fatalf("the tool said %q, %v", r.Output, r.Err)
		}
	}
	id := delegate.ChildID("boss", "call-7")
	if infos := tm.childInfos(t); len(infos) != 1 || infos[id].Delegated == nil || infos[id].Delegated.Job != "call-7" {
		t.Fatalf("children %+v, want one, %s", infos, id)
	}
	if n := len(tm.childEntries(t, id)); n != 2 {
		t.Fatalf("the child's journal holds %d inputs, want its task once and its answer", n)
	}
}
