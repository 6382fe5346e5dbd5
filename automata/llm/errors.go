package llm

import (
	"errors"
	"time"
)

// The kinds of failure a program may branch on, with errors.Is. Providers
// return them inside an *Error.
var (
	// ErrMissingKey: the provider needs an API key and was given none.
	ErrMissingKey = errors.New("no API key")
	// ErrUnreachable: the provider's server could not be reached (a wrong
	// base URL, a server that is down, DNS, TLS), after the retries.
	ErrUnreachable = errors.New("server unreachable")
	// ErrUnauthorized: the server refused the key (HTTP 401).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrRateLimited: too many requests, or no quota left (HTTP 429),
	// after the retries; Error.RetryAfter says how long the server asked
	// to wait, when it said.
	ErrRateLimited = errors.New("rate limited")
	// ErrOverloaded: the provider's servers are overloaded (Anthropic's
	// HTTP 529 or overloaded_error event, or a 503 that says so), after the
	// retries. It is the provider's state, not the request's: asked again
	// later, it may answer.
	ErrOverloaded = errors.New("overloaded")
	// ErrContextLength: the request is longer than the model's context
	// window: shorten the conversation (seed 000 compresses its history).
	ErrContextLength = errors.New("context length exceeded")
	// ErrMalformedStream: the reply could not be read: a chunk that is not
	// what the API sends, or a stream that ended before the model finished.
	ErrMalformedStream = errors.New("malformed stream")
	// ErrResponseTooLarge: the reply went past a limit of size of the
	// provider (the text and tool calls it keeps, the bytes it reads). A
	// model asked again tends to write as much again: raise the limit, or
	// ask for less.
	ErrResponseTooLarge = errors.New("response too large")
	// ErrResponseTimeout: the call went past the provider's limit on its
	// whole duration, which holds even when ctx has no deadline. The
	// server was slow this time; asked again, it may not be.
	ErrResponseTimeout = errors.New("response took too long")
	// ErrStreamStalled: the server sent nothing for longer than the
	// provider allows, before its answer or in the middle of its stream.
	// Asked again, it may answer.
	ErrStreamStalled = errors.New("stream stalled")
)

// Error is the error of a call that failed for a reason a person can act
// on. Its message is one line, made by the provider: what failed, the HTTP
// status if any, and the server's own words, such as
//
//	openai: rate limited (HTTP 429, retry after 20s): Rate limit reached for requests
//
// errors.Is(err, ErrRateLimited) matches its Kind, and errors.As reaches
// the provider's own error through Err.
type Error struct {
	Kind       error         // one of the Err values above, or nil for another failure
	StatusCode int           // the HTTP status, 0 if there was no response
	RetryAfter time.Duration // how long the server asked to wait before retrying, 0 if it did not say
	Message    string        // the whole message, one line
	Err        error         // the underlying error, if any
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns Kind and Err, so that errors.Is and errors.As see both.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// LimitError says which limit of a provider's Config ended a call (see
// "Limits" in the documentation of package automata/llm/openai, whose
// limits every provider of this module has, under the same names). It is
// the Err of the *Error that Complete returns, whose Kind is
// ErrResponseTooLarge, ErrResponseTimeout or ErrStreamStalled; errors.As
// reaches it. The providers' LimitError types are this one.
type LimitError struct {
	// Limit is the field of the provider's Config: MaxResponseBytes,
	// MaxBodyBytes, MaxDuration, MaxFirstByteWait or MaxIdle.
	Limit string
	// Bytes is the number of bytes allowed, for MaxResponseBytes and
	// MaxBodyBytes. For one event of the stream, which MaxResponseBytes
	// bounds too, it is twice MaxResponseBytes plus 64 KiB.
	Bytes int64
	// Duration is the time allowed, for MaxDuration, MaxFirstByteWait and
	// MaxIdle.
	Duration time.Duration
	// What says what went past the limit, such as "the text and tool
	// calls passed Config.MaxResponseBytes = 4194304 bytes": Error's
	// message.
	What string
}

func (e *LimitError) Error() string { return e.What }
