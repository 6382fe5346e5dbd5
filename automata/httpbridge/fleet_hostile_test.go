package httpbridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/registry"
)

// sessionName is the identity a session token names.
func sessionName(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q", token)
	}
	return parts[1]
}

// hookedFleet is the real bbolt fleet, whose Info runs a hook (once armed)
// after reading: it lets a test change the fleet between a request's check
// of an agent's owner and what it does next.
type hookedFleet struct {
	journal.Fleet
	hook atomic.Pointer[func(id string)]
}

func (h *hookedFleet) Info(id string) (journal.AgentInfo, error) {
	info, err := h.Fleet.Info(id)
	if hook := h.hook.Swap(nil); hook != nil {
		(*hook)(id)
	}
	return info, err
}

// TestHostileFleetOwnerChangesUnderRequest: an agent of bob's, with an id
// the program chose, is deleted and created again as ann's between bob's
// request's check of the owner and its use of the agent. Bob's input must
// not reach ann's agent, and bob's DELETE must not delete it.
func TestHostileFleetOwnerChangesUnderRequest(t *testing.T) {
	hooked := &hookedFleet{}
	f := newFleetFixtureOn(t, func(fl journal.Fleet) journal.Fleet { hooked.Fleet = fl; return hooked }, nil, nil)
	ann, bob := f.person(), f.person()
	swap := func(id string) {
		if err := f.reg.Delete(context.Background(), id); err != nil {
			t.Errorf("Delete: %v", err)
		}
		if _, err := f.reg.Create(id, sessionName(t, ann)); err != nil {
			t.Errorf("Create: %v", err)
		}
	}
	for _, route := range []struct{ method, path string }{
		{"POST", "/agents/X/inputs"},
		{"DELETE", "/agents/X"},
		{"GET", "/agents/X/state?lastEventId=bad"},
	} {
		if _, err := f.reg.Create("X", sessionName(t, bob)); err != nil {
			t.Fatal(err)
		}
		hooked.hook.Store(&swap)
		var body any
		if route.method == "POST" {
			body = userMessage("m1", "bob's, into ann's agent?")
		}
		status, got := f.do(route.method, route.path, bob, body)
		info, err := f.reg.Info("X")
		if err != nil || info.Owner != sessionName(t, ann) {
			t.Fatalf("%s %s: after it, X is %+v, %v; want ann's agent kept", route.method, route.path, info, err)
		}
		if seq := f.seqOf("X"); seq != 0 || status != http.StatusNotFound {
			t.Errorf("%s %s by bob as X turned ann's: %d %s, ann's agent at seq %d; want 404 and nothing applied", route.method, route.path, status, got, seq)
		}
		if err := f.reg.Delete(context.Background(), "X"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHostileFleetClientGoneDuringActivation: a client that goes away while
// its request waits for the agent's activation must not leave the agent
// leased for ever (never deactivated) nor its place among the fleet's
// streams taken.
func TestHostileFleetClientGoneDuringActivation(t *testing.T) {
	f := newFleetFixture(t, nil)
	ann := f.person()
	for _, route := range []struct{ method, path string }{
		{"GET", "/state"},
		{"GET", "/streams/reply-x"},
		{"GET", "/nothing"},
	} {
		id := f.create(ann)
		gate := make(chan struct{})
		entered := make(chan struct{}, 1)
		hook := func(string) {
			entered <- struct{}{}
			<-gate
		}
		f.openHook.Store(&hook)
		gone, returned := make(chan struct{}), make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer close(returned)
			go func() { <-r.Context().Done(); close(gone) }()
			f.fleet.ServeHTTP(w, r)
		}))
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, route.method, srv.URL+"/agents/"+id+route.path, nil)
		req.Header.Set("Authorization", "Bearer "+ann)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if res, err := http.DefaultClient.Do(req); err == nil {
				res.Body.Close()
			}
		}()
		<-entered
		cancel()
		<-done
		<-gone
		f.openHook.Store(nil)
		close(gate)
		<-returned
		srv.Close()
		if n := f.fleet.streams.Load(); n != 0 {
			t.Errorf("%s %s: %d streams counted after the client left", route.method, route.path, n)
		}
		f.now.Add(int64(2 * time.Hour))
		if n := f.reg.Sweep(); n != 1 {
			t.Errorf("%s %s: Sweep deactivated %d agents once the client had left, want 1: its lease is held", route.method, route.path, n)
		}
	}
}

