package mcp

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpTransport is the transport of a session with a server over
// Streamable HTTP: Config.Header on every request, each response that is
// not an event stream bounded to MaxMessageBytes (an event stream's events
// are, by the SDK), and a broken stream resumed at most streamRetries
// times (GET with Last-Event-ID, after the wait the server's retry field
// asks for) before the session ends and the next is made.
func (s *Server) httpTransport() sdk.Transport {
	client := http.Client{}
	if s.cfg.HTTPClient != nil {
		client = *s.cfg.HTTPClient
	}
	base := client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	client.Transport = &roundTripper{base: base, header: s.cfg.Header, limit: int64(s.cfg.MaxMessageBytes)}
	return &sdk.StreamableClientTransport{
		Endpoint:     s.cfg.URL,
		HTTPClient:   &client,
		MaxRetries:   streamRetries,
		MaxEventSize: s.cfg.MaxMessageBytes,
	}
}

// streamRetries is how many times a broken stream is resumed.
const streamRetries = 2

type roundTripper struct {
	base   http.RoundTripper
	header http.Header
	limit  int64
}

func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.header) > 0 {
		req = req.Clone(req.Context())
		for k, vs := range t.header {
			if req.Header.Get(k) == "" {
				req.Header[http.CanonicalHeaderKey(k)] = vs
			}
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body = &limitedBody{ReadCloser: resp.Body, left: t.limit}
	}
	return resp, nil
}

// limitedBody fails a read past its limit.
type limitedBody struct {
	io.ReadCloser
	left int64
}

var errTooLong = errors.New("the response is longer than MaxMessageBytes")

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errTooLong
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// redact is err with the server's URL, whose query may hold a secret, left
// out of its message (errors.Is and As still see what it wraps).
func (s *Server) redact(err error) error {
	if err == nil || s.cfg.URL == "" || !strings.Contains(err.Error(), s.cfg.URL) {
		return err
	}
	return &redacted{err: err, msg: strings.ReplaceAll(err.Error(), s.cfg.URL, fmt.Sprintf("<the URL of %q>", s.cfg.Name))}
}

type redacted struct {
	err error
	msg string
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }
