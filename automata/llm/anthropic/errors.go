package anthropic

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

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
		return fmt.Errorf("anthropic: %w", context.Cause(ctx))
	}
	if e := w.Exceeded(err); e != nil {
		return m.limitError(res, e)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return fromAPIError(apiErr)
	}
	if res == nil {
		cause := err
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			cause = urlErr.Err // without the method and URL, which the message names
		}
		return &llm.Error{Kind: llm.ErrUnreachable, Err: err,
			Message: fmt.Sprintf("anthropic: cannot reach %s: %s", m.baseURL, oneLine(cause.Error()))}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return m.malformed("the stream broke off: "+oneLine(err.Error()), err)
	}
	return m.malformed(oneLine(err.Error()), err)
}

// malformed is the error of a stream that could not be read.
func (m *Model) malformed(what string, err error) error {
	return &llm.Error{Kind: llm.ErrMalformedStream, StatusCode: http.StatusOK, Err: err,
		Message: fmt.Sprintf("anthropic: malformed stream from %s: %s", m.baseURL, what)}
}

// limitError is the error of a call that went past a limit.
func (m *Model) limitError(res *http.Response, e *llm.LimitError) error {
	e2 := *e // the caller's own
	out := &llm.Error{Kind: provider.Kind(e), Err: &e2,
		Message: fmt.Sprintf("anthropic: %v from %s: %s", provider.Kind(e), m.baseURL, e.What)}
	if res != nil {
		out.StatusCode = res.StatusCode
	}
	return out
}

// fromAPIError reads an error of the API: an HTTP error response, whose
// body is {"type": "error", "error": {"type": …, "message": …}}, or an
// error event in the middle of a stream (HTTP 200), with the same data.
func fromAPIError(e *sdk.Error) error {
	out := &llm.Error{StatusCode: e.StatusCode, Err: e}
	typ := string(e.Type())
	msg := oneLine(e.Message)
	inStream := e.StatusCode < 400
	if msg == "" && inStream {
		msg = cmp.Or(oneLine(e.RawJSON()), "no message")
	} else if msg == "" {
		msg = cmp.Or(http.StatusText(e.StatusCode), "no message")
	}
	where := fmt.Sprintf("HTTP %d", e.StatusCode)
	if inStream {
		where = "in the stream"
	}
	switch {
	case e.StatusCode == http.StatusUnauthorized || typ == "authentication_error":
		out.Kind = llm.ErrUnauthorized
	case e.StatusCode == http.StatusTooManyRequests || typ == "rate_limit_error":
		out.Kind = llm.ErrRateLimited
	case e.StatusCode == 529 || typ == "overloaded_error":
		out.Kind = llm.ErrOverloaded
	case contextLength(typ, e.Message):
		out.Kind = llm.ErrContextLength
	}
	if (out.Kind == llm.ErrRateLimited || out.Kind == llm.ErrOverloaded) && !inStream && e.Response != nil {
		out.RetryAfter = provider.ParseRetryAfter(e.Response.Header, time.Now())
		if out.RetryAfter > 0 {
			where += ", retry after " + out.RetryAfter.String()
		}
	}
	switch {
	case out.Kind != nil:
		out.Message = fmt.Sprintf("anthropic: %v (%s): %s", out.Kind, where, msg)
	case inStream:
		out.Message = "anthropic: the server reported an error in the stream: " + msg
	default:
		out.Message = fmt.Sprintf("anthropic: %s: %s", where, msg)
	}
	return out
}

// contextLength reports whether an error says the request is longer than
// the model's context: the API's invalid_request_error "prompt is too
// long: 208310 tokens > 200000 maximum", or the words of a gateway.
func contextLength(typ, msg string) bool {
	msg = strings.ToLower(msg)
	return (typ == "invalid_request_error" || typ == "") && strings.Contains(msg, "prompt is too long") ||
		strings.Contains(msg, "context window") && strings.Contains(msg, "exceed") ||
		strings.Contains(msg, "maximum context length")
}