// TestHostileFleetMaxAgentsPerOwnerIsHard: concurrent POST /agents of one
// identity create no more than MaxAgentsPerOwner agents.
func TestHostileFleetMaxAgentsPerOwnerIsHard(t *testing.T) {
	f := newFleetFixture(t, func(c *FleetConfig[state, input, view]) { c.MaxAgentsPerOwner = 3 })
	ann := f.person()
	var created, refused atomic.Int64
	var wg sync.WaitGroup
	for range 24 {
		wg.Go(func() {
			switch status, body := f.do("POST", "/agents", ann, nil); status {
			case http.StatusCreated:
				created.Add(1)
			case http.StatusTooManyRequests:
				refused.Add(1)
			default:
				t.Errorf("POST /agents: %d %s", status, body)
			}
		})
	}
	wg.Wait()
	if got := f.ids(ann); len(got) != 3 || created.Load() != 3 {
		t.Fatalf("24 concurrent POST /agents with MaxAgentsPerOwner 3: %d created (%d refused), ann owns %d", created.Load(), refused.Load(), len(got))
	}
}

// rawRequest sends a request line and headers as written, on a connection
// of its own (no client normalizes the path), and returns the status.
func rawRequest(t *testing.T, addr, method, target, token string) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", method, target, token)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1024))
	return res.StatusCode, string(body)
}

// TestHostileFleetPathTricks: paths that escape, encode, fold or pad the id
// of ann's agent give bob nothing: no 2xx, nothing applied, nothing held.
func TestHostileFleetPathTricks(t *testing.T) {
	f := newFleetFixture(t, nil)
	ann, bob := f.person(), f.person()
	a := f.create(ann)
	mine := f.create(bob)
	addr := strings.TrimPrefix(f.srv.URL, "http://")
	targets := []string{
		"/agents/" + a + "/state",
		"/agents/" + a + "/inputs",
		"/agents/" + a,
		"/agents/" + a + "/",
		"/agents/" + a + "//state",
		"/agents//" + a + "/state",
		"/agents/" + mine + "/../" + a + "/state",
		"/agents/" + mine + "/..%2F" + a + "/state",
		"/agents/" + mine + "%2F..%2F" + a + "/inputs",
		"/agents/" + mine + "/%2E%2E/" + a + "/inputs",
		"/agents/" + strings.ToUpper(a) + "/state",
		"/agents/%" + fmt.Sprintf("%X", a[0]) + a[1:] + "/state",
		"/agents/" + a + "%00/state",
		"/agents/" + a + "%2Fstate",
		"/agents/" + a + ".json/state",
		"/agents/./" + a + "/state",
		"/agents/" + a + "/streams/..%2F..%2F" + a + "%2Finputs",
		"/agents/" + strings.Repeat("a", 70000) + "/state",
		"/agents/" + a + "?id=" + mine,
		"//agents/" + a + "/state",
		"/x/../agents/" + a + "/state",
	}
	for _, target := range targets {
		for _, method := range []string{"GET", "POST", "DELETE", "HEAD"} {
			if status, body := rawRequest(t, addr, method, target, bob); status >= 200 && status < 300 {
				t.Errorf("bob %s %.120s: %d %.200s", method, target, status, body)
			}
		}
	}
	if seq := f.seqOf(a); seq != 0 {
		t.Fatalf("ann's agent reached seq %d", seq)
	}
	if info, err := f.reg.Info(a); err != nil || info.Owner != sessionName(t, ann) {
		t.Fatalf("ann's agent: %+v %v", info, err)
	}
	waitFor(t, func() bool { return f.fleet.streams.Load() == 0 })
}

