package devpanel_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/moora-go/moora/automata/journal"
)

// TestBrowserSubAgentLinks: a sub-agent's panel says whose it is, for which
// job, and links to its parent's panel; the parent's Jobs monitor links the
// job that delegated to the sub-agent's panel (FleetConfig.SubAgentPanel),
// and no other job. The routes behind: GET /config's delegatedBy, and GET
// /subagent?job=, which is 404 for a job that delegates to nobody and 400
// without a job.
func TestBrowserSubAgentLinks(t *testing.T) {
	const child = "sub-of-ann"
	var fp *aFleetPanel
	fp = newFleetPanel(t, fleetOptions{subAgentPanel: func(parent, key string) string {
		if parent == fp.annID && key == "llm/reply-m1" {
			return "../" + child + "/"
		}
		return ""
	}})
	if err := fp.reg.CreateInfo(child, journal.AgentInfo{Owner: fp.owner(t, fp.annID), Delegated: &journal.Delegation{Agent: fp.annID, Job: "llm/reply-m1", Depth: 1}}); err != nil {
		t.Fatal(err)
	}
	fp.send(t, fp.annID, operator, "m1")
	fp.waitSeq(t, fp.annID, 2)
	for _, c := range []struct {
		path string
		want int
		has  string
	}{
		{"/agents/" + child + "/config", http.StatusOK, `"delegatedBy":{"agent":"` + fp.annID + `","depth":1,"job":"llm/reply-m1","panel":"../` + fp.annID + `/"}`},
		{"/agents/" + fp.annID + "/config", http.StatusOK, `"subAgents":true`},
		{"/agents/" + fp.annID + "/subagent?job=llm/reply-m1", http.StatusOK, `"panel":"../` + child + `/"`},
		{"/agents/" + fp.annID + "/subagent?job=llm/other", http.StatusNotFound, "delegates to no sub-agent"},
		{"/agents/" + fp.annID + "/subagent", http.StatusBadRequest, "job:"},
		{"/agents/" + fp.annID + "/subagent?job=" + strings.Repeat("k", 513), http.StatusBadRequest, "job:"},
	} {
		status, body := get(t, fp.srv, "GET", c.path, operator, false, "")
		if status != c.want || !strings.Contains(body, c.has) {
			t.Errorf("GET %s = %d %s, want %d with %s", c.path, status, body, c.want, c.has)
		}
	}

	ctx := newBrowser(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate(fp.srv.URL+"/agents/"+fp.annID+"/#token="+url.QueryEscape(operator)),
		poll(`document.getElementById('conn').textContent === 'live'`),
		poll(`document.querySelector('#jobs tr[data-key="llm/reply-m1"] a.subagent') !== null`),
	)
	if err != nil {
		t.Fatalf("the parent's panel: %v", err)
	}
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#jobs tr[data-key="llm/reply-m1"] a.subagent').href`))
	if want := fp.srv.URL + "/agents/" + child + "/#token=" + url.QueryEscape(operator); err != nil || href != want {
		t.Fatalf("the job links to %q (%v), want %q", href, err, want)
	}
	screenshot(t, ctx, "subagent-parent")
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#jobs a.subagent`)))
	if err == nil {
		err = landOn(ctx, `location.pathname === '/agents/`+child+`/'`)
	}
	if err == nil {
		err = chromedp.Do(ctx,
			poll(`document.getElementById('conn').textContent === 'live'`),
			poll(`!document.getElementById('delegated').hidden`),
		)
	}
	if err != nil {
		t.Fatalf("following the job to the sub-agent's panel: %v", err)
	}
	header, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('delegated').textContent`))
	if err != nil || !strings.Contains(header, "sub-agent of "+fp.annID) || !strings.Contains(header, "llm/reply-m1") {
		t.Fatalf("the sub-agent's header says %q (%v)", header, err)
	}
	screenshot(t, ctx, "subagent-child")
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#delegated-link`)))
	if err == nil {
		err = landOn(ctx, `location.pathname === '/agents/`+fp.annID+`/'`)
	}
	if err == nil {
		err = chromedp.Do(ctx, poll(`document.getElementById('conn').textContent === 'live'`))
	}
	if err != nil {
		t.Fatalf("following the header back to the parent: %v", err)
	}
}
