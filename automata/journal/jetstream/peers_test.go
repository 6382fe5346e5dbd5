package jetstream_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/internal/jsonpatch"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/jetstream"
	"github.com/moora-go/moora/automata/registry"
	"github.com/nats-io/nats.go"
)

// The agents served by peers: notes, each stamped on admission with the
// process (the fleet's owner) that journaled it.
type pstate struct {
	Notes []pnote `json:"notes"`
}

type pnote struct {
	Text string `json:"text"`
	By   string `json:"by"`
}

func (pnote) InputActor() string { return "user" }

var pmodel = automata.Definition[pstate, pnote]{
	Initial: func() pstate { return pstate{} },
	Transition: func(s pstate, in pnote) pstate {
		s.Notes = automata.Append(s.Notes, in)
		return s
	},
}

const peerToken = "peer-operator-token"

func decodeNote(data []byte) (pnote, error) {
	var in pnote
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, err
	}
	if in.Text == "" {
		return in, errors.New("a note needs a text")
	}
	return in, nil
}

// peerHost is one process's share of a fleet on JetStream: its jetstream
// Fleet (owner), its registry, and its HTTP front routing to its peers, on
// a real loopback listener, advertised.
type peerHost struct {
	owner string
	fleet *jetstream.Fleet
	reg   *registry.Registry[pstate, pnote]
	front *httpbridge.Fleet[pstate, pnote, pstate]
	srv   *http.Server
	url   string
}

// peerRouteTimeout is the hosts' FleetConfig.RouteTimeout (0: its
// default); a test that sets it puts it back.
var peerRouteTimeout time.Duration

// peerInputID is the hosts' Config.InputID: a note's text is its id, so
// that a note sent again is applied once. A test that sets it puts it back.
var peerInputID = func(n pnote) string { return n.Text }

// startPeerHost starts a host named owner on nc; log receives its warnings.
func startPeerHost(nc *nats.Conn, cfg jetstream.Config, owner string, log *slog.Logger, edit ...func(*registry.Config[pstate, pnote])) (*peerHost, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fleet, err := jetstream.OpenFleet(ctx, nc, cfg, owner)
	if err != nil {
		return nil, err
	}
	h := &peerHost{owner: owner, fleet: fleet}
	rcfg := registry.Config[pstate, pnote]{
		Fleet:       fleet,
		IdleTimeout: time.Minute,
		Logger:      log,
		Open: func(id string, s journal.Store) (*journal.Machine[pstate, pnote], error) {
			return journal.Open(s, pmodel, journal.Options[pstate, pnote]{
				Codec: journal.JSON[pstate, pnote](nil), Logger: log, SnapshotEvery: 50,
			}, automata.WithAdmission(func(_ pstate, in pnote) (pnote, error) {
				in.By = owner
				return in, nil
			}))
		},
	}
	for _, e := range edit {
		e(&rcfg)
	}
	h.reg, err = registry.New(rcfg)
	if err != nil {
		return nil, err
	}
	h.front, err = httpbridge.NewFleet(httpbridge.FleetConfig[pstate, pnote, pstate]{
		Registry: h.reg,
		Identify: httpbridge.Identities(peerToken, nil),
		Bridge: httpbridge.Config[pstate, pnote, pstate]{Decode: decodeNote, View: func(s pstate) pstate { return s },
			InputID: peerInputID},
		Peers:        fleet,
		Logger:       log,
		RouteTimeout: peerRouteTimeout,
	})
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h.url = "http://" + l.Addr().String()
	h.srv = &http.Server{Handler: h.front, ReadHeaderTimeout: 10 * time.Second}
	go h.srv.Serve(l)
	if err := fleet.Advertise(h.url); err != nil {
		return nil, err
	}
	return h, nil
}

// close stops the host as a deployment does: it says it is leaving, stops
// its front, and closes its registry (its agents' leases released).
func (h *peerHost) close() error {
	err := h.fleet.Leave()
	h.front.Close()
	h.srv.Close()
	return errors.Join(err, h.reg.Close(context.Background()), h.fleet.Close())
}

// post sends a note to agent id through the front at base, and returns the
// status and the answer's body.
func post(client *http.Client, base, id, text string) (int, string, error) {
	code, _, body, err := postWithHeader(client, base, id, text)
	return code, body, err
}

// postWithHeader is post, with the answer's header too.
func postWithHeader(client *http.Client, base, id, text string) (int, http.Header, string, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/agents/"+id+"/inputs", strings.NewReader(fmt.Sprintf(`{"text":%q}`, text)))
	if err != nil {
		return 0, nil, "", err
	}
	req.Header.Set("Authorization", "Bearer "+peerToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, resp.Header, string(body), nil
}

// follower follows agent id's state stream, applying each delta's JSON
// Patch to its copy of the view and checking that each one starts where
// the one before ended; a snapshot or resync replaces the copy.
type follower struct {
	seq     uint64
	view    any
	last    string // Last-Event-ID
	deltas  int
	resyncs int
}

// follow reads the stream from base until it ends or ctx does; each event
// is checked and applied, and onEvent (if set) told of it. It returns the
// error that ended it: io.EOF for a stream the server ended.
func (f *follower) follow(ctx context.Context, client *http.Client, base, id string, onEvent func(kind string)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/agents/"+id+"/state", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+peerToken)
	if f.last != "" {
		req.Header.Set("Last-Event-ID", f.last)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("GET state: %s: %s", resp.Status, body)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var id2, kind string
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if kind != "" {
				if err := f.apply(kind, data); err != nil {
					return &protocolError{err}
				}
				if id2 != "" {
					f.last = id2
				}
				if onEvent != nil {
					onEvent(kind)
				}
			}
			id2, kind, data = "", "", nil
		case strings.HasPrefix(line, "id: "):
			id2 = line[4:]
		case strings.HasPrefix(line, "event: "):
			kind = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[6:]...)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.EOF
}

// protocolError is a stream that broke its own rules: a delta that does not
// start where the client is, or one that does not apply.
type protocolError struct{ err error }

func (e *protocolError) Error() string { return e.err.Error() }

func (f *follower) apply(kind string, data []byte) error {
	switch kind {
	case "snapshot", "resync":
		var ev struct {
			Seq  uint64 `json:"seq"`
			View any    `json:"view"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return fmt.Errorf("%s %s: %w", kind, data, err)
		}
		if kind == "resync" {
			f.resyncs++
		}
		f.seq, f.view = ev.Seq, ev.View
	case "delta":
		var ev struct {
			Base  uint64         `json:"base"`
			Seq   uint64         `json:"seq"`
			Patch []jsonpatch.Op `json:"patch"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return fmt.Errorf("delta %s: %w", data, err)
		}
		if ev.Base != f.seq {
			return fmt.Errorf("a delta from %d to %d, to a client at %d: a delta missing or twice", ev.Base, ev.Seq, f.seq)
		}
		view, err := jsonpatch.Apply(f.view, ev.Patch)
		if err != nil {
			return fmt.Errorf("delta %s does not apply: %w", data, err)
		}
		f.seq, f.view = ev.Seq, view
		f.deltas++
	}
	return nil
}

// notesOf decodes a view the follower holds.
func notesOf(view any) ([]pnote, error) {
	data, err := json.Marshal(view)
	if err != nil {
		return nil, err
	}
	var s pstate
	err = json.Unmarshal(data, &s)
	return s.Notes, err
}

// quietLog is a logger for the hosts of a test: warnings and errors, to
// the test's log when verbose.
func quietLog(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.DiscardHandler)
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
