package jetstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

// publishMsg publishes m to its stream, as jetstream's PublishMsg does,
// and returns the stream sequence the server stored it at (or, for a
// duplicate, had stored it at): a request that waits at most timeout; a
// request that finds no responders (a stream leader changing) is sent
// again twice, 250 ms apart, before it fails with js.ErrNoStreamResponse;
// an error the server answers is a *js.APIError. It reads the usual
// acknowledgement, {"stream":...,"seq":N} and perhaps "domain" or
// "duplicate", without encoding/json, which costs more than the rest of
// the client's work per append.
func publishMsg(nc *nats.Conn, m *nats.Msg, timeout time.Duration) (uint64, error) {
	deadline := time.Now().Add(timeout)
	resp, err := nc.RequestMsg(m, timeout)
	for r := 0; errors.Is(err, nats.ErrNoResponders) && r < js.DefaultPubRetryAttempts; r++ {
		wait := min(js.DefaultPubRetryWait, time.Until(deadline))
		if wait <= 0 {
			break
		}
		time.Sleep(wait)
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		resp, err = nc.RequestMsg(m, left)
	}
	if errors.Is(err, nats.ErrNoResponders) {
		return 0, js.ErrNoStreamResponse
	}
	if err != nil {
		return 0, err
	}
	if seq, ok := parsePubAck(resp.Data); ok {
		return seq, nil
	}
	var ack struct {
		Error    *js.APIError `json:"error"`
		Stream   string       `json:"stream"`
		Sequence uint64       `json:"seq"`
	}
	if err := json.Unmarshal(resp.Data, &ack); err != nil {
		return 0, js.ErrInvalidJSAck
	}
	if ack.Error != nil {
		return 0, fmt.Errorf("nats: %w", ack.Error)
	}
	if ack.Stream == "" {
		return 0, js.ErrInvalidJSAck
	}
	return ack.Sequence, nil
}

// parsePubAck reads the stream sequence of a successful acknowledgement of
// the form the server sends, {"stream":"<name>",...,"seq":N...}, with no
// "error"; ok is false for anything else, which encoding/json reads then.
func parsePubAck(data []byte) (seq uint64, ok bool) {
	const stream, seqKey = `{"stream":"`, `"seq":`
	if !bytes.HasPrefix(data, []byte(stream)) || len(data) == len(stream) || data[len(stream)] == '"' ||
		bytes.Contains(data, []byte(`"error"`)) || bytes.Count(data, []byte(seqKey)) != 1 {
		return 0, false
	}
	i := bytes.Index(data, []byte(seqKey)) + len(seqKey)
	j := i
	for j < len(data) && data[j] >= '0' && data[j] <= '9' {
		j++
	}
	if j == i || j-i > 20 || j == len(data) || (data[j] != ',' && data[j] != '}') {
		return 0, false
	}
	n, err := strconv.ParseUint(string(data[i:j]), 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}
