package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/color/palette"
	"image/gif"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/internal/hostiletest"
)

// TestImagesSent: the images of a user message reach the server as the
// chat completions API documents them: the message's content is an array
// of parts, one image_url part for each image, whose url is a data URL
// with the media type and the image's bytes in base64, then its text part.
func TestImagesSent(t *testing.T) {
	red, big := hostiletest.PNG(2, 2), hostiletest.PNG(64, 32)
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "What are these?", Images: []llm.Image{red, big}},
		{Role: llm.RoleAssistant, Content: "Two red lines."},
		{Role: llm.RoleUser, Images: []llm.Image{red}}, // no text: no text part
		{Role: llm.RoleUser, Content: "And now?"},      // no images: a string, as before
	}}
	srv := newServer(t, sse(t, "text.sse"))
	if _, err := srv.model(t).Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := srv.received()
	if len(got) != 1 {
		t.Fatalf("%d requests", len(got))
	}
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(got[0].body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Messages) != 4 {
		t.Fatalf("%d messages: %s", len(body.Messages), got[0].body)
	}
	type part struct {
		Type     string `json:"type"`
		Text     string `json:"text,omitempty"`
		ImageURL *struct {
			URL string `json:"url"`
		} `json:"image_url,omitempty"`
	}
	parts := func(i int) []part {
		t.Helper()
		var ps []part
		if err := json.Unmarshal(body.Messages[i].Content, &ps); err != nil {
			t.Fatalf("messages[%d].content is not an array of parts: %s", i, body.Messages[i].Content)
		}
		return ps
	}
	image := func(p part, want llm.Image) {
		t.Helper()
		if p.Type != "image_url" || p.ImageURL == nil {
			t.Fatalf("part %+v, want an image_url", p)
		}
		data, ok := strings.CutPrefix(p.ImageURL.URL, "data:image/png;base64,")
		if !ok {
			t.Fatalf("url %.40q…, want a data URL of image/png in base64", p.ImageURL.URL)
		}
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil || !bytes.Equal(b, want.Data) {
			t.Fatalf("the url's bytes (%v): %d bytes, not the image's %d", err, len(b), len(want.Data))
		}
	}
	first := parts(0)
	if len(first) != 3 || first[2] != (part{Type: "text", Text: "What are these?"}) {
		t.Fatalf("messages[0].content = %+v, want two images and a text part", first)
	}
	image(first[0], red)
	image(first[1], big)
	third := parts(2)
	if len(third) != 1 {
		t.Fatalf("messages[2].content = %+v, want one image", third)
	}
	image(third[0], red)
	if string(body.Messages[3].Content) != `"And now?"` {
		t.Errorf("messages[3].content = %s, want the string", body.Messages[3].Content)
	}
	// The whole body, nothing more in it.
	url := func(im llm.Image) string {
		return "data:image/png;base64," + base64.StdEncoding.EncodeToString(im.Data)
	}
	assertJSON(t, got[0].body, fmt.Sprintf(`{
		"model": "gpt-test",
		"messages": [
			{"role": "user", "content": [
				{"type": "image_url", "image_url": {"url": %q}},
				{"type": "image_url", "image_url": {"url": %q}},
				{"type": "text", "text": "What are these?"}
			]},
			{"role": "assistant", "content": "Two red lines."},
			{"role": "user", "content": [{"type": "image_url", "image_url": {"url": %[1]q}}]},
			{"role": "user", "content": "And now?"}
		],
		"stream": true,
		"stream_options": {"include_usage": true}
	}`, url(red), url(big)))
}

// TestImagesRefused: an image the API would not take (a tool's result with
// one, which OpenAI's tool messages cannot carry; a media type it does not
// know; bytes past llm.MaxImageBytes; an animated GIF; more than 50 MB in a
// request) is an error that says where and why, and nothing is sent; a
// still GIF goes.
func TestImagesRefused(t *testing.T) {
	png := hostiletest.PNG(2, 2)
	big := llm.Image{MediaType: "image/png", Data: append(bytes.Clone(png.Data), make([]byte, llm.MaxImageBytes-len(png.Data))...)}
	user := func(im ...llm.Image) llm.Request {
		return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "look", Images: im}}}
	}
	tests := []struct {
		name string
		req  llm.Request
		want string
	}{
		{"a tool's result with an image", llm.Request{Tools: []llm.Tool{{Name: "screenshot"}}, Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "look"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "screenshot"}}},
			{Role: llm.RoleTool, ToolCallID: "c1", Content: "here", Images: []llm.Image{png}}}},
			"openai: invalid request: messages[2]: a tool's result with images, which OpenAI's chat completions API does not take"},
		{"a TIFF", user(llm.Image{MediaType: "image/tiff", Data: []byte("II*\x00")}),
			`openai: llm: invalid request: messages[0].Images[0]: media type "image/tiff" is not one of`},
		{"an image too big", user(png, llm.Image{MediaType: "image/png", Data: append(bytes.Clone(big.Data), 0)}),
			"openai: llm: invalid request: messages[0].Images[1]: an image/png image of 5242881 bytes, past MaxImageBytes"},
		{"an animated GIF", user(png, animatedGIF(2)),
			"openai: invalid request: messages[0].Images[1]: an animated GIF (2 frames), which OpenAI's chat completions API does not take: send one frame"},
		{"too many bytes in all", user(big, big, big, big, big, big, big, big, big, big),
			"openai: invalid request: messages[0].Images[9]: the request's images reach 52428800 bytes, past the 50000000 that OpenAI's chat completions API takes in one request"},
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
	srv := newServer(t, sse(t, "text.sse"))
	if _, err := srv.model(t).Complete(context.Background(), user(animatedGIF(1)), nil); err != nil || len(srv.received()) != 1 {
		t.Fatalf("a still GIF: %v, %d requests", err, len(srv.received()))
	}
}

// animatedGIF is a GIF of n frames, as image/gif encodes it.
func animatedGIF(n int) llm.Image {
	g := &gif.GIF{}
	for i := range n {
		m := image.NewPaletted(image.Rect(0, 0, 2, 2), palette.WebSafe)
		m.Set(i%2, 0, color.White)
		g.Image, g.Delay = append(g.Image, m), append(g.Delay, 10)
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, g); err != nil {
		panic(err)
	}
	return llm.Image{MediaType: "image/gif", Data: b.Bytes()}
}