// TestHostileFleetNotFoundIsAlike: for another's agent and for none, every
// route answers the same status, headers and body (but for the id).
func TestHostileFleetNotFoundIsAlike(t *testing.T) {
	f := newFleetFixture(t, nil)
	ann, bob := f.person(), f.person()
	a := f.create(ann)
	none := strings.Repeat("0", len(a))
	for _, r := range []struct{ method, path string }{
		{"GET", "/agents/%s"},
		{"DELETE", "/agents/%s"},
		{"GET", "/agents/%s/state"},
		{"HEAD", "/agents/%s/state"},
		{"GET", "/agents/%s/streams/x"},
		{"POST", "/agents/%s/inputs"},
		{"GET", "/agents/%s/token"},
		{"GET", "/agents/%s/nothing"},
	} {
		var res [2]*http.Response
		var body [2]string
		for i, id := range []string{a, none} {
			req, _ := http.NewRequest(r.method, f.srv.URL+fmt.Sprintf(r.path, id), strings.NewReader("{}"))
			req.Header.Set("Authorization", "Bearer "+bob)
			var err error
			if res[i], err = http.DefaultClient.Do(req); err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res[i].Body)
			res[i].Body.Close()
			body[i] = strings.ReplaceAll(string(b), id, "ID")
			res[i].Header.Del("Date")
		}
		if res[0].StatusCode != http.StatusNotFound || res[0].StatusCode != res[1].StatusCode || body[0] != body[1] || fmt.Sprint(res[0].Header) != fmt.Sprint(res[1].Header) {
			t.Errorf("%s %s: another's %d %v %q; none %d %v %q", r.method, r.path, res[0].StatusCode, res[0].Header, body[0], res[1].StatusCode, res[1].Header, body[1])
		}
	}
}

// TestHostileFleetStreamCounterAfterAbuse: many stream requests that end
// early — refused, aborted, of another's agent, bad resumption ids — leave
// the fleet's stream counter at 0 and no agent leased.
func TestHostileFleetStreamCounterAfterAbuse(t *testing.T) {
	f := newFleetFixture(t, func(c *FleetConfig[state, input, view]) { c.MaxStreams = 5 })
	ann, bob := f.person(), f.person()
	var ids []string
	for range 4 {
		ids = append(ids, f.create(ann))
	}
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			id := ids[i%len(ids)]
			token := ann
			path := "/agents/" + id + "/state"
			switch i % 6 {
			case 1:
				token = bob
			case 2:
				path += "?lastEventId=garbage"
			case 3:
				path = "/agents/" + id + "/streams/bad%20name"
			case 4:
				path = "/agents/" + id + "/streams/reply-" + fmt.Sprint(i)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%7)*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+path, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			if res, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		})
	}
	wg.Wait()
	waitFor(t, func() bool { return f.fleet.streams.Load() == 0 })
	f.now.Add(int64(2 * time.Hour))
	f.reg.Sweep()
	if s := f.reg.Stats(); s.Active != 0 {
		t.Fatalf("%d agents still active after the sweep: a lease is held (%+v)", s.Active, s)
	}
}

