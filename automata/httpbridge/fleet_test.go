package httpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/internal/byid"
	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/registry"
)

const operatorToken = "operator-s3cret"

// fleetFixture serves the chat test agent by id, from one bbolt fleet, on a
// real loopback server, with a registry whose clock the test moves.
type fleetFixture struct {
	t        *testing.T
	reg      *registry.Registry[state, input]
	fleet    *Fleet[state, input, view]
	srv      *httptest.Server
	sessions *Sessions
	now      atomic.Int64

	mu      sync.Mutex
	streams map[string]*Streams

	// openHook, if set, is called at the start of each activation.
	openHook atomic.Pointer[func(id string)]
}

func newFleetFixture(t *testing.T, edit func(*FleetConfig[state, input, view])) *fleetFixture {
	return newFleetFixtureOn(t, nil, nil, edit)
}

// newFleetFixtureOn is newFleetFixture with the registry's journal.Fleet,
// a real bbolt fleet, wrapped by wrap, and its config edited by editReg
// (each if not nil).
func newFleetFixtureOn(t *testing.T, wrap func(journal.Fleet) journal.Fleet, editReg func(*registry.Config[state, input]), edit func(*FleetConfig[state, input, view])) *fleetFixture {
	t.Helper()
	f := &fleetFixture{t: t, streams: map[string]*Streams{}}
	f.now.Store(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC).UnixNano())
	store, err := bolt.OpenFleet(filepath.Join(t.TempDir(), "agents.db"))
	if err != nil {
		t.Fatal(err)
	}
	var fleet journal.Fleet = store
	if wrap != nil {
		fleet = wrap(store)
	}
	regCfg := registry.Config[state, input]{
		Fleet:       fleet,
		IdleTimeout: time.Hour,
		Now:         func() time.Time { return time.Unix(0, f.now.Load()) },
		Logger:      slog.New(slog.DiscardHandler),
		Open: func(id string, s journal.Store) (*journal.Machine[state, input], error) {
			if hook := f.openHook.Load(); hook != nil {
				(*hook)(id)
			}
			return journal.Open(s, agent.Definition(), journal.Options[state, input]{
				Codec:  journal.JSON[state](decl.DecodeInput),
				Logger: slog.New(slog.DiscardHandler),
			}, agent.WithJobs(decl.JobFns{Llm: llmJobs(f.streamsOf(id))}), automata.WithAdmission(stamp))
		},
	}
	if editReg != nil {
		editReg(&regCfg)
	}
	reg, err := registry.New(regCfg)
	if err != nil {
		t.Fatal(err)
	}
	f.reg = reg
	f.sessions, err = NewSessions([]byte("a key of sixteen bytes or more"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := FleetConfig[state, input, view]{
		Registry: reg,
		Identify: Identities(operatorToken, f.sessions),
		Sessions: f.sessions,
		Bridge:   Config[state, input, view]{Decode: decl.DecodeClientInput, View: userView, InputID: inputID},
		Streams:  f.streamsOf,
	}
	if edit != nil {
		edit(&cfg)
	}
	f.fleet, err = NewFleet(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(f.fleet)
	t.Cleanup(func() {
		f.fleet.Close()
		f.srv.Close()
		if err := reg.Close(context.Background()); err != nil {
			t.Error(err)
		}
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	})
	return f
}

func (f *fleetFixture) streamsOf(id string) *Streams {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.streams[id]
	if s == nil {
		s = NewStreams(StreamOptions{})
		f.streams[id] = s
	}
	return s
}

// do sends a request with token as the bearer token ("" for none).
func (f *fleetFixture) do(method, path, token string, body any) (int, []byte) {
	f.t.Helper()
	var r io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, r)
	if err != nil {
		f.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, data
}

// person opens a session as the operator does for a page, and returns its
// token.
func (f *fleetFixture) person() string {
	f.t.Helper()
	status, body := f.do("POST", "/sessions", operatorToken, nil)
	var s struct{ Token, Identity string }
	if json.Unmarshal(body, &s); status != http.StatusOK || s.Token == "" || s.Identity == "" {
		f.t.Fatalf("POST /sessions: %d %s", status, body)
	}
	return s.Token
}

// create creates an agent as token's identity and returns its id.
func (f *fleetFixture) create(token string) string {
	f.t.Helper()
	status, body := f.do("POST", "/agents", token, nil)
	var a byid.Info
	if json.Unmarshal(body, &a); status != http.StatusCreated || a.ID == "" {
		f.t.Fatalf("POST /agents: %d %s", status, body)
	}
	return a.ID
}

func (f *fleetFixture) ids(token string) []string {
	f.t.Helper()
	status, body := f.do("GET", "/agents", token, nil)
	var page struct{ Agents []byid.Info }
	if json.Unmarshal(body, &page); status != http.StatusOK {
		f.t.Fatalf("GET /agents: %d %s", status, body)
	}
	ids := []string{}
	for _, a := range page.Agents {
		ids = append(ids, a.ID)
	}
	return ids
}

func (f *fleetFixture) seqOf(id string) uint64 {
	f.t.Helper()
	a, release, err := f.reg.Get(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	defer release()
	return a.Machine().Seq()
}

// TestFleetOwnersSeeOnlyTheirAgents: an identity's token can neither read,
// stream, post to, list, look up nor delete another identity's agent: each
// route answers 404, word for word as for an agent that does not exist, and
// the agent is untouched. The operator sees every agent.
func TestFleetOwnersSeeOnlyTheirAgents(t *testing.T) {
	f := newFleetFixture(t, nil)
	ann, bob := f.person(), f.person()
	a := f.create(ann)
	b := f.create(bob)
	if got := f.ids(ann); !reflect.DeepEqual(got, []string{a}) {
		t.Fatalf("ann lists %v, want only %s", got, a)
	}
	if got := f.ids(bob); !reflect.DeepEqual(got, []string{b}) {
		t.Fatalf("bob lists %v, want only %s", got, b)
	}
	if got := f.ids(operatorToken); len(got) != 2 {
		t.Fatalf("the operator lists %v, want both", got)
	}
	if status, body := f.do("POST", "/agents/"+a+"/inputs", ann, userMessage("m1", "mine")); status != http.StatusOK {
		t.Fatalf("ann posting to her agent: %d %s", status, body)
	}
	routes := []struct{ method, path string }{
		{"GET", "/agents/%s"},
		{"GET", "/agents/%s/state"},
		{"GET", "/agents/%s/streams/reply-m1"},
		{"POST", "/agents/%s/inputs"},
		{"DELETE", "/agents/%s"},
	}
	for _, r := range routes {
		var body any
		if r.method == "POST" {
			body = userMessage("m2", "not yours")
		}
		status, got := f.do(r.method, fmt.Sprintf(r.path, a), bob, body)
		_, none := f.do(r.method, fmt.Sprintf(r.path, "nobody"), bob, body)
		if status != http.StatusNotFound || !bytes.Equal(bytes.ReplaceAll(got, []byte(a), []byte("nobody")), none) {
			t.Errorf("bob %s %s: %d %s; want 404 as for no agent: %s", r.method, fmt.Sprintf(r.path, a), status, got, none)
		}
		if status, got := f.do(r.method, fmt.Sprintf(r.path, a), "", body); status != http.StatusUnauthorized {
			t.Errorf("no token %s %s: %d %s, want 401", r.method, r.path, status, got)
		}
	}
	if seq := f.seqOf(a); seq < 1 {
		t.Fatalf("ann's agent lost her input: seq %d", seq)
	}
	if status, body := f.do("GET", "/agents/"+a, ann, nil); status != http.StatusOK {
		t.Fatalf("ann's agent after bob's attempts: %d %s", status, body)
	}
	if status, body := f.do("POST", "/sessions", ann, nil); status != http.StatusForbidden {
		t.Fatalf("a person opening a session: %d %s, want 403", status, body)
	}
	if status, _ := f.do("GET", "/agents/"+a+"/state", "s1.u-forged.AAAA", nil); status != http.StatusUnauthorized {
		t.Fatalf("a forged session token: %d, want 401", status)
	}
	if status, body := f.do("DELETE", "/agents/"+a, operatorToken, nil); status != http.StatusNoContent {
		t.Fatalf("the operator deleting ann's agent: %d %s", status, body)
	}
}

// TestFleetConversationsAreSeparate: two people hold a conversation each,
// at once, each following its own agent's state and reply streams.
func TestFleetConversationsAreSeparate(t *testing.T) {
	f := newFleetFixture(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, who := range []string{"ann", "bob"} {
		token := f.person()
		id := f.create(token)
		wg.Go(func() {
			c := newClient(f.srv.URL+"/agents/"+id, token)
			for i := range 3 {
				msg := fmt.Sprintf("%s-%d", who, i)
				if status, body, err := c.post(ctx, userMessage(msg, "hello from "+who)); err != nil || status != http.StatusOK {
					t.Errorf("%s: post: %d %s %v", who, status, body, err)
					return
				}
				if _, end, _, err := c.stream(ctx, "reply-"+msg); err != nil || end != fmt.Sprintf("echo: hello from %s (%s)", who, msg) {
					t.Errorf("%s: reply stream %q, %v", who, end, err)
					return
				}
			}
			if err := c.follow(ctx, func() bool { return c.view != nil && len(c.view.(map[string]any)["assiMessages"].([]any)) == 3 }); err != nil {
				t.Errorf("%s: %v", who, err)
				return
			}
			for _, m := range c.view.(map[string]any)["userMessages"].([]any) {
				if got := m.(map[string]any)["content"]; got != "hello from "+who {
					t.Errorf("%s sees a message %q of someone else", who, got)
				}
			}
		})
	}
	wg.Wait()
}

// TestFleetRefusesAnotherActorsInput: a client plays the user; the llm's
// input is refused with 403 and never reaches the agent.
func TestFleetRefusesAnotherActorsInput(t *testing.T) {
	f := newFleetFixture(t, nil)
	ann := f.person()
	a := f.create(ann)
	status, body := f.do("POST", "/agents/"+a+"/inputs", ann, map[string]any{"type": "send-assi-message", "id": "x", "content": "forged", "timestamp": 1})
	if status != http.StatusForbidden {
		t.Fatalf("posting the llm's input: %d %s, want 403", status, body)
	}
	if seq := f.seqOf(a); seq != 0 {
		t.Fatalf("the refused input reached the journal: seq %d", seq)
	}
}

// TestFleetServesNoQueryTokens: a Bridge's query tokens (GET /token, then
// ?access_token=) are no route of a Fleet, whose one way in is
// FleetConfig.Identify: /agents/{id}/token answers 404 saying so, rather
// than a token every other route would refuse, and ?access_token= is no
// identity.
func TestFleetServesNoQueryTokens(t *testing.T) {
	f := newFleetFixture(t, nil)
	ann := f.person()
	a := f.create(ann)
	status, body := f.do("GET", "/agents/"+a+"/token", ann, nil)
	if status != http.StatusNotFound || !strings.Contains(string(body), "FleetConfig.Identify") {
		t.Errorf("GET /agents/{id}/token: %d %s, want 404 naming FleetConfig.Identify", status, body)
	}
	if status, body := f.do("GET", "/agents/"+a+"/state?access_token=x", "", nil); status != http.StatusUnauthorized {
		t.Errorf("GET /agents/{id}/state?access_token=: %d %s, want 401", status, body)
	}
}

// TestFleetStreamHoldsAgentAndResumes: a followed agent is not deactivated
// however long it idles; once nobody follows it, it is, and a client that
// comes back with its last event id resumes from the journal without loss.
func TestFleetStreamHoldsAgentAndResumes(t *testing.T) {
	f := newFleetFixture(t, nil)
	ann := f.person()
	a := f.create(ann)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newClient(f.srv.URL+"/agents/"+a, ann)
	c.post(ctx, userMessage("m1", "one"))
	followCtx, stopFollowing := context.WithCancel(ctx)
	following := make(chan error, 1)
	go func() { following <- c.follow(followCtx, func() bool { return false }) }()
	waitFor(t, func() bool { return f.fleet.streams.Load() == 1 })
	f.now.Add(int64(2 * time.Hour))
	if n := f.reg.Sweep(); n != 0 {
		t.Fatalf("Sweep deactivated %d agents while one was followed", n)
	}
	stopFollowing()
	<-following
	waitFor(t, func() bool { return f.fleet.streams.Load() == 0 })
	lastID := c.id
	f.now.Add(int64(2 * time.Hour))
	if n := f.reg.Sweep(); n != 1 {
		t.Fatalf("Sweep deactivated %d agents once nobody followed, want 1", n)
	}
	if s := f.reg.Stats(); s.Active != 0 {
		t.Fatalf("%d agents active after the sweep", s.Active)
	}
	if status, body, err := c.post(ctx, userMessage("m2", "two")); err != nil || status != http.StatusOK {
		t.Fatalf("post after deactivation: %d %s %v", status, body, err)
	}
	ag, release, err := f.reg.Get(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	m := ag.Machine()
	waitFor(t, func() bool { return len(m.Current().AssiMessages) == 2 }) // the reply to m2
	if err := c.follow(ctx, func() bool { return c.seq >= m.Seq() }); err != nil {
		t.Fatal(err)
	}
	if c.snapshots != 1 || c.resyncs != 0 || c.gaps != 0 {
		t.Errorf("resumed from %s: snapshots %d, resyncs %d, gaps %d; want 1, 0, 0", lastID, c.snapshots, c.resyncs, c.gaps)
	}
	var want any
	data, _ := json.Marshal(userView(m.Current()))
	json.Unmarshal(data, &want)
	if !reflect.DeepEqual(c.view, want) {
		t.Fatalf("client view %v\nserver view %v", c.view, want)
	}
}

// TestFleetDeleteEndsStreams: deleting a followed agent ends its stream,
// and the agent is gone for every route.
func TestFleetDeleteEndsStreams(t *testing.T) {
	f := newFleetFixture(t, nil)
	ann := f.person()
	a := f.create(ann)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newClient(f.srv.URL+"/agents/"+a, ann)
	ended := make(chan error, 1)
	go func() { ended <- c.followOnce(ctx, func() bool { return false }) }()
	waitFor(t, func() bool { return f.fleet.streams.Load() == 1 })
	if status, body := f.do("DELETE", "/agents/"+a, ann, nil); status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", status, body)
	}
	<-ended
	if status, _ := f.do("GET", "/agents/"+a+"/state", ann, nil); status != http.StatusNotFound {
		t.Fatalf("state of a deleted agent: %d, want 404", status)
	}
	if got := f.ids(ann); len(got) != 0 {
		t.Fatalf("ann lists %v after the delete", got)
	}
}

// TestFleetBounds: agents per owner, and list pages.
func TestFleetBounds(t *testing.T) {
	f := newFleetFixture(t, func(c *FleetConfig[state, input, view]) { c.MaxAgentsPerOwner = 3 })
	ann := f.person()
	var ids []string
	for range 3 {
		ids = append(ids, f.create(ann))
	}
	if status, body := f.do("POST", "/agents", ann, nil); status != http.StatusTooManyRequests {
		t.Fatalf("a fourth agent: %d %s, want 429", status, body)
	}
	status, body := f.do("GET", "/agents?limit=2", ann, nil)
	var page struct {
		Agents []byid.Info
		Next   string
	}
	json.Unmarshal(body, &page)
	if status != http.StatusOK || len(page.Agents) != 2 || page.Next == "" {
		t.Fatalf("first page: %d %s", status, body)
	}
	status, body = f.do("GET", "/agents?limit=2&after="+page.Next, ann, nil)
	page.Agents, page.Next = nil, ""
	json.Unmarshal(body, &page)
	if status != http.StatusOK || len(page.Agents) != 1 || page.Next != "" {
		t.Fatalf("second page: %d %s", status, body)
	}
	for _, bad := range []string{"0", "1001", "x"} {
		if status, _ := f.do("GET", "/agents?limit="+bad, ann, nil); status != http.StatusBadRequest {
			t.Errorf("limit=%s: %d, want 400", bad, status)
		}
	}
}

// TestFleetStreamLimit: streams beyond FleetConfig.MaxStreams, across
// agents, are refused with 503 and Retry-After, and a place freed by a
// stream that ended is taken again.
func TestFleetStreamLimit(t *testing.T) {
	f := newFleetFixture(t, func(c *FleetConfig[state, input, view]) { c.MaxStreams = 2 })
	ann := f.person()
	a, b := f.create(ann), f.create(ann)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func(ctx context.Context, id string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/agents/"+id+"/state", nil)
		req.Header.Set("Authorization", "Bearer "+ann)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first, firstCancel := context.WithCancel(ctx)
	for _, id := range []string{a, b} {
		c := ctx
		if id == a {
			c = first
		}
		if res := open(c, id); res.StatusCode != http.StatusOK {
			t.Fatalf("stream of %s: %d", id, res.StatusCode)
		}
	}
	res := open(ctx, a)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || !bytes.Contains(body, []byte("MaxStreams")) {
		t.Fatalf("a third stream: %d %s (Retry-After %q), want 503 naming the limit", res.StatusCode, body, res.Header.Get("Retry-After"))
	}
	firstCancel()
	waitFor(t, func() bool { return f.fleet.streams.Load() == 1 })
	if res := open(ctx, a); res.StatusCode != http.StatusOK {
		t.Fatalf("a stream after one ended: %d", res.StatusCode)
	}
}

// TestFleetRefusesOtherOrigins: a page of an origin the bridge does not
// allow gets 403 on the fleet's own routes too.
func TestFleetRefusesOtherOrigins(t *testing.T) {
	f := newFleetFixture(t, nil)
	req, _ := http.NewRequest("POST", f.srv.URL+"/agents", nil)
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	req.Header.Set("Origin", "https://evil.example")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("POST /agents from another origin: %d, want 403", res.StatusCode)
	}
	if got := f.ids(operatorToken); len(got) != 0 {
		t.Fatalf("it created %v", got)
	}
}

// FuzzSessionsCheck: a token a peer sends is accepted only as Issue made
// it, and never crashes the check.
func FuzzSessionsCheck(f *testing.F) {
	s, err := NewSessions([]byte("the fuzz key, sixteen bytes at least"))
	if err != nil {
		f.Fatal(err)
	}
	good, _ := s.Issue()
	for _, seed := range []string{good, "", "s1.", "s1.u-x.", "s1..abc", "s1.u-x.AAAA", good + "x", good[:len(good)-1], "Bearer " + good} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		name, err := s.Check(tok)
		if err != nil {
			if name != "" {
				t.Fatalf("Check(%q) failed but named %q", tok, name)
			}
			return
		}
		if want := sessionPrefix + name + "." + s.sum(name); tok != want {
			t.Fatalf("Check accepted %q, which Issue would write as %q", tok, want)
		}
	})
}

// TestFleetStreamsPerIdentity: one identity's streams beyond
// MaxStreamsPerIdentity are refused, and another's are not.
func TestFleetStreamsPerIdentity(t *testing.T) {
	f := newFleetFixture(t, func(c *FleetConfig[state, input, view]) { c.MaxStreamsPerIdentity = 1 })
	ann, bob := f.person(), f.person()
	a1, a2, b1 := f.create(ann), f.create(ann), f.create(bob)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func(token, id string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/agents/"+id+"/state", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode == http.StatusOK {
			return res.StatusCode, ""
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode, string(body)
	}
	if status, body := open(ann, a1); status != http.StatusOK {
		t.Fatalf("ann's first stream: %d %s", status, body)
	}
	if status, body := open(ann, a2); status != http.StatusServiceUnavailable || !strings.Contains(body, "MaxStreamsPerIdentity") {
		t.Fatalf("ann's second stream: %d %s, want 503 naming the limit", status, body)
	}
	if status, body := open(bob, b1); status != http.StatusOK {
		t.Fatalf("bob's stream while ann is at her limit: %d %s", status, body)
	}
}

// put sends PUT /agents/{id} as token's identity, and returns the status,
// the body and the Location resolved against the request's address ("" for
// none). id is put in the path as given: a test escapes what it must.
func (f *fleetFixture) put(id, token string) (int, []byte, string) {
	f.t.Helper()
	req, err := http.NewRequest("PUT", f.srv.URL+"/agents/"+id, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	loc := ""
	if u, err := res.Location(); err == nil {
		loc = u.String()
	}
	return res.StatusCode, body, loc
}

// TestFleetPutCreatesByID: PUT /agents/{id} creates the agent of that id
// for the caller (201, its Location, the body of POST /agents); sent again
// it answers the same agent, 200 with the same body, and creates nothing;
// the operator's PUT of it answers it too, as ann's.
func TestFleetPutCreatesByID(t *testing.T) {
	f := newFleetFixture(t, nil)
	ann := f.person()
	status, first, loc := f.put("report-19", ann)
	var a byid.Info
	if json.Unmarshal(first, &a); status != http.StatusCreated || a.ID != "report-19" || a.Owner != sessionName(t, ann) || a.Created.IsZero() {
		t.Fatalf("PUT /agents/report-19: %d %s, want 201 with the id, ann as owner and the time", status, first)
	}
	if want := f.srv.URL + "/agents/report-19"; loc != want {
		t.Errorf("Location resolves to %q, want %q", loc, want)
	}
	if status, got := f.do("GET", "/agents/report-19", ann, nil); status != http.StatusOK || !bytes.Equal(got, first) {
		t.Errorf("GET /agents/report-19: %d %s; want 200 and the body of the PUT: %s", status, got, first)
	}
	for range 2 {
		if status, again, loc := f.put("report-19", ann); status != http.StatusOK || !bytes.Equal(again, first) || loc != "" {
			t.Errorf("PUT /agents/report-19 again: %d %s, Location %q; want 200 and the body of the first: %s", status, again, loc, first)
		}
	}
	if status, got, _ := f.put("report-19", operatorToken); status != http.StatusOK || !bytes.Equal(got, first) {
		t.Errorf("the operator's PUT of ann's agent: %d %s; want 200 and ann's agent: %s", status, got, first)
	}
	if got := f.ids(operatorToken); !reflect.DeepEqual(got, []string{"report-19"}) {
		t.Fatalf("the fleet has %v, want only report-19", got)
	}
	if status, body := f.do("POST", "/agents/report-19/inputs", ann, userMessage("m1", "hello")); status != http.StatusOK {
		t.Fatalf("posting to the agent PUT created: %d %s", status, body)
	}
}

// TestFleetPutOfAnothersAgentIs404: bob's PUT of the id of ann's agent is
// 404, word for word as his GET of it (and of an agent that does not
// exist); ann's agent stays hers, and bob owns nothing.
func TestFleetPutOfAnothersAgentIs404(t *testing.T) {
	f := newFleetFixture(t, nil)
	ann, bob := f.person(), f.person()
	if status, body, _ := f.put("ticket-7", ann); status != http.StatusCreated {
		t.Fatalf("ann's PUT: %d %s", status, body)
	}
	status, put, loc := f.put("ticket-7", bob)
	_, get := f.do("GET", "/agents/ticket-7", bob, nil)
	_, none := f.do("GET", "/agents/ticket-8", bob, nil)
	if status != http.StatusNotFound || !bytes.Equal(put, get) || !bytes.Equal(bytes.ReplaceAll(put, []byte("ticket-7"), []byte("ticket-8")), none) || loc != "" {
		t.Errorf("bob's PUT of ann's ticket-7: %d %s, Location %q; want 404 as his GET of it, %s, and of none, %s", status, put, loc, get, none)
	}
	if info, err := f.reg.Info("ticket-7"); err != nil || info.Owner != sessionName(t, ann) {
		t.Errorf("ticket-7 after bob's PUT: %+v %v, want ann's", info, err)
	}
	if got := f.ids(bob); len(got) != 0 {
		t.Errorf("bob owns %v, want nothing", got)
	}
}

// TestFleetPutRefusesAnInvalidID: an id journal.CheckAgentID refuses is
// 400, and the message names the byte and its position; nothing is
// created.
func TestFleetPutRefusesAnInvalidID(t *testing.T) {
	f := newFleetFixture(t, nil)
	ann := f.person()
	for _, tc := range []struct {
		name, path, want string
	}{
		{"space", "report%2019", `"report 19" has ' ' at byte 6`},
		{"dot", "report.19", `"report.19" has '.' at byte 6`},
		{"slash, escaped", "a%2Fb", `"a/b" has '/' at byte 1`},
		{"not ASCII", "r%C3%A9sum%C3%A9", `"résumé" has 'Ã' at byte 1`},
		{"NUL", "x%00", `"x\x00" has '\x00' at byte 1`},
		{"too long", strings.Repeat("a", 65), "65 bytes, the limit is 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := f.put(tc.path, ann)
			if status != http.StatusBadRequest {
				t.Fatalf("PUT /agents/%s: %d %s, want 400", tc.path, status, body)
			}
			if msg := errorOf(t, body); !strings.Contains(msg, tc.want) {
				t.Errorf("PUT /agents/%s: the message %q does not say %s", tc.path, msg, tc.want)
			}
		})
	}
	if got := f.ids(operatorToken); len(got) != 0 {
		t.Fatalf("invalid ids created %v", got)
	}
}

// TestFleetConcurrentPutsCreateOneAgent: many PUTs of one id at once create
// one agent: one 201, the others 200, every body the same agent. Ann's go
// one at a time (her creations are serialized); the operator's, which are
// not, meet at the registry's Create.
func TestFleetConcurrentPutsCreateOneAgent(t *testing.T) {
	f := newFleetFixture(t, nil)
	ann := f.person()
	for _, who := range []struct{ name, token, id string }{
		{"ann", ann, "thread-1"},
		{"the operator", operatorToken, "thread-2"},
	} {
		var mu sync.Mutex
		statuses := map[int]int{}
		bodies := map[string]bool{}
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				status, body, _ := f.put(who.id, who.token)
				var a byid.Info
				json.Unmarshal(body, &a)
				mu.Lock()
				defer mu.Unlock()
				statuses[status]++
				bodies[fmt.Sprintf("%s %s %s", a.ID, a.Owner, a.Created)] = true
			})
		}
		wg.Wait()
		if statuses[http.StatusCreated] != 1 || statuses[http.StatusOK] != 15 || len(bodies) != 1 {
			t.Errorf("16 concurrent PUTs of %s by %s: statuses %v, bodies %v; want one 201, 15 200, one agent", who.id, who.name, statuses, bodies)
		}
	}
	if got := f.ids(operatorToken); !reflect.DeepEqual(got, []string{"thread-1", "thread-2"}) {
		t.Fatalf("the fleet has %v, want thread-1 and thread-2", got)
	}
}

