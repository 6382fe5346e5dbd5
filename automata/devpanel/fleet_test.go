package devpanel_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/devpanel"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/registry"
)

const operator = "panel-operator"

// fleetPanel serves the panels of a registry of chat test agents, two owned
// by ann and bob, and returns the server, their ids and their tokens.
func fleetPanel(t *testing.T, openToOwners bool) (srv *httptest.Server, annID, bobID, annTok, bobTok string) {
	t.Helper()
	fp := newFleetPanel(t, fleetOptions{openToOwners: openToOwners})
	return fp.srv, fp.annID, fp.bobID, fp.annTok, fp.bobTok
}

// aFleetPanel is what newFleetPanel serves.
type aFleetPanel struct {
	srv            *httptest.Server
	reg            *registry.Registry[decl.AgentState, decl.AgentInput]
	calls          *fixture // calls.replay counts the llm's jobs that ran, of every agent
	annID, bobID   string
	annTok, bobTok string
}

// fleetOptions are newFleetPanel's.
type fleetOptions struct {
	openToOwners bool
	// jobKeys: the journals keep the keys of the jobs that dispatched
	// their inputs (journal.Options.JobKeys), which forks are answered by.
	jobKeys bool
	// wrap, when not nil, wraps the registry's fleet.
	wrap func(journal.Fleet) journal.Fleet
	// subAgentPanel is FleetConfig.SubAgentPanel.
	subAgentPanel func(parent, key string) string
}

