package devpanel_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserFork drives "Fork here" in headless Chromium, on a fleet whose
// journals keep their jobs' keys: on the panel of a conversation of one
// message and the model's reply, time travel to the message, and fork
// there. The tab lands on the fork's own panel (its token passed in the
// fragment, and taken out of the address), whose header says "forked from"
// the parent at 1, a link to the parent's panel; its timeline has the
// model's reply badged "from the record", its job marked so in the job
// monitor, and the model was not called for it. A message sent from the
// fork's form departs from the record: its reply is badged "live", the
// model called once more. A single agent's panel, which has no fork route,
// shows no "Fork here".
func TestBrowserFork(t *testing.T) {
	fp := newFleetPanel(t, fleetOptions{jobKeys: true})
	fp.send(t, fp.annID, operator, "m1")
	fp.waitSeq(t, fp.annID, 2)
	if n := fp.calls.replay.Load(); n != 1 {
		t.Fatalf("the model was called %d times for one message, want 1", n)
	}
	ctx := newBrowser(t)
	parent := fp.srv.URL + "/agents/" + fp.annID + "/"
	err := chromedp.Do(ctx,
		chromedp.Navigate(parent+"#token="+url.QueryEscape(operator)),
		poll(`document.getElementById('conn').textContent === 'live'`),
		poll(`document.querySelectorAll('#rows tr.row').length === 2`),
		poll(`document.querySelector('#rows tr.row[data-seq="2"] .answer.live') !== null`),
		chromedp.Click(chromedp.CSS(`#rows tr.row[data-seq="1"]`)),
		chromedp.Click(chromedp.CSS(`#tt-go`)),
		poll(`document.getElementById('tt-shown').textContent === '1'`),
		poll(`!document.getElementById('tt-fork-row').hidden && !document.getElementById('tt-fork').disabled`),
	)
	if err != nil {
		t.Fatalf("time travel on the parent's panel: %v", err)
	}
	if origin, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('origin').hidden`)); err != nil || !origin {
		t.Errorf("the parent's header says it is a fork (%v)", err)
	}
	screenshot(t, ctx, "fork-here")
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#tt-fork`)))
	if err == nil {
		err = landOn(ctx, `location.pathname !== '/agents/`+fp.annID+`/'`)
	}
	if err != nil {
		t.Fatalf("Fork here: %v", err)
	}
	err = chromedp.Do(ctx,
		poll(`document.getElementById('conn').textContent === 'live'`),
		poll(`!document.getElementById('origin').hidden`),
		poll(`document.querySelector('#rows tr.row[data-seq="2"] .answer') !== null`),
	)
	if err != nil {
		problems, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + ' ' + document.getElementById('problems').textContent`))
		t.Fatalf("the fork's panel: %v (%s)", err, problems)
	}
	here, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`({
		path: location.pathname, hash: location.hash,
		origin: document.getElementById('origin').textContent.replace(/\s+/g, ' ').trim(),
		link: document.getElementById('origin-link').href,
		rows: [...document.querySelectorAll('#rows tr.row')].map((r) => r.dataset.seq).join(' '),
		badge: document.querySelector('#rows tr.row[data-seq="2"] .answer').textContent,
		reply: document.querySelector('#rows tr.row[data-seq="2"]').children[3].textContent,
	})`))
	if err != nil {
		t.Fatal(err)
	}
	child := strings.TrimSuffix(strings.TrimPrefix(here["path"], "/agents/"), "/")
	if child == fp.annID || child == "" || strings.Contains(child, "/") || here["hash"] != "" {
		t.Errorf("the tab is at %s%s, want the fork's panel, the token taken out", here["path"], here["hash"])
	}
	if want := "forked from " + fp.annID + " at 1"; here["origin"] != want || here["link"] != parent+"#token="+operator {
		t.Errorf("the fork's header says %q, linking to %s; want %q, linking to %s#token=…", here["origin"], here["link"], want, parent)
	}
	if here["rows"] != "2" || here["badge"] != "from the record" || !strings.HasPrefix(here["reply"], "send-assi-message") {
		t.Errorf("the fork's timeline: rows %q, the reply %q badged %q; want the reply alone, badged from the record", here["rows"], here["reply"], here["badge"])
	}
	if n := fp.calls.replay.Load(); n != 1 {
		t.Errorf("the model was called %d times for the fork, want 0 (1 in all, the parent's)", n-1)
	}
	err = chromedp.Do(ctx,
		poll(`(() => { const j = document.querySelector('#jobs tr[data-key="llm/reply-m1"]');
			return j !== null && j.classList.contains('from-record') && j.querySelector('.answer.recorded').textContent === 'from the record' })()`),
	)
	if err != nil {
		jobs, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('jobs').innerHTML`))
		t.Errorf("the job monitor does not mark llm/reply-m1 as answered from the record: %v (%s)", err, jobs)
	}

	err = chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('in-type'); s.value = 'send-user-message'; s.dispatchEvent(new Event('change')) })()`),
		chromedp.SendKeys(chromedp.CSS(`#in-fields [name=id]`), "m2"),
		chromedp.SendKeys(chromedp.CSS(`#in-fields [name=content]`), "and on the fork?"),
		chromedp.Click(chromedp.ID("in-send")),
		poll(`(() => { const m = document.querySelector('#in-msg.ok'); return m !== null && m.textContent === 'Sent: input 3' })()`),
		poll(`document.querySelector('#rows tr.row[data-seq="4"] .answer') !== null`),
		poll(`(() => { const j = document.querySelector('#jobs tr[data-key="llm/reply-m2"]');
			return j !== null && j.classList.contains('ran') && j.querySelector('.answer.live') !== null })()`),
	)
	if err != nil {
		msg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('in-msg').textContent + ' ' + document.getElementById('problems').textContent`))
		t.Fatalf("sending from the fork's form: %v (%s)", err, msg)
	}
	badges, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#rows tr.row')].map((r) => r.dataset.seq + ':' + (r.querySelector('.answer')?.textContent ?? ''))`))
	if want := "2:from the record 3: 4:live"; err != nil || strings.Join(badges, " ") != want {
		t.Errorf("the fork's timeline badges: %q %v, want %q", badges, err, want)
	}
	if n := fp.calls.replay.Load(); n != 2 {
		t.Errorf("the model was called %d times in all, want 2: the fork's own message ran it", n)
	}
	screenshot(t, ctx, "fork-panel")

	err = chromedp.Do(ctx, chromedp.Click(chromedp.ID("origin-link")))
	if err == nil {
		err = landOn(ctx, `location.pathname === '/agents/`+fp.annID+`/'`)
	}
	if err != nil {
		t.Fatalf("the link to the parent: %v", err)
	}
	err = chromedp.Do(ctx,
		poll(`document.getElementById('conn').textContent === 'live'`),
		poll(`document.querySelectorAll('#rows tr.row').length === 2`),
	)
	if err != nil {
		t.Fatalf("the parent's panel from the fork's link: %v", err)
	}
	noTokenInAddress(t, ctx, parent)
	err = chromedp.Do(ctx,
		chromedp.Navigate(fp.srv.URL+"/"), // the token is the tab's
		poll(`document.querySelectorAll('#agents tr').length === 3`),
	)
	if err != nil {
		t.Fatalf("the list of agents: %v", err)
	}
	list, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll('#agents tr')].map((r) => [r.cells[0].textContent, r.cells[3].textContent]))`))
	if want := map[string]string{fp.annID: "", fp.bobID: "", child: fp.annID + " at 1"}; err != nil || fmt.Sprint(list) != fmt.Sprint(want) {
		t.Errorf("the list says the agents were forked from %v (%v), want %v", list, err, want)
	}
	screenshot(t, ctx, "fork-list")

	one := newFixture(t)
	one.send("s1", "hi")
	err = chromedp.Do(ctx,
		chromedp.Navigate(one.srv.URL+"/#token="+token),
		poll(`document.getElementById('conn').textContent === 'live'`),
		poll(`document.querySelectorAll('#rows tr.row').length >= 1`),
		chromedp.Click(chromedp.CSS(`#rows tr.row[data-seq="1"]`)),
		chromedp.Click(chromedp.CSS(`#tt-go`)),
		poll(`document.getElementById('tt-shown').textContent === '1'`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('tt-fork-row').hidden && document.getElementById('origin').hidden`)); err != nil || !hidden {
		t.Errorf("a single agent's panel shows Fork here, or an origin (%v)", err)
	}
}

// landOn waits for the page the tab goes to to load and meet the JavaScript
// expression cond: a poll that the navigation interrupts is polled again,
// on the new page.
func landOn(ctx context.Context, cond string) error {
	for {
		err := chromedp.Do(ctx, poll(`document.readyState === 'complete' && (`+cond+`)`))
		if err == nil || ctx.Err() != nil {
			return err
		}
	}
}