// TestFleetPutBound: PUT of a new id counts toward MaxAgentsPerOwner as
// POST /agents does (429 beyond it); PUT of an agent the owner has is
// answered at the bound.
func TestFleetPutBound(t *testing.T) {
	f := newFleetFixture(t, func(c *FleetConfig[state, input, view]) { c.MaxAgentsPerOwner = 2 })
	ann := f.person()
	for _, id := range []string{"a", "b"} {
		if status, body, _ := f.put(id, ann); status != http.StatusCreated {
			t.Fatalf("PUT /agents/%s: %d %s", id, status, body)
		}
	}
	if status, body, _ := f.put("c", ann); status != http.StatusTooManyRequests || !strings.Contains(errorOf(t, body), "MaxAgentsPerOwner") {
		t.Errorf("a third agent by PUT: %d %s, want 429 naming the limit", status, body)
	}
	if status, body := f.do("POST", "/agents", ann, nil); status != http.StatusTooManyRequests {
		t.Errorf("a third agent by POST: %d %s, want 429", status, body)
	}
	if status, body, _ := f.put("a", ann); status != http.StatusOK {
		t.Errorf("PUT of ann's agent a at her bound: %d %s, want 200", status, body)
	}
	if status, body := f.do("DELETE", "/agents/a", ann, nil); status != http.StatusNoContent {
		t.Fatalf("DELETE /agents/a: %d %s", status, body)
	}
	if status, body, _ := f.put("c", ann); status != http.StatusCreated {
		t.Errorf("PUT /agents/c once a is deleted: %d %s, want 201", status, body)
	}
	if got := f.ids(ann); !reflect.DeepEqual(got, []string{"b", "c"}) {
		t.Fatalf("ann owns %v, want b and c", got)
	}
}
