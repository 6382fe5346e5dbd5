package reflexor

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/internal/browsertest"
)

// TestBrowserConversationUnderAPrefix: a program of its own mounts a
// Reflexor under /support/ of its mux, beside a home page and /healthz,
// and a person holds a conversation through it in a real Chromium: a reply
// streamed word by word, a tool call and its result, a second message
// that sees the first. The host's own routes still answer, the page asks
// for nothing outside /support/, and a reload shows the same conversation.
// Screenshots go to $REFLEXOR_ARTIFACTS when set (look at them).
func TestBrowserConversationUnderAPrefix(t *testing.T) {
	h := startHost(t, 40*time.Millisecond)
	ctx := browsertest.New(t, 900, 700)

	browsertest.Do(t, ctx, "opening the host's home page", chromedp.Navigate(h.url+"/"))
	browsertest.WaitText(t, ctx, "h1", "Example Inc.")

	// The page records every URL it asks for, to find any outside the
	// prefix.
	browsertest.Do(t, ctx, "opening the support page",
		chromedp.Navigate(h.url+"/support/?token="+h.token),
		chromedp.WaitVisible(chromedp.CSS(".status.connected")),
	)
	browsertest.Eval[chromedp.Void](t, ctx, "recording", `window.seen = []; new MutationObserver(() => {
		for (const e of document.querySelectorAll(".msg.brain.streaming")) {
			const t = e.textContent;
			if (t && window.seen[window.seen.length - 1] !== t) window.seen.push(t);
		}
	}).observe(document.getElementById("conversation"), {childList: true, subtree: true, characterData: true});`)

	say := func(text string) {
		browsertest.Do(t, ctx, "sending "+text,
			chromedp.SendKeys(chromedp.ID("message"), text),
			chromedp.Click(chromedp.ID("send")),
		)
	}
	say("hello from the support page of Example Inc")
	want := "You said: hello from the support page of Example Inc."
	browsertest.WaitText(t, ctx, ".msg.brain:not(.streaming)", want)
	seen := browsertest.Eval[[]string](t, ctx, "reading what streamed", `window.seen`)
	if len(seen) < 3 {
		t.Errorf("the reply appeared in %d steps (%q), want it to grow word by word", len(seen), seen)
	}
	for i, text := range seen {
		if !strings.HasPrefix(want, text) {
			t.Errorf("step %d showed %q: not a prefix of the reply %q", i, text, want)
		}
	}

	say("what is (2 + 3) * 4?")
	browsertest.WaitText(t, ctx, ".tool.done", "→ 20")
	browsertest.WaitText(t, ctx, ".msg.brain:not(.streaming)", "The calculator tool says: 20.")
	browsertest.Screenshot(t, ctx, "REFLEXOR_ARTIFACTS", "support-prefix")

	conversation := func() []string {
		return browsertest.Eval[[]string](t, ctx, "reading the conversation",
			`[...document.querySelectorAll("#conversation > *")].map(e => e.className + ": " + e.textContent)`)
	}
	before := conversation()
	browsertest.Do(t, ctx, "reloading", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(".status.connected")))
	browsertest.WaitText(t, ctx, ".msg.brain:not(.streaming)", "The calculator tool says: 20.")
	if after := conversation(); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("after a reload the page shows\n%q\nbefore it\n%q", after, before)
	}

	// Every resource the page loaded is under the prefix.
	urls := browsertest.Eval[[]string](t, ctx, "listing what the page loaded",
		`[location.href, ...performance.getEntriesByType("resource").map(e => e.name)]`)
	for _, u := range urls {
		if !strings.HasPrefix(u, h.url+"/support/") {
			t.Errorf("the page asked for %s, outside /support/", u)
		}
	}
	if len(urls) < 3 {
		t.Errorf("the page loaded %q: want its script and style too", urls)
	}

	// The host's own routes are untouched.
	browsertest.Do(t, ctx, "opening /healthz", chromedp.Navigate(h.url+"/healthz"))
	browsertest.WaitText(t, ctx, "body", "ok")

	s := h.agent.Machine().Current()
	if len(s.UserMessages) != 2 || len(s.ToolResults) != 1 {
		t.Errorf("the agent holds %d user messages and %d tool results, want 2 and 1", len(s.UserMessages), len(s.ToolResults))
	}
}

// TestBrowserShowsUsageAndBudget: the page shows the conversation's usage,
// tokens and dollars, under the input box, and, once the budget is
// reached, that the brain has stopped for it; the message after it gets no
// reply.
func TestBrowserShowsUsageAndBudget(t *testing.T) {
	h := startHostOf(t, Config{Model: testBrain(0), Prices: llm.Prices{"scripted": {Input: 3, Output: 15}}, Budget: llm.Budget{Tokens: 20}})
	ctx := browsertest.New(t, 900, 700)
	browsertest.Do(t, ctx, "opening the support page",
		chromedp.Navigate(h.url+"/support/?token="+h.token),
		chromedp.WaitVisible(chromedp.CSS(".status.connected")),
		chromedp.SendKeys(chromedp.ID("message"), "hello from the support page"),
		chromedp.Click(chromedp.ID("send")),
	)
	browsertest.WaitText(t, ctx, ".msg.brain:not(.streaming)", "You said: hello from the support page.")
	browsertest.WaitText(t, ctx, "#usage.exhausted", "budget exhausted (20 tokens)")
	u := h.agent.Machine().Current().Usage
	browsertest.WaitText(t, ctx, "#usage", fmt.Sprintf("%d tokens (%d in, %d out) · $%.4f", u.InputTokens+u.OutputTokens, u.InputTokens, u.OutputTokens, *u.Cost))
	browsertest.Do(t, ctx, "sending another message",
		chromedp.SendKeys(chromedp.ID("message"), "are you there?"),
		chromedp.Click(chromedp.ID("send")),
	)
	browsertest.WaitText(t, ctx, ".msg.user", "are you there?")
	browsertest.Screenshot(t, ctx, "REFLEXOR_ARTIFACTS", "budget-exhausted")
	if s := h.agent.Machine().Current(); len(s.AssistantMessages) != 1 {
		t.Errorf("past the budget the brain wrote %d replies; want 1", len(s.AssistantMessages))
	}
}
