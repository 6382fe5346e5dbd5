package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// With Config.CombineAppends, the appends of many agents that wait at the
// same time on one connection, each one message, are sent to the stream as
// one atomic batch, a combined batch. Each message keeps its subject, its
// expected last subject sequence and its message id, so that each agent's
// append is fenced as it would be alone; the batch is stored whole or not
// at all, and its messages are stored one after the other, so that the
// stream sequence of each is known from the last one's, which the server
// answers. A server that fsyncs every write (sync_always) fsyncs an R1
// stream's atomic batch once, not once a message.
//
// One combined batch per stream and connection is in flight at a time;
// the appends that arrive meanwhile wait for it and go in the next. An
// append that waits alone is sent alone, as without the option. If a
// combined batch is refused (one of its agents is fenced, the server has
// too many batches in flight, ...) nothing of it was stored, and each of
// its appends is sent again by its own store, alone, which decides it for
// that agent only. If its answer does not come, its outcome is unknown:
// each store then reads the last message of its subject, and takes it for
// its own if it carries its message id (the batch was stored), or sends
// the append alone (it was not, or not yet: a batch committed after that
// fails on the message stored alone, which moved its subject on; one
// committed just before it makes it fail, and the store looks again).

// Bounds of a combined batch: the server's default max_batch_size, and
// bytes, which the server stages before it commits them.
const (
	maxCombined      = 1000
	maxCombinedBytes = 4 << 20
)

// combined is an append waiting to be sent in a combined batch.
type combined struct {
	msg  *nats.Msg
	size int
	done chan struct{}
	seq  uint64 // its stream sequence, once stored
	err  error  // errAlone or errUnknown: the store sends it alone
}

// errAlone: the append was not stored by a combined batch (it waited
// alone, or the batch was refused); its store sends it alone.
var errAlone = errors.New("jetstream: not sent in a combined batch")

// errUnknown: the combined batch's answer did not come: its store finds
// out whether it was stored, and sends it alone if not.
var errUnknown = errors.New("jetstream: the outcome of a combined batch is unknown")

// errNotSent: an atomic batch's commit (a combined batch's, or an append's
// own) was not sent, so nothing of it was stored.
var errNotSent = errors.New("the batch's commit was not sent")

// combiner gathers the appends to one stream on one connection. It does
// not hold the connection (its batches are sent on the one their appends
// came with), so that the connection can be garbage once nothing else
// holds it (see conns).
type combiner struct {
	timeout time.Duration
	slots   chan struct{} // the turns of the connection's atomic batches

	mu       sync.Mutex
	queue    []*combined
	running  bool
	batches  int // combined batches stored, for tests
	messages int // messages they held
}

// send queues m for the next combined batch on nc, the combiner's
// connection, and returns its stream sequence once stored, or errAlone or
// errUnknown.
func (c *combiner) send(nc *nats.Conn, m *nats.Msg) (uint64, error) {
	p := &combined{msg: m, size: len(m.Subject) + len(m.Data) + 512, done: make(chan struct{})}
	for k, vs := range m.Header {
		p.size += len(k)
		for _, v := range vs {
			p.size += len(v) + 4
		}
	}
	c.mu.Lock()
	c.queue = append(c.queue, p)
	if !c.running {
		c.running = true
		go c.run(nc)
	}
	c.mu.Unlock()
	<-p.done
	return p.seq, p.err
}

// run sends what is queued, batch after batch, on nc, until nothing is.
func (c *combiner) run(nc *nats.Conn) {
	slots := c.slots
	for {
		// A turn of the connection's atomic batches first, so that what
		// arrives meanwhile goes in the batch.
		slots <- struct{}{}
		c.mu.Lock()
		n, size := 0, 0
		for n < len(c.queue) && n < maxCombined && (n == 0 || size+c.queue[n].size <= maxCombinedBytes) {
			size += c.queue[n].size
			n++
		}
		if n == 0 {
			c.running = false
			c.mu.Unlock()
			<-slots
			return
		}
		batch := make([]*combined, n)
		copy(batch, c.queue)
		c.queue = c.queue[:copy(c.queue, c.queue[n:])]
		c.mu.Unlock()
		c.publish(nc, batch)
		<-slots
		for _, p := range batch {
			close(p.done)
		}
	}
}

// publish sends batch on nc and sets each append's outcome.
func (c *combiner) publish(nc *nats.Conn, batch []*combined) {
	if len(batch) == 1 {
		batch[0].err = errAlone
		return
	}
	seq, err := c.publishBatch(nc, batch)
	var apiErr *js.APIError
	for i, p := range batch {
		switch {
		case err == nil:
			p.seq = seq - uint64(len(batch)-1-i)
		case errors.As(err, &apiErr) || errors.Is(err, errNotSent):
			p.err = errAlone // refused whole, or never committed: nothing stored
		default:
			p.err = errUnknown
		}
	}
	if err == nil {
		c.mu.Lock()
		c.batches++
		c.messages += len(batch)
		c.mu.Unlock()
	}
}

// publishBatch sends batch as one atomic batch and returns the stream
// sequence of its last message. An *js.APIError says the server refused
// it, errNotSent that it was not committed; another error, that its
// outcome is unknown.
func (c *combiner) publishBatch(nc *nats.Conn, batch []*combined) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	id := nuid.Next()
	var commit *nats.Msg
	for i, p := range batch {
		// A copy: the store sends the message alone if the batch fails.
		m := &nats.Msg{Subject: p.msg.Subject, Data: p.msg.Data, Header: make(nats.Header, len(p.msg.Header)+3)}
		for k, v := range p.msg.Header {
			m.Header[k] = v
		}
		m.Header.Set("Nats-Batch-Id", id)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		if i == len(batch)-1 {
			m.Header.Set("Nats-Batch-Commit", "1")
			commit = m
			break
		}
		if err := nc.PublishMsg(m); err != nil {
			// The commit is not sent: the server never stores the batch.
			return 0, fmt.Errorf("%w: %w", errNotSent, err)
		}
	}
	resp, err := nc.RequestMsgWithContext(ctx, commit)
	if err != nil {
		return 0, err
	}
	var ack struct {
		Error    *js.APIError `json:"error"`
		Sequence uint64       `json:"seq"`
		Count    int          `json:"count"`
	}
	if err := json.Unmarshal(resp.Data, &ack); err != nil {
		return 0, fmt.Errorf("reading the batch's acknowledgement %q: %w", resp.Data, err)
	}
	if ack.Error != nil {
		return 0, ack.Error
	}
	if ack.Count != len(batch) || ack.Sequence < uint64(len(batch)) {
		return 0, fmt.Errorf("the batch of %d messages was acknowledged as %d at %d", len(batch), ack.Count, ack.Sequence)
	}
	return ack.Sequence, nil
}

// stats returns how many combined batches were stored, and the messages
// they held.
func (c *combiner) stats() (batches, messages int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.batches, c.messages
}

// storedAlready says whether m, one of the store's messages, sent in a
// request (or a combined batch) whose outcome is unknown, was stored: the
// last message on the store's subject carries its message id. It returns
// that message's stream sequence.
func (s *Store) storedAlready(m *nats.Msg) (uint64, bool) {
	seq, id, err := s.subjectEnd()
	if err != nil || id == "" || id != m.Header.Get(js.MsgIDHeader) {
		return 0, false
	}
	return seq, true
}
