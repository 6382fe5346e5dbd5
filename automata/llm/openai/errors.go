package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/internal/provider"
)

// fail turns the error that ended a stream into the error Complete
// returns: the context's, a limit's, an *llm.Error of a kind a program can
// act on, or an *llm.Error with the server's words. ctx is the caller's,
// w watches the call, and res is the HTTP response, nil if the server never
// answered.
func (m *Model) fail(ctx context.Context, w *provider.Watch, res *http.Response, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("openai: %w", context.Cause(ctx))
	}
	if e := w.Exceeded(err); e != nil {
		return m.limitError(res, e)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return fromAPIError(apiErr)
	}
	var streamErr *ssestream.StreamError
	if errors.As(err, &streamErr) {
		return fromStreamError(res, streamErr)
	}
	if res == nil {
		cause := err
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			cause = urlErr.Err // without the method and URL, which the message names
		}
		return &llm.Error{Kind: llm.ErrUnreachable, Err: err,
			Message: fmt.Sprintf("openai: cannot reach %s: %s", m.baseURL, provider.OneLine(cause.Error()))}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return m.malformed("the stream broke off: "+provider.OneLine(err.Error()), err)
	}
	return m.malformed(provider.OneLine(err.Error()), err)
}

// malformed is the error of a stream that could not be read.
func (m *Model) malformed(what string, err error) error {
	return &llm.Error{Kind: llm.ErrMalformedStream, StatusCode: http.StatusOK, Err: err,
		Message: fmt.Sprintf("openai: malformed stream from %s: %s", m.baseURL, what)}
}

// limitError is the error of a call that went past a limit.
func (m *Model) limitError(res *http.Response, e *LimitError) error {
	e2 := *e // the caller's own
	out := &llm.Error{Kind: provider.Kind(e), Err: &e2,
		Message: fmt.Sprintf("openai: %v from %s: %s", provider.Kind(e), m.baseURL, e.What)}
	if res != nil {
		out.StatusCode = res.StatusCode
	}
	return out
}

// fromAPIError reads an HTTP error response.
func fromAPIError(e *sdk.Error) error {
	out := &llm.Error{StatusCode: e.StatusCode, Err: e}
	msg := provider.OneLine(e.Message)
	if msg == "" {
		msg = cmp.Or(http.StatusText(e.StatusCode), "no message")
	}
	status := fmt.Sprintf("HTTP %d", e.StatusCode)
	switch {
	case e.StatusCode == http.StatusUnauthorized:
		out.Kind = llm.ErrUnauthorized
	case e.StatusCode == http.StatusTooManyRequests:
		out.Kind = llm.ErrRateLimited
		if e.Response != nil {
			out.RetryAfter = provider.ParseRetryAfter(e.Response.Header, time.Now())
		}
		if out.RetryAfter > 0 {
			status += ", retry after " + out.RetryAfter.String()
		}
	case contextLength(e.Code, e.Type, e.Message):
		out.Kind = llm.ErrContextLength
	case overloaded(e.StatusCode, e.Type, e.Message):
		out.Kind = llm.ErrOverloaded
	}
	if out.Kind != nil {
		out.Message = fmt.Sprintf("openai: %v (%s): %s", out.Kind, status, msg)
	} else {
		out.Message = fmt.Sprintf("openai: %s: %s", status, msg)
	}
	return out
}

// fromStreamError reads an error event in the middle of a stream, as
// {"error": {"message": …, "type": …, "code": …}} (or {"error": "…"}).
func fromStreamError(res *http.Response, e *ssestream.StreamError) error {
	out := &llm.Error{Err: e}
	if res != nil {
		out.StatusCode = res.StatusCode
	}
	var event struct {
		Error json.RawMessage `json:"error"`
	}
	var body struct {
		Message string `json:"message"`
		Type    any    `json:"type"`
		Code    any    `json:"code"`
	}
	var msg, typ, code string
	if json.Unmarshal(e.Event.Data, &event) == nil {
		if json.Unmarshal(event.Error, &body) == nil {
			msg, typ, code = body.Message, fmt.Sprint(body.Type), fmt.Sprint(body.Code)
		} else {
			json.Unmarshal(event.Error, &msg)
		}
	}
	msg = cmp.Or(provider.OneLine(msg), provider.OneLine(string(e.Event.Data)), "no message")
	switch {
	case contextLength(code, typ, msg):
		out.Kind = llm.ErrContextLength
	case code == "rate_limit_exceeded" || typ == "rate_limit_exceeded" || typ == "rate_limit_error":
		out.Kind = llm.ErrRateLimited
	case overloaded(0, typ, msg):
		out.Kind = llm.ErrOverloaded
	}
	if out.Kind != nil {
		out.Message = fmt.Sprintf("openai: %v (in the stream): %s", out.Kind, msg)
	} else {
		out.Message = "openai: the server reported an error in the stream: " + msg
	}
	return out
}

// contextLength reports whether an error says the request is longer than
// the model's context: OpenAI's code, llama.cpp's type, or the words of
// servers that give neither (vLLM).
func contextLength(code, typ, msg string) bool {
	msg = strings.ToLower(msg)
	return code == "context_length_exceeded" || typ == "exceed_context_size_error" ||
		strings.Contains(msg, "maximum context length") || strings.Contains(msg, "context length exceeded") ||
		strings.Contains(msg, "exceeds the available context size")
}

// overloaded reports whether an error says the servers are overloaded:
// HTTP 529 (Anthropic's, which gateways pass on), an overloaded_error (its
// type), or a 503 whose words say so (OpenAI's "The engine is currently
// overloaded"); status is 0 for an error in the stream.
func overloaded(status int, typ, msg string) bool {
	return status == 529 || typ == "overloaded_error" ||
		(status == http.StatusServiceUnavailable || status == 0) && strings.Contains(strings.ToLower(msg), "overloaded")
}
