package persistent

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/agents/persistent/decl"
)

// TestPromptIsTheConversationsEnd: the llm is sent the conversation up to
// the message it answers, in the order of Conversation (of the same time,
// user, assistant, then tool messages), whole if it fits in the budget,
// else from the oldest user message on that fits, or from the newest one
// on if none does.
func TestPromptIsTheConversationsEnd(t *testing.T) {
	want := func(c decl.ContextOfLlm, upTo int64, budget int) []Message {
		conv := slices.DeleteFunc(Conversation(c.UserMessages, c.AssistantMessages, c.ToolMessages), func(m Message) bool { return m.Timestamp > upTo })
		size := func(from int) int {
			n := 0
			for _, m := range conv[from:] {
				n += m.Size()
			}
			return n
		}
		if size(0) <= budget {
			return conv
		}
		newest := -1
		for k, m := range conv {
			if m.Role != "user" {
				continue
			}
			if size(k) <= budget {
				return conv[k:]
			}
			newest = k
		}
		if newest < 0 {
			return conv
		}
		return conv[newest:]
	}
	rng := rand.New(rand.NewPCG(3, 4))
	text := strings.Repeat("x", 100)
	for range 20_000 {
		var c decl.ContextOfLlm
		at := int64(0)
		for i := range rng.IntN(12) {
			at += int64(rng.IntN(2)) // times repeat
			id, content := fmt.Sprint(i), text[:rng.IntN(len(text))]
			switch rng.IntN(3) {
			case 0:
				c.UserMessages = append(c.UserMessages, decl.UserMessage{ID: "u" + id, Content: content, Timestamp: at})
			case 1:
				c.AssistantMessages = append(c.AssistantMessages, decl.AssistantMessage{ID: "a" + id, Content: content, Timestamp: at,
					ToolCalls: []decl.ToolCall{{ID: "c" + id, Name: "word-count", Input: content}}})
			default:
				c.ToolMessages = append(c.ToolMessages, decl.ToolMessage{ID: "t" + id, CallID: "c" + id, Content: content, Timestamp: at})
			}
		}
		upTo, budget := int64(rng.IntN(int(at)+2)), rng.IntN(600)
		got, w := Prompt(c, upTo, budget), want(c, upTo, budget)
		if !reflect.DeepEqual(ids(got), ids(w)) {
			t.Fatalf("Prompt(%+v, %d, %d) = %v, want %v", c, upTo, budget, ids(got), ids(w))
		}
	}
}

func ids(conv []Message) []string {
	out := []string{}
	for _, m := range conv {
		out = append(out, m.ID)
	}
	return out
}
