package anthropic

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/internal/hostiletest"
)

// TestImagesSent: the images of a user message, and of a tool's result,
// reach the server as the Messages API documents them: an image block for
// each, {"type":"image","source":{"type":"base64","media_type":…,"data":…}},
// before the text block, in the message's content or in the tool_result's.
func TestImagesSent(t *testing.T) {
	red, big := hostiletest.PNG(2, 2), hostiletest.PNG(64, 32)
	shot := llm.Tool{Name: "screenshot", Description: "Takes a screenshot."}
	req := llm.Request{
		Tools: []llm.Tool{shot},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "What are these?", Images: []llm.Image{red, big}},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "toolu_1", Name: "screenshot"}}},
			{Role: llm.RoleTool, ToolCallID: "toolu_1", Content: "the screen", Images: []llm.Image{big}},
			{Role: llm.RoleUser, Images: []llm.Image{red}}, // no text: no text block
		},
	}
	srv := newServer(t, sse(t, "text.sse"))
	if _, err := srv.model(t, Config{NoPromptCache: true}).Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := srv.received()
	if len(got) != 1 {
		t.Fatalf("%d requests", len(got))
	}
	// The bytes, decoded from what the server received.
	var body struct {
		Messages []struct {
			Content []struct {
				Type    string `json:"type"`
				Source  source `json:"source"`
				Content []struct {
					Type   string `json:"type"`
					Source source `json:"source"`
				} `json:"content"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(got[0].body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Messages) != 3 || len(body.Messages[0].Content) != 3 || len(body.Messages[2].Content) != 2 ||
		len(body.Messages[2].Content[0].Content) != 2 {
		t.Fatalf("the messages' blocks are not the ones sent: %s", got[0].body)
	}
	user, result, last := body.Messages[0].Content, body.Messages[2].Content[0].Content, body.Messages[2].Content[1]
	for _, c := range []struct {
		what string
		typ  string
		src  source
		want llm.Image
	}{
		{"the user's first image", user[0].Type, user[0].Source, red},
		{"the user's second image", user[1].Type, user[1].Source, big},
		{"the tool's image", result[0].Type, result[0].Source, big},
		{"the last user's image", last.Type, last.Source, red},
	} {
		b, err := base64.StdEncoding.DecodeString(c.src.Data)
		if c.typ != "image" || c.src.Type != "base64" || c.src.MediaType != "image/png" || err != nil || !bytes.Equal(b, c.want.Data) {
			t.Errorf("%s: a %q block of source %q, %q, %d bytes (%v), want an image of %d bytes", c.what, c.typ, c.src.Type, c.src.MediaType, len(b), err, len(c.want.Data))
		}
	}
	// The whole body, nothing more in it.
	img := func(im llm.Image) string {
		return fmt.Sprintf(`{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": %q}}`, base64.StdEncoding.EncodeToString(im.Data))
	}
	assertJSON(t, got[0].body, `{
		"model": "claude-test",
		"max_tokens": 8192,
		"stream": true,
		"messages": [
			{"role": "user", "content": [`+img(red)+`, `+img(big)+`, {"type": "text", "text": "What are these?"}]},
			{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "screenshot", "input": {}}]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "toolu_1", "content": [`+img(big)+`, {"type": "text", "text": "the screen"}]},
				`+img(red)+`
			]}
		],
		"tools": [{"name": "screenshot", "description": "Takes a screenshot.", "input_schema": {"type": "object", "properties": {}}}]
	}`)
}

type source struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// TestImagesRefused: an image the API would not take (a media type it does
// not know, more than 5 MiB of base64, more than 32 MB of base64 in a
// request) is an error that says where and why, and nothing is sent.
func TestImagesRefused(t *testing.T) {
	png := hostiletest.PNG(2, 2)
	sized := func(n int) llm.Image {
		return llm.Image{MediaType: "image/png", Data: append(bytes.Clone(png.Data), make([]byte, n-len(png.Data))...)}
	}
	user := func(im ...llm.Image) llm.Request {
		return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "look", Images: im}}}
	}
	const most = 5 << 20 / 4 * 3 // the bytes whose base64 is 5 MiB
	tests := []struct {
		name string
		req  llm.Request
		want string
	}{
		{"an SVG", user(png, llm.Image{MediaType: "image/svg+xml", Data: []byte("<svg/>")}),
			`anthropic: llm: invalid request: messages[0].Images[1]: media type "image/svg+xml" is not one of`},
		{"base64 past 5 MiB", user(sized(most), sized(most+1)),
			"anthropic: invalid request: messages[0].Images[1]: an image of 3932161 bytes, 5242884 in base64, past the 5242880 bytes of base64 an image that Anthropic's Messages API takes"},
		{"too much base64 in all", user(sized(most), sized(most), sized(most), sized(most), sized(most), sized(most), sized(most)),
			"anthropic: invalid request: messages[0].Images[6]: the request's images reach 36700160 bytes of base64, past the 32000000 that Anthropic's Messages API takes in one request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, sse(t, "text.sse"))
			_, err := srv.model(t).Complete(context.Background(), tt.req, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Complete: %v, want %q", err, tt.want)
			}
			if n := len(srv.received()); n != 0 {
				t.Fatalf("the server got %d requests", n)
			}
		})
	}
	// At the bound, it goes.
	srv := newServer(t, sse(t, "text.sse"))
	if _, err := srv.model(t).Complete(context.Background(), user(sized(most)), nil); err != nil || len(srv.received()) != 1 {
		t.Fatalf("an image of 5 MiB of base64: %v, %d requests", err, len(srv.received()))
	}
}

// TestImageCacheBreakpoint: an image block may be the last block before
// the newest user message, and is then the cache breakpoint.
func TestImageCacheBreakpoint(t *testing.T) {
	red := hostiletest.PNG(2, 2)
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Images: []llm.Image{red}},
		{Role: llm.RoleUser, Content: "What is it?"},
	}}
	srv := newServer(t, sse(t, "text.sse"))
	if _, err := srv.model(t).Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, srv.received()[0].body, fmt.Sprintf(`{
		"model": "claude-test",
		"max_tokens": 8192,
		"stream": true,
		"messages": [{"role": "user", "content": [
			{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": %q}, "cache_control": {"type": "ephemeral"}},
			{"type": "text", "text": "What is it?"}
		]}]
	}`, base64.StdEncoding.EncodeToString(red.Data)))
}
