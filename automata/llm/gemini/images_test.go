package gemini

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/internal/hostiletest"
)

// TestImagesSent: the images of a user message, and of a tool's result,
// reach the server as the Gemini API documents them: an inlineData part
// for each, {"inlineData": {"mimeType": …, "data": …}} with the bytes in
// base64, before the text part of the user's content, and in the parts of
// the tool's functionResponse.
func TestImagesSent(t *testing.T) {
	red, big := hostiletest.PNG(2, 2), hostiletest.PNG(64, 32)
	req := llm.Request{
		Tools: []llm.Tool{{Name: "screenshot", Description: "Takes a screenshot."}},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "What are these?", Images: []llm.Image{red, big}},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call-1", Name: "screenshot"}}},
			{Role: llm.RoleTool, ToolCallID: "call-1", Content: "the screen", Images: []llm.Image{big}},
			{Role: llm.RoleUser, Images: []llm.Image{red}}, // no text: no text part
		},
	}
	srv := newServer(t, sse(t, "text.sse"))
	if _, err := srv.model(t).Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := srv.received()
	if len(got) != 1 {
		t.Fatalf("%d requests", len(got))
	}
	// The bytes, decoded from what the server received.
	type inline struct {
		MIMEType string `json:"mimeType"`
		Data     string `json:"data"`
	}
	var body struct {
		Contents []struct {
			Parts []struct {
				InlineData       *inline `json:"inlineData"`
				FunctionResponse *struct {
					Parts []struct {
						InlineData *inline `json:"inlineData"`
					} `json:"parts"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(got[0].body, &body); err != nil {
		t.Fatal(err)
	}
	c := body.Contents
	if len(c) != 4 || len(c[0].Parts) != 3 || len(c[2].Parts) != 1 || c[2].Parts[0].FunctionResponse == nil ||
		len(c[2].Parts[0].FunctionResponse.Parts) != 1 || len(c[3].Parts) != 1 {
		t.Fatalf("the contents' parts are not the ones sent: %s", got[0].body)
	}
	for _, p := range []struct {
		what string
		got  *inline
		want llm.Image
	}{
		{"the user's first image", c[0].Parts[0].InlineData, red},
		{"the user's second image", c[0].Parts[1].InlineData, big},
		{"the tool's image", c[2].Parts[0].FunctionResponse.Parts[0].InlineData, big},
		{"the last user's image", c[3].Parts[0].InlineData, red},
	} {
		if p.got == nil {
			t.Errorf("%s: no inlineData", p.what)
			continue
		}
		b, err := base64.StdEncoding.DecodeString(p.got.Data)
		if p.got.MIMEType != "image/png" || err != nil || !bytes.Equal(b, p.want.Data) {
			t.Errorf("%s: %q, %d bytes (%v), want image/png of %d bytes", p.what, p.got.MIMEType, len(b), err, len(p.want.Data))
		}
	}
	// The whole body, nothing more in it.
	img := func(im llm.Image) string {
		return `{"mimeType": "image/png", "data": "` + base64.StdEncoding.EncodeToString(im.Data) + `"}`
	}
	assertJSON(t, got[0].body, `{
		"contents": [
			{"role": "user", "parts": [{"inlineData": `+img(red)+`}, {"inlineData": `+img(big)+`}, {"text": "What are these?"}]},
			{"role": "model", "parts": [{"functionCall": {"id": "call-1", "name": "screenshot"}}]},
			{"role": "user", "parts": [{"functionResponse": {"id": "call-1", "name": "screenshot",
				"response": {"output": "the screen"}, "parts": [{"inlineData": `+img(big)+`}]}}]},
			{"role": "user", "parts": [{"inlineData": `+img(red)+`}]}
		],
		"tools": [{"functionDeclarations": [{"name": "screenshot", "description": "Takes a screenshot."}]}],
		"generationConfig": {}
	}`)
}

// TestImagesRefused: an image the API would not take (a media type it does
// not know, a GIF, bytes that are not of the type declared, more than 20 MB of
// inline data in a request) is an error that says where and why, and
// nothing is sent.
func TestImagesRefused(t *testing.T) {
	png := hostiletest.PNG(2, 2)
	sized := func(n int) llm.Image {
		return llm.Image{MediaType: "image/png", Data: append(bytes.Clone(png.Data), make([]byte, n-len(png.Data))...)}
	}
	user := func(im ...llm.Image) llm.Request {
		return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "look", Images: im}}}
	}
	tests := []struct {
		name string
		req  llm.Request
		want string
	}{
		{"a HEIC", user(llm.Image{MediaType: "image/heic", Data: []byte("\x00\x00\x00\x18ftypheic")}),
			`gemini: llm: invalid request: messages[0].Images[0]: media type "image/heic" is not one of`},
		{"a PNG declared WebP", user(llm.Image{MediaType: "image/webp", Data: png.Data}),
			"gemini: llm: invalid request: messages[0].Images[0]: an image declared image/webp whose bytes are not (they look like image/png)"},
		{"a GIF", user(png, llm.Image{MediaType: "image/gif", Data: []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;")}),
			"gemini: invalid request: messages[0].Images[1]: an image/gif image, which the Gemini API does not take (it takes image/png, image/jpeg, image/webp): convert it"},
		{"too much inline data in all", user(sized(llm.MaxImageBytes), sized(llm.MaxImageBytes), sized(llm.MaxImageBytes)),
			"gemini: invalid request: messages[0].Images[2]: the request's images reach 20971524 bytes of base64, past the 20000000 that the Gemini API takes in one request"},
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
}

// TestImagesInTheDigest: two requests that differ in an image's bytes, or
// its media type, have different digests (and their replies' calls
// different IDs); a request without images has the digest of its JSON, as
// before images.
func TestImagesInTheDigest(t *testing.T) {
	a, b := hostiletest.PNG(2, 2), hostiletest.PNG(2, 3)
	req := func(im ...llm.Image) llm.Request {
		return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "look"}, {Role: llm.RoleUser, Images: im}}}
	}
	gif := llm.Image{MediaType: "image/gif", Data: a.Data}
	digests := map[[32]byte]string{}
	for name, r := range map[string]llm.Request{"a": req(a), "b": req(b), "a, a": req(a, a), "gif": req(gif), "none": req()} {
		d := digest(r)
		if other, ok := digests[d]; ok {
			t.Errorf("%s and %s have one digest", name, other)
		}
		digests[d] = name
	}
	if digest(req(a)) != digest(req(llm.Image{MediaType: "image/png", Data: bytes.Clone(a.Data)})) {
		t.Error("the same image, two digests")
	}
	plain := question
	j, _ := json.Marshal(plain)
	if digest(plain) != sha256.Sum256(j) {
		t.Error("a request without images has another digest than its JSON's")
	}
	r := req(a)
	digest(r)
	if len(r.Messages[1].Images) != 1 {
		t.Error("digest changed the request")
	}
}
