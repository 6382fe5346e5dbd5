package provider

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/llm"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{name: "none", want: 0},
		{name: "seconds", header: map[string]string{"Retry-After": "20"}, want: 20 * time.Second},
		{name: "fractional seconds", header: map[string]string{"Retry-After": "1.5"}, want: 1500 * time.Millisecond},
		{name: "milliseconds win", header: map[string]string{"Retry-After-Ms": "250", "Retry-After": "1"}, want: 250 * time.Millisecond},
		{name: "bad milliseconds, good seconds", header: map[string]string{"Retry-After-Ms": "soon", "Retry-After": "3"}, want: 3 * time.Second},
		{name: "an HTTP date", header: map[string]string{"Retry-After": "Mon, 23 Nov 2026 12:01:00 GMT"}, want: time.Minute},
		{name: "a date past", header: map[string]string{"Retry-After": "Mon, 23 Nov 2026 11:00:00 GMT"}, want: 0},
		{name: "negative", header: map[string]string{"Retry-After": "-5"}, want: 0},
		{name: "not a number", header: map[string]string{"Retry-After": "NaN"}, want: 0},
		{name: "infinite", header: map[string]string{"Retry-After": "+Inf"}, want: 0},
		{name: "past the largest Duration", header: map[string]string{"Retry-After": "1e300"}, want: 0},
		{name: "garbage", header: map[string]string{"Retry-After": "tomorrow-ish"}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := ParseRetryAfter(h, now); got != tt.want {
				t.Errorf("ParseRetryAfter(%v) = %v, want %v", tt.header, got, tt.want)
			}
		})
	}
}

// EventMeter splits a stream as the SDKs' decoders do, however its bytes
// arrive.
func TestEventMeter(t *testing.T) {
	tests := []struct {
		stream  string
		biggest int64
	}{
		{"", 0},
		{"data: a\n\n", 9},
		{"data: a\n\ndata: bc\n\n", 10},
		{"data: a\r\n\r\ndata: b\r\n\r\n", 11},
		{"data: a\n\r\n", 10},
		{"data: a\n\r\r\ndata: b\n\n", 20},    // "\r\r" is a line of data, not an empty line
		{"data: a\rdata: b\r\r\n\n", 19},      // so is "\r" inside a line
		{": c\n\n: c\n\ndata: a\n\n", 9},      // comments are events of their own size
		{"data: a\ndata: b\ndata: c\n\n", 25}, // lines of data
		{"\n\n\n\n", 1},
		{"data: without end", 17},
	}
	for _, tt := range tests {
		var whole, byByte EventMeter
		if got := whole.Write([]byte(tt.stream)); got != tt.biggest {
			t.Errorf("%q: %d, want %d", tt.stream, got, tt.biggest)
		}
		var got int64
		for i := range len(tt.stream) {
			got = byByte.Write([]byte{tt.stream[i]})
		}
		if got != tt.biggest {
			t.Errorf("%q byte by byte: %d, want %d", tt.stream, got, tt.biggest)
		}
	}
}

// BlankLineMeter splits a stream as the genai SDK's scanner does ("\n\n"
// or "\r\n\r\n", never "\n\r\n"), however its bytes arrive.
func TestBlankLineMeter(t *testing.T) {
	tests := []struct {
		stream  string
		biggest int64
	}{
		{"", 0},
		{"data: a\n\n", 9},
		{"data: a\n\ndata: bc\n\n", 10},
		{"data: a\r\n\r\ndata: b\r\n\r\n", 11},
		{"data: a\n\r\ndata: b\n\n", 19}, // "\n\r\n" ends nothing
		{"data: a\r\n\r\n\n", 11},
		{"data: a\ndata: b\n\n", 17}, // one token of two lines
		{"\n\n\n\n", 2},
		{"data: without end", 17},
		{"ab\r\r\n\n", 6},
	}
	for _, tt := range tests {
		var whole, byByte BlankLineMeter
		if got := whole.Write([]byte(tt.stream)); got != tt.biggest {
			t.Errorf("%q: %d, want %d", tt.stream, got, tt.biggest)
		}
		var got int64
		for i := range len(tt.stream) {
			got = byByte.Write([]byte{tt.stream[i]})
		}
		if got != tt.biggest {
			t.Errorf("%q byte by byte: %d, want %d", tt.stream, got, tt.biggest)
		}
	}
}

// ImageLimits.Check refuses, with where and why, the images an API does
// not take, and takes the others.
func TestImageLimits(t *testing.T) {
	png := func(n int) llm.Image {
		return llm.Image{MediaType: "image/png", Data: append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, n-8)...)}
	}
	gif := func(frames int) llm.Image { return llm.Image{MediaType: "image/gif", Data: animation(frames, false)} }
	call := llm.ToolCall{ID: "c1", Name: "shot"}
	withTool := func(im ...llm.Image) llm.Request {
		return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "look"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}}, {Role: llm.RoleTool, ToolCallID: "c1", Images: im}}}
	}
	users := func(im ...llm.Image) llm.Request {
		return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "look"}, {Role: llm.RoleUser, Images: im}}}
	}
	tests := []struct {
		name string
		l    ImageLimits
		req  llm.Request
		want string // "" for none
	}{
		{"a tool's image where they are taken", ImageLimits{API: "X"}, withTool(png(100)), ""},
		{"a tool's image where they are not", ImageLimits{API: "X", NoToolResults: true}, withTool(png(100)),
			"messages[2]: a tool's result with images, which X does not take (its tool messages are text only)"},
		{"a tool's result without images", ImageLimits{API: "X", NoToolResults: true}, withTool(), ""},
		{"base64 at the bound", ImageLimits{API: "X", MaxEncodedBytes: 400}, users(png(300)), ""},
		{"base64 past the bound", ImageLimits{API: "X", MaxEncodedBytes: 400}, users(png(100), png(301)),
			"messages[1].Images[1]: an image of 301 bytes, 404 in base64, past the 400 bytes of base64 an image that X takes"},
		{"bytes at the total", ImageLimits{API: "X", MaxTotalBytes: 300}, users(png(100), png(200)), ""},
		{"bytes past the total", ImageLimits{API: "X", MaxTotalBytes: 300}, users(png(100), png(201)),
			"messages[1].Images[1]: the request's images reach 301 bytes, past the 300 that X takes in one request"},
		{"a media type not taken", ImageLimits{API: "X", MediaTypes: []string{"image/png", "image/jpeg"}}, users(png(100), gif(1)),
			"messages[1].Images[1]: an image/gif image, which X does not take (it takes image/png, image/jpeg): convert it"},
		{"a still GIF", ImageLimits{API: "X", NoAnimatedGIFs: true}, users(gif(1)), ""},
		{"an animated GIF", ImageLimits{API: "X", NoAnimatedGIFs: true}, users(png(100), gif(3)),
			"messages[1].Images[1]: an animated GIF (3 frames), which X does not take: send one frame"},
		{"an animated GIF where they are taken", ImageLimits{API: "X"}, users(gif(3)), ""},
		{"base64 past the total", ImageLimits{API: "X", MaxTotalBytes: 290, TotalEncoded: true}, users(png(100), png(120)),
			"messages[1].Images[1]: the request's images reach 296 bytes of base64, past the 290"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.req.Validate(); err != nil {
				t.Fatal(err)
			}
			err := tt.l.Check(tt.req)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Check: %v, want %q", err, tt.want)
			}
		})
	}
}