// TestHostileSessions: a session token is its key's only; no session is
// the operator, whatever its name; a fleet whose operator token is empty
// has no operator.
func TestHostileSessions(t *testing.T) {
	k1, _ := NewSessions([]byte("the first key, sixteen bytes+"))
	k2, _ := NewSessions([]byte("the second key, sixteen bytes+"))
	tok, name := k1.Issue()
	if _, err := k2.Check(tok); err == nil {
		t.Fatal("a token of one key passed another's check")
	}
	if !strings.HasPrefix(name, "u-") || name == OperatorName {
		t.Fatalf("Issue named %q", name)
	}
	identify := Identities("op-token", k1)
	req := func(auth string) *http.Request {
		r := httptest.NewRequest("GET", "/agents", nil)
		r.Header.Set("Authorization", auth)
		return r
	}
	who, err := identify(req("Bearer " + tok))
	if err != nil || who.Operator || who.Name != name {
		t.Fatalf("session identity %+v %v", who, err)
	}
	if who.May(journal.AgentInfo{Owner: OperatorName}) {
		t.Fatal("a session may touch the operator's agents")
	}
	for _, auth := range []string{"Bearer s1.operator." + k1.sum("operator") + "x", "Bearer s1.operator.", "bearer op-token ", "Bearer op-token\x00", "Basic op-token"} {
		if who, err := identify(req(auth)); err == nil && who.Operator {
			t.Errorf("%q is the operator", auth)
		}
	}
	noOperator := Identities("", k1)
	for _, auth := range []string{"Bearer ", "Bearer", ""} {
		if who, err := noOperator(req(auth)); err == nil || who.Operator {
			t.Errorf("with no operator token, %q is %+v, %v", auth, who, err)
		}
	}
}

// TestHostileFleetListParams: the list's query is bounded: a huge limit is
// refused, a huge after lists nothing.
func TestHostileFleetListParams(t *testing.T) {
	f := newFleetFixture(t, nil)
	ann := f.person()
	f.create(ann)
	for _, q := range []string{"limit=99999999999999999999999", "limit=-1", "limit=1e3", "limit=%00"} {
		if status, body := f.do("GET", "/agents?"+q, ann, nil); status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", q, status, body)
		}
	}
	status, body := f.do("GET", "/agents?after="+strings.Repeat("z", 100_000), ann, nil)
	if status != http.StatusOK || !strings.Contains(string(body), `"agents":[]`) {
		t.Errorf("a huge after: %d %.200s", status, body)
	}
}

// TestHostileFleetNamelessIdentityOwnsNothing: an Identify hook of the
// program's that lets a request in without a name (anyone, say) must not
// let it create agents: they would belong to nobody it could see, count
// toward no bound, and pile up without limit.
func TestHostileFleetNamelessIdentityOwnsNothing(t *testing.T) {
	f := newFleetFixture(t, func(c *FleetConfig[state, input, view]) {
		c.MaxAgentsPerOwner = 2
		c.Identify = func(r *http.Request) (Identity, error) {
			if r.Header.Get("Authorization") == "Bearer "+operatorToken {
				return Identity{Name: OperatorName, Operator: true}, nil
			}
			return Identity{}, nil
		}
	})
	for i := range 5 {
		if status, body := f.do("POST", "/agents", "anyone", nil); status != http.StatusForbidden {
			t.Errorf("POST /agents without a name: %d %s, want 403", status, body)
		}
		if status, body := f.do("PUT", fmt.Sprintf("/agents/mine-%d", i), "anyone", nil); status != http.StatusForbidden {
			t.Errorf("PUT /agents/mine-%d without a name: %d %s, want 403", i, status, body)
		}
	}
	if got := f.ids(operatorToken); len(got) != 0 {
		t.Fatalf("a nameless identity created %d agents", len(got))
	}
}

