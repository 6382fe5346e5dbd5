package reflexor

import (
	"bufio"
	"context"
	"fmt"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/internal/browsertest"
)

// approvingKit is a kit whose calculator's calls wait for approval, with
// deadline (0: the default), recording the expressions it was called with.
type approvingKit struct {
	mu    sync.Mutex
	calls []string
}

func (k *approvingKit) kit(t testing.TB, deadline time.Duration) *toolkit.Kit {
	t.Helper()
	type expressionArgs struct {
		Expression string `json:"expression"`
	}
	kit, err := toolkit.New(toolkit.Config{},
		toolkit.Func("calculator", "Evaluates an arithmetic expression.", func(_ context.Context, a expressionArgs) (string, error) {
			k.mu.Lock()
			k.calls = append(k.calls, a.Expression)
			k.mu.Unlock()
			tv, err := types.Eval(token.NewFileSet(), nil, token.NoPos, a.Expression)
			if err != nil || tv.Value == nil {
				return "", fmt.Errorf("%w: not an arithmetic expression: %q", toolkit.ErrInvalid, a.Expression)
			}
			return tv.Value.String(), nil
		}).With(toolkit.Policy{Approval: toolkit.ApproveAll, ApprovalDeadline: deadline}))
	if err != nil {
		t.Fatal(err)
	}
	return kit
}

func (k *approvingKit) called() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.calls...)
}

// pendingApproval is the tool call of s that waits for approval, if any.
func pendingApproval(s decl.AgentState) (decl.ToolCallRecord, bool) {
	for _, c := range s.ToolCalls {
		if c.NeedsApproval == nil || !*c.NeedsApproval {
			continue
		}
		answered := false
		for _, r := range s.ToolResults {
			answered = answered || r.ToolCallID == c.ID
		}
		approved := false
		for _, a := range s.Approvals {
			approved = approved || a.ToolCallID == c.ID
		}
		if !answered && !approved {
			return c, true
		}
	}
	return decl.ToolCallRecord{}, false
}

const approvalChildEnv = "REFLEXOR_APPROVAL_CHILD"

