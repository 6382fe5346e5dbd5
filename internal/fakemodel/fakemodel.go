// Package fakemodel is a chat model for tests: an OpenAI-compatible server
// (POST /v1/chat/completions, streamed as OpenAI streams it) on loopback,
// which the real provider, automata/llm/openai, talks to over HTTP. What it
// does is chosen by the last user message of each request, so that one
// conversation can have a call fail and the next one answered:
//
//	endless       text, without end, until the client goes away (a
//	              provider's byte limit ends the call)
//	status 500    HTTP 500 with an error body (a server that is down)
//	hang          nothing at all, until the client goes away (a provider's
//	              time limit ends the call)
//	filter        a few words, then finish_reason content_filter
//	drop          a few words, then the connection closes mid-stream
//	anything else "You said: <message>.", word by word, then stop
//
// (A request whose last message is not a user message gets "Done.") It is
// not a model of OpenAI's API beyond what these need: no tool calls, one
// choice, no usage.
package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The messages that make the server fail.
const (
	Endless = "endless"
	Status  = "status 500"
	Hang    = "hang"
	Filter  = "filter"
	Drop    = "drop"
)

// Server is a running fake model.
type Server struct {
	// URL is the API's root, up to /v1: openai.Config.BaseURL, or
	// OPENAI_BASE_URL.
	URL      string
	requests atomic.Int64
	pace     atomic.Int64 // nanoseconds between the chunks of an endless reply
	closing  chan struct{}
}

// SetPace makes an endless reply send a chunk (16,000 bytes) every d, not
// as fast as it can: for a test that watches it stream before a limit
// ends it (a page that must show it streaming).
func (s *Server) SetPace(d time.Duration) { s.pace.Store(int64(d)) }

// Start starts a fake model on loopback, closed when the test ends: the
// requests it holds (endless, hang) end first.
func Start(t testing.TB) *Server {
	s := &Server{closing: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = srv.URL + "/v1"
	t.Cleanup(func() {
		close(s.closing)
		srv.Close()
	})
	return s
}

// Requests is the number of requests the server has had.
func (s *Server) Requests() int { return int(s.requests.Load()) }

// Reply is what the server answers to a message that does not make it
// fail.
func Reply(message string) string { return "You said: " + message + "." }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	var body struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" ||
		json.NewDecoder(r.Body).Decode(&body) != nil || !body.Stream || len(body.Messages) == 0 {
		http.Error(w, `{"error":{"message":"not a streamed chat completion"}}`, http.StatusBadRequest)
		return
	}
	last := body.Messages[len(body.Messages)-1]
	said := "" // what the user said last, if the request ends with it
	if last.Role == "user" {
		said = strings.TrimSpace(last.Content)
	}
	if said == Status {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`)
		return
	}
	if said == Hang {
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flush := func() { http.NewResponseController(w).Flush() }
	event := func(delta map[string]any, finish any) error {
		data, err := json.Marshal(map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "fake",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "data: %s\n\n", data)
		flush()
		return err
	}
	words := func(text string) {
		for i, word := range strings.SplitAfter(text, " ") {
			delta := map[string]any{"content": word}
			if i == 0 {
				delta["role"] = "assistant"
			}
			event(delta, nil)
		}
	}
	switch said {
	case Endless:
		chunk := strings.Repeat("and so on ", 1600) // 16,000 bytes
		for event(map[string]any{"content": chunk}, nil) == nil {
			var next <-chan time.Time // closed at once, when not paced
			if pace := time.Duration(s.pace.Load()); pace > 0 {
				next = time.After(pace)
			} else {
				now := make(chan time.Time)
				close(now)
				next = now
			}
			select {
			case <-r.Context().Done():
				return
			case <-s.closing:
				return
			case <-next:
			}
		}
		return
	case Filter:
		words("I would rather")
		event(map[string]any{}, "content_filter")
	case Drop:
		words("The answer is")
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close() // mid-stream: no last chunk, no [DONE]
		}
		return
	case "":
		words("Done.")
		event(map[string]any{}, "stop")
	default:
		words(Reply(said))
		event(map[string]any{}, "stop")
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}