// newFleetPanel is fleetPanel's, with the panels showing the jobs
// (Config.Jobs) and the actors.
func newFleetPanel(t *testing.T, o fleetOptions) *aFleetPanel {
	t.Helper()
	sessions, err := httpbridge.NewSessions([]byte("sixteen bytes or more of key"))
	if err != nil {
		t.Fatal(err)
	}
	calls := &fixture{t: t}
	jobFns := decl.JobFns{Llm: replies(calls)}
	panels, err := devpanel.NewFleet(devpanel.FleetConfig[decl.AgentState, decl.AgentInput]{
		Panel:         testConfig(jobFns),
		Identify:      httpbridge.Identities(operator, sessions),
		OpenToOwners:  o.openToOwners,
		SubAgentPanel: o.subAgentPanel,
	})
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := bolt.OpenFleet(filepath.Join(t.TempDir(), "agents.db"))
	if err != nil {
		t.Fatal(err)
	}
	var regFleet journal.Fleet = fleet
	if o.wrap != nil {
		regFleet = o.wrap(fleet)
	}
	reg, err := registry.New(registry.Config[decl.AgentState, decl.AgentInput]{
		Fleet:  regFleet,
		Logger: slog.New(slog.DiscardHandler),
		Open: func(id string, s journal.Store) (*journal.Machine[decl.AgentState, decl.AgentInput], error) {
			return panels.OpenAgent(id, s, journal.Options[decl.AgentState, decl.AgentInput]{
				Codec:   journal.JSON[decl.AgentState](decl.DecodeInput),
				Logger:  slog.New(slog.DiscardHandler),
				JobKeys: o.jobKeys,
			}, agent.WithJobs(jobFns))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	fp := &aFleetPanel{srv: httptest.NewServer(panels.Handler(reg)), reg: reg, calls: calls}
	t.Cleanup(func() {
		fp.srv.Close()
		if err := reg.Close(context.Background()); err != nil {
			t.Error(err)
		}
		if err := fleet.Close(); err != nil {
			t.Error(err)
		}
	})
	var ann, bob string
	fp.annTok, ann = sessions.Issue()
	fp.bobTok, bob = sessions.Issue()
	if fp.annID, err = reg.Create("", ann); err != nil {
		t.Fatal(err)
	}
	if fp.bobID, err = reg.Create("", bob); err != nil {
		t.Fatal(err)
	}
	return fp
}

// get requests path with token in the Authorization header, or in the query
// when inQuery (as the page is opened).
func get(t *testing.T, srv *httptest.Server, method, path, token string, inQuery bool, body string) (int, string) {
	t.Helper()
	url := srv.URL + path
	if inQuery {
		url += "?token=" + token
	}
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if !inQuery && token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp.StatusCode, "" // an open stream: its status says enough
	}
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestFleetPanelOwnersOnly: the panel of an agent opens for its owner and
// the operator, and answers 404 on every route to another identity, as for
// an agent that does not exist; the list shows each identity its own.
func TestFleetPanelOwnersOnly(t *testing.T) {
	srv, annID, bobID, annTok, bobTok := fleetPanel(t, true)
	input := `{"type":"send-user-message","id":"m1","content":"hi","timestamp":1}`
	routes := []struct {
		method, path string
		inQuery      bool
		body         string
	}{
		{"GET", "/agents/%s/schema", false, ""},
		{"GET", "/agents/%s/state?seq=0", false, ""},
		{"GET", "/agents/%s/hold", false, ""},
		{"POST", "/agents/%s/hold", false, ""},
		{"POST", "/agents/%s/inputs", false, input},
		{"GET", "/agents/%s/events", false, ""},
	}
	for _, r := range routes {
		path := strings.Replace(r.path, "%s", annID, 1)
		if status, body := get(t, srv, r.method, path, bobTok, r.inQuery, r.body); status != http.StatusNotFound || !strings.Contains(body, "no agent") {
			t.Errorf("bob %s %s: %d %s, want 404", r.method, path, status, body)
		}
		if status, _ := get(t, srv, r.method, path, "", false, r.body); status != http.StatusUnauthorized {
			t.Errorf("no token %s %s: %d, want 401", r.method, path, status)
		}
		if r.method == "POST" {
			continue // ann's own POSTs would change what the others see
		}
		if status, body := get(t, srv, r.method, path, annTok, r.inQuery, r.body); status != http.StatusOK {
			t.Errorf("ann %s %s: %d %s, want 200", r.method, path, status, body)
		}
		if status, body := get(t, srv, r.method, path, operator, r.inQuery, r.body); status != http.StatusOK {
			t.Errorf("the operator %s %s: %d %s, want 200", r.method, path, status, body)
		}
	}
	if status, body := get(t, srv, "POST", "/agents/"+annID+"/inputs", annTok, false, input); status != http.StatusOK {
		t.Fatalf("ann posting from her panel: %d %s", status, body)
	}
	lists := map[string][]string{annTok: {annID}, bobTok: {bobID}}
	for tok, want := range lists {
		status, body := get(t, srv, "GET", "/agents", tok, false, "")
		var page struct{ Agents []struct{ ID string } }
		json.Unmarshal([]byte(body), &page)
		if status != http.StatusOK || len(page.Agents) != 1 || page.Agents[0].ID != want[0] {
			t.Errorf("list: %d %s, want only %v", status, body, want)
		}
	}
	if status, body := get(t, srv, "GET", "/agents", operator, false, ""); status != http.StatusOK || !strings.Contains(body, annID) || !strings.Contains(body, bobID) {
		t.Errorf("the operator's list: %d %s, want both", status, body)
	}
	if status, body := get(t, srv, "GET", "/", "", false, ""); status != http.StatusOK || !strings.Contains(body, "<title>devpanel · agents</title>") {
		t.Errorf("the list page: %d %.100s", status, body)
	}
}

// TestFleetPanelIsTheOperatorsByDefault: without OpenToOwners, an owner who
// is not an operator gets 403 on every route of their own agent's panel
// (which would let them send any actor's input, and hold the jobs), and
// nothing reaches the agent; another's agent is 404 as before; the operator
// opens both.
func TestFleetPanelIsTheOperatorsByDefault(t *testing.T) {
	srv, annID, _, annTok, bobTok := fleetPanel(t, false)
	forged := `{"type":"send-assi-message","id":"forged","content":"not the llm","timestamp":1}`
	for _, r := range []struct {
		method, path string
		inQuery      bool
		body         string
	}{
		{"GET", "/agents/%s/state?seq=0", false, ""},
		{"POST", "/agents/%s/hold", false, ""},
		{"POST", "/agents/%s/inputs", false, forged},
	} {
		path := strings.Replace(r.path, "%s", annID, 1)
		if status, body := get(t, srv, r.method, path, annTok, r.inQuery, r.body); status != http.StatusForbidden || !strings.Contains(body, "OpenToOwners") {
			t.Errorf("ann %s %s on her own agent: %d %s, want 403", r.method, path, status, body)
		}
		if status, _ := get(t, srv, r.method, path, bobTok, r.inQuery, r.body); status != http.StatusNotFound {
			t.Errorf("bob %s %s: %d, want 404", r.method, path, status)
		}
	}
	status, body := get(t, srv, "GET", "/agents/"+annID+"/state?seq=0", operator, false, "")
	if status != http.StatusOK {
		t.Fatalf("the operator's panel of ann's agent: %d %s", status, body)
	}
	if status, body := get(t, srv, "GET", "/agents/"+annID+"/hold", operator, false, ""); status != http.StatusOK || strings.Contains(body, `"held":true`) {
		t.Fatalf("ann's agent after her refused hold: %d %s, want not held", status, body)
	}
}

// TestFleetPagesAreOpen: the pages of a fleet's panels, and their files,
// are the same for every agent id and every caller, with a token or
// without: they hold no data, and say nothing of whether the agent exists.
// The API takes the token from the Authorization header only: one in the
// address is refused, as it would be in the server's logs and the
// browser's history.
func TestFleetPagesAreOpen(t *testing.T) {
	srv, annID, _, annTok, _ := fleetPanel(t, true)
	for _, file := range []string{"", "index.html", "app.js", "form.js", "token.js", "style.css"} {
		_, want := get(t, srv, "GET", "/agents/"+annID+"/"+file, annTok, false, "")
		for _, path := range []string{"/agents/" + annID + "/" + file, "/agents/no-such-agent/" + file} {
			status, body := get(t, srv, "GET", path, "", false, "")
			if status != http.StatusOK || body != want || want == "" {
				t.Errorf("GET %s without a token: %d, %d bytes; want 200 and the %d bytes the owner gets", path, status, len(body), len(want))
			}
		}
	}
	if status, _ := get(t, srv, "POST", "/agents/"+annID+"/", annTok, false, "{}"); status != http.StatusMethodNotAllowed {
		t.Errorf("POST to the page: %d, want 405", status)
	}
	for _, path := range []string{"/agents", "/agents/" + annID + "/state"} {
		if status, body := get(t, srv, "GET", path, annTok, true, ""); status != http.StatusUnauthorized {
			t.Errorf("GET %s?token=: %d %s, want 401", path, status, body)
		}
	}
}

// TestPagesSendNoReferrer: every page of the panels, and their files, says
// Referrer-Policy: no-referrer, so that a page opened with ?token= in its
// address sends it to no other site; the API's answers are not pages.
func TestPagesSendNoReferrer(t *testing.T) {
	srv, annID, _, _, _ := fleetPanel(t, true)
	one := newFixture(t)
	pages := []string{
		srv.URL + "/",
		srv.URL + "/token.js",
		srv.URL + "/agents/" + annID + "/",
		srv.URL + "/agents/" + annID + "/token.js",
		srv.URL + "/agents/" + annID + "/app.js",
		one.srv.URL + "/",
		one.srv.URL + "/index.html",
		one.srv.URL + "/app.js",
		one.srv.URL + "/token.js",
	}
	for _, u := range pages {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("GET %s: %s, Referrer-Policy %q; want 200 and no-referrer", u, resp.Status, resp.Header.Get("Referrer-Policy"))
		}
	}
}

// TestFleetPut: an operator creates an agent of the id it chooses (201),
// the same PUT again answers it (200), an id that is not one is 400, and
// only an operator creates agents from the panels (403 for an owner).
func TestFleetPut(t *testing.T) {
	srv, annID, _, annTok, _ := fleetPanel(t, true)
	status, body := get(t, srv, "PUT", "/agents/report-19", operator, false, "")
	if status != http.StatusCreated || !strings.Contains(body, `"id":"report-19"`) {
		t.Fatalf("PUT of a new id: %d %s, want 201 with the id", status, body)
	}
	if status, body := get(t, srv, "PUT", "/agents/report-19", operator, false, ""); status != http.StatusOK || !strings.Contains(body, `"id":"report-19"`) {
		t.Errorf("the same PUT again: %d %s, want 200", status, body)
	}
	if status, _ := get(t, srv, "GET", "/agents/report-19/state?seq=0", operator, false, ""); status != http.StatusOK {
		t.Errorf("the panel of the agent PUT created: %d, want 200", status)
	}
	if status, body := get(t, srv, "PUT", "/agents/"+annID, operator, false, ""); status != http.StatusOK || !strings.Contains(body, `"owner"`) {
		t.Errorf("PUT of ann's agent by the operator: %d %s, want 200", status, body)
	}
	if status, body := get(t, srv, "PUT", "/agents/bad%20id", operator, false, ""); status != http.StatusBadRequest {
		t.Errorf("PUT of an invalid id: %d %s, want 400", status, body)
	}
	if status, body := get(t, srv, "PUT", "/agents/anns-own", annTok, false, ""); status != http.StatusForbidden {
		t.Errorf("PUT by an owner: %d %s, want 403", status, body)
	}
	if status, _ := get(t, srv, "PUT", "/agents/report-20", "", false, ""); status != http.StatusUnauthorized {
		t.Errorf("PUT without a token: %d, want 401", status)
	}
}
