package gemini

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/internal/provider"
)

// fail turns the error that ended a stream into the error Complete
// returns: the context's, a limit's, an *llm.Error of a kind a program can
// act on, or an *llm.Error with the server's words. ctx is the caller's,
// w watches the call, and res is the last HTTP response, nil if the server
// never answered.
func (m *Model) fail(ctx context.Context, w *provider.Watch, res *http.Response, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("gemini: %w", context.Cause(ctx))
	}
	if e := w.Exceeded(err); e != nil {
		return m.limitError(res, e)
	}
	var apiErr genai.APIError
	if errors.As(err, &apiErr) {
		return fromAPIError(apiErr, res)
	}
	if res == nil {
		cause := err
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			cause = urlErr.Err // without the method and URL, which the message names
		}
		return &llm.Error{Kind: llm.ErrUnreachable, Err: err,
			Message: fmt.Sprintf("gemini: cannot reach %s: %s", m.baseURL, oneLine(cause.Error()))}
	}
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return m.malformed("a chunk that is not JSON: "+oneLine(syntax.Error()), err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return m.malformed("the stream broke off: "+oneLine(err.Error()), err)
	}
	return m.malformed(oneLine(strings.TrimPrefix(err.Error(), "iterateResponseStream: ")), err)
}

// malformed is the error of a stream that could not be read.
func (m *Model) malformed(what string, err error) error {
	return &llm.Error{Kind: llm.ErrMalformedStream, StatusCode: http.StatusOK, Err: err,
		Message: fmt.Sprintf("gemini: malformed stream from %s: %s", m.baseURL, what)}
}

// limitError is the error of a call that went past a limit.
func (m *Model) limitError(res *http.Response, e *llm.LimitError) error {
	e2 := *e // the caller's own
	out := &llm.Error{Kind: provider.Kind(e), Err: &e2,
		Message: fmt.Sprintf("gemini: %v from %s: %s", provider.Kind(e), m.baseURL, e.What)}
	if res != nil {
		out.StatusCode = res.StatusCode
	}
	return out
}

// fromAPIError reads an error of the API: an HTTP error response, whose
// body is {"error": {"code": …, "message": …, "status": …, "details": […]}},
// or the same object as an event in the middle of a stream (HTTP 200). res
// is the response it came in.
func fromAPIError(e genai.APIError, res *http.Response) error {
	out := &llm.Error{Err: e}
	code := e.Code
	if res != nil {
		out.StatusCode = res.StatusCode
		code = cmp.Or(code, res.StatusCode)
	}
	inStream := out.StatusCode != 0 && out.StatusCode < 400
	msg := oneLine(e.Message)
	if strings.HasPrefix(strings.TrimSpace(e.Message), "<") || msg == "" {
		msg = cmp.Or(http.StatusText(code), "no message") // an HTML page of a proxy, or nothing
	}
	where := fmt.Sprintf("HTTP %d", out.StatusCode)
	if inStream {
		where = "in the stream"
	}
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden ||
		e.Status == "UNAUTHENTICATED" || e.Status == "PERMISSION_DENIED" || keyInvalid(e):
		out.Kind = llm.ErrUnauthorized
	case code == http.StatusTooManyRequests || e.Status == "RESOURCE_EXHAUSTED":
		out.Kind = llm.ErrRateLimited
	case code == http.StatusServiceUnavailable && (e.Status == "UNAVAILABLE" || strings.Contains(strings.ToLower(e.Message), "overloaded")):
		out.Kind = llm.ErrOverloaded
	case contextLength(e):
		out.Kind = llm.ErrContextLength
	}
	if out.Kind == llm.ErrRateLimited || out.Kind == llm.ErrOverloaded {
		out.RetryAfter = retryInfo(e.Details)
		if out.RetryAfter == 0 && res != nil && !inStream {
			out.RetryAfter = provider.ParseRetryAfter(res.Header, time.Now())
		}
		if out.RetryAfter > 0 {
			where += ", retry after " + out.RetryAfter.String()
		}
	}
	switch {
	case out.Kind != nil:
		out.Message = fmt.Sprintf("gemini: %v (%s): %s", out.Kind, where, msg)
	case inStream:
		out.Message = "gemini: the server reported an error in the stream: " + msg
	default:
		out.Message = fmt.Sprintf("gemini: %s: %s", where, msg)
	}
	return out
}

// keyInvalid reports whether e says the key is not valid, which the Gemini
// API answers with HTTP 400 INVALID_ARGUMENT ("API key not valid. Please
// pass a valid API key.", an ErrorInfo of reason API_KEY_INVALID).
func keyInvalid(e genai.APIError) bool {
	for _, d := range e.Details {
		if r, _ := d["reason"].(string); r == "API_KEY_INVALID" {
			return true
		}
	}
	return strings.Contains(e.Message, "API key not valid")
}

// contextLength reports whether an error says the request is longer than
// the model's context: the Gemini API's INVALID_ARGUMENT "The input token
// count (1048577) exceeds the maximum number of tokens allowed (1048576).",
// or the words of a gateway.
func contextLength(e genai.APIError) bool {
	msg := strings.ToLower(e.Message)
	return strings.Contains(msg, "input token count") && strings.Contains(msg, "exceeds the maximum") ||
		strings.Contains(msg, "context window") && strings.Contains(msg, "exceed") ||
		strings.Contains(msg, "maximum context length")
}

// retryInfoType is the @type of the detail of an error that says how long
// to wait (google.rpc.RetryInfo).
const retryInfoType = "type.googleapis.com/google.rpc.RetryInfo"

// retryInfo is the wait the RetryInfo of details asks for, 0 if there is
// none: its retryDelay, a google.protobuf.Duration in JSON ("37s",
// "0.500s").
func retryInfo(details []map[string]any) time.Duration {
	for _, d := range details {
		if d["@type"] != retryInfoType {
			continue
		}
		s, _ := d["retryDelay"].(string)
		v, ok := strings.CutSuffix(strings.TrimSpace(s), "s")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) || f*float64(time.Second) >= float64(1<<63-1) {
			continue
		}
		return time.Duration(f * float64(time.Second))
	}
	return 0
}

// retryWait is the wait an HTTP error response asks for before a retry:
// the RetryInfo of its body, else its Retry-After header; 0 if neither
// says.
func retryWait(h http.Header, body []byte, now time.Time) time.Duration {
	var e struct {
		Error struct {
			Details []map[string]any `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil {
		if d := retryInfo(e.Error.Details); d > 0 {
			return d
		}
	}
	return provider.ParseRetryAfter(h, now)
}

func oneLine(s string) string { return provider.OneLine(s) }