// TestHostileFleetLocationUnderAPrefix: the Location of a created agent
// resolves to its route when the fleet is mounted under a prefix, as
// automata/agents/reflexor mounts it under /api/: created by POST /agents
// and by PUT /agents/{id}.
func TestHostileFleetLocationUnderAPrefix(t *testing.T) {
	f := newFleetFixture(t, nil)
	mux := http.NewServeMux()
	mux.Handle("/api/", http.StripPrefix("/api", f.fleet))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, create := range []struct{ method, path string }{
		{"POST", "/api/agents"},
		{"PUT", "/api/agents/by-name"},
	} {
		req, _ := http.NewRequest(create.method, srv.URL+create.path, nil)
		req.Header.Set("Authorization", "Bearer "+operatorToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var a struct{ ID string }
		json.NewDecoder(res.Body).Decode(&a)
		res.Body.Close()
		loc, err := res.Location()
		if err != nil || res.StatusCode != http.StatusCreated {
			t.Fatalf("%s %s: %d, Location %v", create.method, create.path, res.StatusCode, err)
		}
		if want := srv.URL + "/api/agents/" + a.ID; loc.String() != want {
			t.Errorf("%s %s: Location resolves to %s, want %s", create.method, create.path, loc, want)
		}
		req, _ = http.NewRequest("GET", loc.String(), nil)
		req.Header.Set("Authorization", "Bearer "+operatorToken)
		if res, err = http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET the Location %s: %d", loc, res.StatusCode)
		}
	}
}

// TestHostileFleetAckedPostsSurviveChurn: people post to their agents at
// once over HTTP while the registry, capped at 2 active agents, sweeps in a
// loop: every POST answered 200 is in its agent's journal at the seq it
// was given; 503s are retried.
func TestHostileFleetAckedPostsSurviveChurn(t *testing.T) {
	f := newFleetFixtureOn(t, nil, func(c *registry.Config[state, input]) { c.MaxActive = 2 }, nil)
	type agentOf struct{ id, token string }
	var agents []agentOf
	for range 2 {
		token := f.person()
		for range 2 {
			agents = append(agents, agentOf{f.create(token), token})
		}
	}
	stop := make(chan struct{})
	var sweeper sync.WaitGroup
	sweeper.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			f.now.Add(int64(2 * time.Hour))
			f.reg.Sweep()
		}
	})
	var mu sync.Mutex
	acked := map[string]map[uint64]string{} // agent: seq: message id
	var busy atomic.Int64
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for n := range 8 {
				a := agents[(w+n)%len(agents)]
				msg := fmt.Sprintf("w%d-%d", w, n)
				for {
					status, body := f.do("POST", "/agents/"+a.id+"/inputs", a.token, userMessage(msg, "hi"))
					if status == http.StatusServiceUnavailable {
						busy.Add(1)
						time.Sleep(2 * time.Millisecond)
						continue
					}
					if status != http.StatusOK {
						t.Errorf("POST %s: %d %s", msg, status, body)
						break
					}
					var res struct{ Seq uint64 }
					json.Unmarshal(body, &res)
					mu.Lock()
					if acked[a.id] == nil {
						acked[a.id] = map[uint64]string{}
					}
					acked[a.id][res.Seq] = msg
					mu.Unlock()
					break
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	sweeper.Wait()
	total := 0
	for _, a := range agents {
		ag, release, err := f.reg.Get(context.Background(), a.id)
		for errors.Is(err, registry.ErrTooManyActive) {
			// Both places are held by agents whose reply jobs have not
			// returned yet (a job in flight keeps its agent active).
			time.Sleep(time.Millisecond)
			ag, release, err = f.reg.Get(context.Background(), a.id)
		}
		if err != nil {
			t.Fatal(err)
		}
		entries, err := ag.Machine().Inputs(1, ag.Machine().Seq())
		release()
		if err != nil {
			t.Fatal(err)
		}
		bySeq := map[uint64]string{}
		for _, e := range entries {
			if m, ok := e.Input.(decl.SendUserMessage); ok {
				bySeq[e.Seq] = m.ID
			}
		}
		for seq, msg := range acked[a.id] {
			total++
			if bySeq[seq] != msg {
				t.Errorf("agent %s: the acknowledged %s at seq %d is not there (%q)", a.id, msg, seq, bySeq[seq])
			}
		}
	}
	s := f.reg.Stats()
	t.Logf("%d POSTs acknowledged, %d answered 503; %d activations, %d deactivations", total, busy.Load(), s.Activations, s.Deactivations)
	if total != 6*8 {
		t.Fatalf("%d acknowledged, want %d", total, 6*8)
	}
}
