package gemini

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/moora-go/moora/automata/llm/internal/provider"
)

// callKey is the key of a call's *call in the context of its requests.
type callKey struct{}

// call is what the transport knows of one Complete: its watch, how many
// retries it may make, and the last response the server gave.
type call struct {
	w       *provider.Watch
	retries int
	res     atomic.Pointer[http.Response]
}

// response is the last response the server gave the call, nil if it never
// answered.
func (c *call) response() *http.Response { return c.res.Load() }

// retryable are the HTTP statuses a request is sent again for, the SDK's
// own list (its HTTPRetryOptions' default).
var retryable = []int{http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
	http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout}

// transport is the http.RoundTripper of a Model's SDK client. The genai SDK
// has no middleware, and its retries (off unless asked for) wait as its
// backoff says, not as the server asks: the transport does for the requests
// of a Complete what the other providers' middleware and SDKs do, watching
// each attempt (provider.Watch) and retrying as the server asks.
type transport struct {
	base  http.RoundTripper
	noKey bool // send no key: the SDK's is a placeholder
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.noKey {
		req = req.Clone(req.Context())
		req.Header.Del("X-Goog-Api-Key")
	}
	c, _ := req.Context().Value(callKey{}).(*call)
	if c == nil {
		return t.base.RoundTrip(req)
	}
	for attempt := 0; ; attempt++ {
		r := req
		if attempt > 0 {
			r = req.Clone(req.Context())
			if req.GetBody != nil {
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				r.Body = body
			}
		}
		res, err := c.w.Middleware(r, t.base.RoundTrip)
		if res != nil {
			c.res.Store(res)
		}
		if attempt >= c.retries || req.Context().Err() != nil || (req.Body != nil && req.GetBody == nil) {
			return res, err
		}
		var wait time.Duration
		switch {
		case err != nil:
			if c.w.Exceeded(err) != nil {
				return res, err
			}
			// It did not connect, or the connection broke before the answer.
		case slices.Contains(retryable, res.StatusCode):
			// The wait the server asks for is in its header, or in the
			// RetryInfo of its body, which is read whole (it is bounded by
			// MaxResponseBytes) and given back to the SDK.
			b, rerr := io.ReadAll(res.Body)
			res.Body.Close()
			if rerr != nil {
				res.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), errReader{rerr}))
				return res, nil
			}
			res.Body = io.NopCloser(bytes.NewReader(b))
			now := time.Now()
			wait = retryWait(res.Header, b, now)
			if wait > maxRetryWait || now.Add(wait).After(c.w.Deadline()) {
				return res, nil // not worth waiting for: the state decides
			}
		default:
			return res, nil
		}
		if wait == 0 {
			wait = backoff(attempt)
		}
		select {
		case <-req.Context().Done():
			if err == nil {
				return res, nil
			}
			return nil, err
		case <-time.After(wait):
		}
	}
}

// backoff is the wait before retry n+1 when the server asks for none: half
// a second, doubled each time up to 8 seconds, less up to a quarter of
// jitter, as the OpenAI and Anthropic SDKs wait.
func backoff(n int) time.Duration {
	d := min(500*time.Millisecond<<n, 8*time.Second)
	return d - time.Duration(rand.Float64()*float64(d)/4)
}

// errReader is a reader that fails with its error.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