// TestApprovalChild is the agent process of TestPendingApprovalSurvivesKill.
func TestApprovalChild(t *testing.T) {
	path := os.Getenv(approvalChildEnv)
	if path == "" {
		t.Skip("the agent process of TestPendingApprovalSurvivesKill")
	}
	var k approvingKit
	store, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{Model: testBrain(0), Tools: k.kit(t, 0), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Machine().Dispatch(context.Background(), decl.UserSendMessage{MessageID: "u1", Content: "what is (2 + 3) * 4?"}); err != nil {
		t.Fatal(err)
	}
	for {
		if c, ok := pendingApproval(a.Machine().Current()); ok {
			fmt.Printf("pending %s %s calls %d\n", c.ID, c.Arguments, len(k.called()))
			select {} // until killed
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPendingApprovalSurvivesKill: a tool call waiting for approval, its
// process killed with SIGKILL, is still waiting in the next process (and
// was not called); approved there with edited arguments, it runs with
// them, and the brain answers with their result.
func TestPendingApprovalSurvivesKill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestApprovalChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), approvalChildEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	guard := time.AfterFunc(hangGuard, func() { cmd.Process.Kill() }) // a child that never gets there
	defer guard.Stop()
	sc := bufio.NewScanner(stdout)
	line := ""
	for sc.Scan() {
		if line = sc.Text(); strings.HasPrefix(line, "pending ") {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if !strings.HasPrefix(line, "pending ") || !strings.HasSuffix(line, "calls 0") {
		t.Fatalf("the agent process said %q, want a pending approval and no call", line)
	}

	var k approvingKit
	store, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{Model: testBrain(0), Tools: k.kit(t, 0), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	c, ok := pendingApproval(a.Machine().Current())
	if !ok || c.Arguments != `{"expression":"(2 + 3) * 4"}` || c.ApprovalDeadline == nil {
		t.Fatalf("after the kill: pending %v, %+v", ok, c)
	}
	if n := len(k.called()); n != 0 {
		t.Fatalf("the calculator was called %d times before the approval", n)
	}
	edited := `{"expression":"10 * 10"}`
	if err := a.Machine().Dispatch(context.Background(), decl.ApproverApproveToolCall{ToolCallID: c.ID, Arguments: &edited}); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, a, "the state", func(s decl.AgentState) bool { return Idle(s) && len(s.AssistantMessages) == 2 })
	if got := k.called(); len(got) != 1 || got[0] != "10 * 10" {
		t.Fatalf("the calculator was called with %q, want the edited arguments once", got)
	}
	if last := s.AssistantMessages[1].Content; last != "The calculator tool says: 100." {
		t.Fatalf("the brain answered %q", last)
	}
}

// TestDenyAndDeadlineAreJournaled: a denied call, and one whose deadline
// passed first, are refused by the toolkit, each journaled as such
// (toolkit-refuse, its reason), the tool not called, the brain told.
func TestDenyAndDeadlineAreJournaled(t *testing.T) {
	for _, c := range []struct {
		name     string
		deadline time.Duration
		deny     bool
		reason   decl.ToolkitRefuseReason
		told     string
	}{
		{"denied", time.Hour, true, decl.ToolkitRefuseReasonDenied, "the approver denied the call: not now"},
		{"deadline", 30 * time.Millisecond, false, decl.ToolkitRefuseReasonDeadline, "the call was not approved by its deadline"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var k approvingKit
			store, err := bolt.Open(filepath.Join(t.TempDir(), "agent.db"))
			if err != nil {
				t.Fatal(err)
			}
			a, err := New(Config{Model: testBrain(0), Tools: k.kit(t, c.deadline), Store: store})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close(context.Background())
			ctx := context.Background()
			if err := a.Machine().Dispatch(ctx, decl.UserSendMessage{MessageID: "u1", Content: "what is 6 * 7?"}); err != nil {
				t.Fatal(err)
			}
			call := decl.ToolCallRecord{}
			waitFor(t, a, "the state", func(s decl.AgentState) bool {
				var ok bool
				call, ok = pendingApproval(s)
				return ok || len(s.ToolResults) > 0
			})
			if c.deny {
				why := "not now"
				if err := a.Machine().Dispatch(ctx, decl.ApproverDenyToolCall{ToolCallID: call.ID, Reason: &why}); err != nil {
					t.Fatal(err)
				}
			}
			s := waitFor(t, a, "the state", func(s decl.AgentState) bool { return len(s.ToolResults) == 1 && Idle(s) })
			if r := s.ToolResults[0]; !r.IsError || r.Content != c.told {
				t.Fatalf("the brain was told %+v, want %q", r, c.told)
			}
			if got := k.called(); len(got) != 0 {
				t.Fatalf("the calculator was called with %q", got)
			}
			entries, err := a.Machine().Inputs(1, a.Machine().Seq())
			if err != nil {
				t.Fatal(err)
			}
			refusals := 0
			for _, e := range entries {
				if r, ok := e.Input.(decl.ToolkitRefuse); ok {
					refusals++
					if r.Reason != c.reason || r.ToolCallID != call.ID {
						t.Fatalf("journaled %+v, want a refusal of %s for %s", r, call.ID, c.reason)
					}
				}
			}
			if refusals != 1 {
				t.Fatalf("%d refusals journaled, want 1", refusals)
			}
		})
	}
}

// TestApprovalByAnotherActorIs403: a page that does not speak for the
// approver (the default) cannot approve: 403; one allowed to can.
func TestApprovalByAnotherActorIs403(t *testing.T) {
	for _, allowed := range []bool{false, true} {
		var k approvingKit
		h := startHostOf(t, Config{Model: testBrain(0), Tools: k.kit(t, 0), PageApproves: allowed})
		status, body := h.post(t, `{"type":"user-send-message","messageId":"u1","content":"what is 1 + 1?"}`)
		if status >= 300 {
			t.Fatalf("the user's message: %d %s", status, body)
		}
		c := decl.ToolCallRecord{}
		waitFor(t, h.agent, "the state", func(s decl.AgentState) bool { var ok bool; c, ok = pendingApproval(s); return ok })
		status, body = h.post(t, `{"type":"approver-approve-tool-call","toolCallId":"`+c.ID+`"}`)
		if want := !allowed; (status == 403) != want {
			t.Fatalf("PageApproves %v: the page's approval got %d %s", allowed, status, body)
		}
		if allowed {
			s := waitFor(t, h.agent, "the state", func(s decl.AgentState) bool { return Idle(s) && len(s.ToolResults) == 1 })
			if s.ToolResults[0].Content != "2" {
				t.Fatalf("the approved call answered %+v", s.ToolResults[0])
			}
		}
	}
}

// TestBrowserApprovalCard: the page shows a tool call waiting for approval
// as a card with its arguments, editable; approved there with an edit, the
// call runs with it and the card gives way to the result. Screenshots go
// to $REFLEXOR_ARTIFACTS when set (look at them).
func TestBrowserApprovalCard(t *testing.T) {
	var k approvingKit
	h := startHostOf(t, Config{Model: testBrain(0), Tools: k.kit(t, 0), PageApproves: true})
	ctx := browsertest.New(t, 900, 700)
	browsertest.Do(t, ctx, "opening the page",
		chromedp.Navigate(h.url+"/support/?token="+h.token),
		chromedp.WaitVisible(chromedp.CSS(".status.connected")),
		chromedp.SendKeys(chromedp.ID("message"), "what is (2 + 3) * 4?"),
		chromedp.Click(chromedp.ID("send")),
	)
	browsertest.WaitText(t, ctx, ".tool.approval .state", "waiting for approval")
	args := browsertest.Eval[string](t, ctx, "reading the card", `document.querySelector(".tool.approval textarea").value`)
	if args != `{"expression":"(2 + 3) * 4"}` {
		t.Fatalf("the card shows the arguments %q", args)
	}
	browsertest.Screenshot(t, ctx, "REFLEXOR_ARTIFACTS", "approval-card")
	browsertest.Eval[chromedp.Void](t, ctx, "editing", `(() => { const a = document.querySelector(".tool.approval textarea"); a.value = '{"expression":"7 * 6"}'; a.dispatchEvent(new Event("input")); })()`)
	browsertest.Do(t, ctx, "approving", chromedp.Click(chromedp.CSS(".tool.approval button.approve")))
	browsertest.WaitText(t, ctx, ".tool.done", "→ 42")
	browsertest.WaitText(t, ctx, ".msg.brain:not(.streaming)", "The calculator tool says: 42.")
	browsertest.WaitText(t, ctx, ".tool.done", `calculator({"expression":"7 * 6"})`)
	browsertest.WaitText(t, ctx, ".tool.done .edited", "arguments edited on approval")
	browsertest.Screenshot(t, ctx, "REFLEXOR_ARTIFACTS", "approval-done")
	if got := k.called(); len(got) != 1 || got[0] != "7 * 6" {
		t.Fatalf("the calculator was called with %q, want the edit once", got)
	}
}
