package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/moora-go/moora/internal/browsertest"
)

// listed returns the ids of the conversations on the page's side, in order.
func listed(t *testing.T, ctx context.Context) []string {
	t.Helper()
	return browsertest.Eval[[]string](t, ctx, "reading the list", `[...document.querySelectorAll("#conversations li")].map(li => li.dataset.id)`)
}

func shows(t *testing.T, ctx context.Context) string {
	t.Helper()
	return strings.Join(conversation(t, ctx), "\n")
}

// TestBrowserPeopleHaveTheirOwnConversations: two browsers opened with the
// same URL of a -users service are two people: each holds a conversation of
// its own at the same time, each streams its own replies, neither's list
// shows the other's; after kill -9 and a restart both lists and
// conversations are intact.
func TestBrowserPeopleHaveTheirOwnConversations(t *testing.T) {
	s := startService(t, "-users", "-delay", "40ms")
	ann := browsertest.New(t, 1000, 700)
	bob := browsertest.New(t, 1000, 700) // another browser: another person
	for _, p := range []context.Context{ann, bob} {
		browsertest.Do(t, p, "opening the page", opened(s.url()))
		browsertest.Eval[chromedp.Void](t, p, "recording", record)
	}
	if q := browsertest.Eval[string](t, ann, "reading the address", `location.search`); q != "" {
		t.Fatalf("the page's address still carries %q: the operator's token, once the page has its own identity", q)
	}
	send(t, ann, "what is 6 * 7?")
	send(t, bob, "count the words of this short sentence")
	browsertest.WaitText(t, ann, ".msg.brain:not(.streaming)", "The calculator tool says: 42.")
	browsertest.WaitText(t, bob, ".msg.brain:not(.streaming)", "The word_count tool says: 7.")
	for _, p := range []struct {
		ctx          context.Context
		mine, theirs string
	}{{ann, "6 * 7", "count the words"}, {bob, "count the words", "6 * 7"}} {
		got := shows(t, p.ctx)
		if !strings.Contains(got, p.mine) || strings.Contains(got, p.theirs) {
			t.Fatalf("a page shows:\n%s\nwant its own %q and not %q", got, p.mine, p.theirs)
		}
		if seen := browsertest.Eval[[]string](t, p.ctx, "reading what streamed", `window.seen`); len(seen) < 2 {
			t.Errorf("a reply appeared in %d steps (%q), want it streamed", len(seen), seen)
		}
	}
	browsertest.Do(t, ann, "starting a second conversation", chromedp.Click(chromedp.ID("new")))
	browsertest.WaitJS(t, ann, "the second conversation", `document.querySelectorAll("#conversations li").length === 2 && document.querySelector("#conversations li.current") === document.querySelectorAll("#conversations li")[1]`)
	browsertest.WaitJS(t, ann, "an empty conversation", `document.querySelector(".status.connected") && document.querySelectorAll("#conversation > *").length === 0`)
	send(t, ann, "what is 2 + 2?")
	browsertest.WaitText(t, ann, ".msg.brain:not(.streaming)", "The calculator tool says: 4.")
	annList, bobList := listed(t, ann), listed(t, bob)
	if len(annList) != 2 || len(bobList) != 1 || slices.Contains(annList, bobList[0]) {
		t.Fatalf("ann lists %v, bob %v: want two and one, none shared", annList, bobList)
	}
	browsertest.Screenshot(t, ann, "REFLEXOR_ARTIFACTS", "people-ann")
	browsertest.Screenshot(t, bob, "REFLEXOR_ARTIFACTS", "people-bob")
	annBefore, bobBefore := shows(t, ann), shows(t, bob)

	s.kill()
	s.start() // the same address and data: the pages reconnect by themselves
	browsertest.WaitText(t, bob, ".status.connected", "connected")
	// Opened again, each page is still the same person, with the same list
	// and the conversation it last showed.
	for _, p := range []context.Context{ann, bob} {
		browsertest.Do(t, p, "opening the page again", opened(s.url()))
	}
	browsertest.WaitText(t, ann, ".msg.brain:not(.streaming)", "The calculator tool says: 4.")
	browsertest.WaitText(t, bob, ".msg.brain:not(.streaming)", "The word_count tool says: 7.")
	if got := listed(t, ann); !slices.Equal(got, annList) {
		t.Fatalf("after the restart ann lists %v, want %v", got, annList)
	}
	if got := listed(t, bob); !slices.Equal(got, bobList) {
		t.Fatalf("after the restart bob lists %v, want %v", got, bobList)
	}
	if got := shows(t, ann); got != annBefore {
		t.Fatalf("after the restart ann's conversation is\n%s\nwant\n%s", got, annBefore)
	}
	if got := shows(t, bob); got != bobBefore {
		t.Fatalf("after the restart bob's conversation is\n%s\nwant\n%s", got, bobBefore)
	}
	browsertest.Do(t, ann, "switching to the first conversation", chromedp.Click(chromedp.CSS("#conversations li:first-child button")))
	browsertest.WaitText(t, ann, ".msg.brain:not(.streaming)", "The calculator tool says: 42.")
	if got := shows(t, ann); strings.Contains(got, "2 + 2") {
		t.Fatalf("the first conversation shows the second's:\n%s", got)
	}
	browsertest.Screenshot(t, ann, "REFLEXOR_ARTIFACTS", "people-after-restart")
}
