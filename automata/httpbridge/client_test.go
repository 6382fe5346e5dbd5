package httpbridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/moora-go/moora/automata/internal/jsonpatch"
)

// client is the Go client the tests use: it follows the state stream as the
// ES module does (snapshot, deltas with gap checks, resume from the last id)
// and posts inputs with retries.
type client struct {
	base  string
	token string
	hc    *http.Client

	view any
	seq  uint64
	id   string

	snapshots, resyncs, deltas, gaps, connects int
	deltaBytes                                 int // bytes of delta events read
}

func newClient(base, token string) *client {
	return &client{base: base, token: token, hc: &http.Client{Timeout: time.Minute}}
}

type event struct {
	id, name string
	data     []byte
	size     int // bytes on the wire
}

// readEvents reads SSE events until the body ends or fn returns false. An
// event cut off by the end of the body is not delivered, as the SSE
// specification says.
func readEvents(body io.Reader, fn func(event) bool) error {
	r := bufio.NewReader(body)
	var ev event
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		ev.size += len(line)
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if ev.data != nil {
				if !fn(ev) {
					return nil
				}
			}
			ev = event{}
		case strings.HasPrefix(line, ":"):
		default:
			field, val, _ := strings.Cut(line, ":")
			val = strings.TrimPrefix(val, " ")
			switch field {
			case "id":
				ev.id = val
			case "event":
				ev.name = val
			case "data":
				ev.data = append(ev.data, val...)
			}
		}
	}
}

func (c *client) request(ctx context.Context, method, path string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// errStop ends a follow without an error.
var errStop = errors.New("stop")

// followOnce opens the state stream once, from the last id, and applies
// events until the stream ends or done says so. A delta that does not
// start where the view is counts as a gap and ends the connection.
func (c *client) followOnce(ctx context.Context, done func() bool) error {
	req, err := c.request(ctx, "GET", "/state", nil)
	if err != nil {
		return err
	}
	if c.id != "" {
		req.Header.Set("Last-Event-ID", c.id)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		return fmt.Errorf("state: %s: %s", res.Status, b)
	}
	c.connects++
	var applyErr error
	err = readEvents(res.Body, func(ev event) bool {
		if applyErr = c.apply(ev); applyErr != nil {
			return false
		}
		return !done()
	})
	if applyErr != nil {
		return applyErr
	}
	if err == nil {
		return errStop
	}
	return err
}

var errGap = errors.New("gap")

func (c *client) apply(ev event) error {
	switch ev.name {
	case "snapshot", "resync":
		var d struct {
			Seq  uint64 `json:"seq"`
			View any    `json:"view"`
		}
		if err := json.Unmarshal(ev.data, &d); err != nil {
			return fmt.Errorf("%s event: %w", ev.name, err)
		}
		if ev.name == "snapshot" {
			c.snapshots++
		} else {
			c.resyncs++
		}
		c.view, c.seq, c.id = d.View, d.Seq, ev.id
	case "delta":
		var d struct {
			Base  uint64         `json:"base"`
			Seq   uint64         `json:"seq"`
			Patch []jsonpatch.Op `json:"patch"`
		}
		if err := json.Unmarshal(ev.data, &d); err != nil {
			return fmt.Errorf("delta event: %w", err)
		}
		if c.id == "" || d.Base > c.seq || c.seq >= d.Seq {
			c.gaps++
			return errGap
		}
		v, err := jsonpatch.Apply(c.view, d.Patch)
		if err != nil {
			return fmt.Errorf("delta %d: %w", d.Seq, err)
		}
		c.view, c.seq, c.id = v, d.Seq, ev.id
		c.deltas++
		c.deltaBytes += ev.size
	case "close":
	default:
		return fmt.Errorf("unknown event %q", ev.name)
	}
	return nil
}

// follow follows the state stream, reconnecting after every error, until
// done or ctx ends.
func (c *client) follow(ctx context.Context, done func() bool) error {
	for !done() {
		err := c.followOnce(ctx, done)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !errors.Is(err, errStop) && !errors.Is(err, errGap) && !isNetErr(err) {
			return err
		}
	}
	return nil
}

func isNetErr(err error) bool {
	return err != nil // anything the proxy can cause: EOF, reset, unexpected EOF
}

// post posts an input, retrying after network errors and 5xx answers until
// it gets a definite answer.
func (c *client) post(ctx context.Context, input any) (status int, body []byte, err error) {
	data, err := json.Marshal(input)
	if err != nil {
		return 0, nil, err
	}
	for attempt := 0; attempt < 10_000; attempt++ {
		if ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
		req, err := c.request(ctx, "POST", "/inputs", data)
		if err != nil {
			return 0, nil, err
		}
		res, err := c.hc.Do(req)
		if err != nil {
			continue
		}
		body, err = io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode >= 500 {
			continue
		}
		return res.StatusCode, body, nil
	}
	return 0, nil, errors.New("post: no answer after 10,000 attempts")
}

// stream follows a token stream to its end, resuming by offset, and returns
// the text assembled from its chunks and the text of its end event.
func (c *client) stream(ctx context.Context, name string) (chunks, end string, reconnects int, err error) {
	offset := ""
	var text strings.Builder
	for attempt := 0; attempt < 10_000; attempt++ {
		if ctx.Err() != nil {
			return "", "", reconnects, ctx.Err()
		}
		req, err := c.request(ctx, "GET", "/streams/"+name, nil)
		if err != nil {
			return "", "", reconnects, err
		}
		if offset != "" {
			req.Header.Set("Last-Event-ID", offset)
		}
		res, err := c.hc.Do(req)
		if err != nil {
			reconnects++
			continue
		}
		if res.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode >= 500 {
				continue
			}
			return "", "", reconnects, fmt.Errorf("stream %s: %s: %s", name, res.Status, b)
		}
		ended := false
		var bad error
		readEvents(res.Body, func(ev event) bool {
			var s string
			if err := json.Unmarshal(ev.data, &s); err != nil {
				bad = err
				return false
			}
			switch ev.name {
			case "chunk":
				if n, err := strconv.Atoi(ev.id); err != nil || n != text.Len()+len(s) {
					bad = fmt.Errorf("chunk ending at %q after %d bytes of %d", ev.id, text.Len(), len(s))
					return false
				}
				text.WriteString(s)
				offset = ev.id
			case "end":
				end, ended = s, true
				return false
			}
			return true
		})
		res.Body.Close()
		if bad != nil {
			return "", "", reconnects, bad
		}
		if ended {
			return text.String(), end, reconnects, nil
		}
		reconnects++
	}
	return "", "", reconnects, errors.New("stream: not ended after 10,000 attempts")
}
