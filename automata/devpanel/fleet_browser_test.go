package devpanel_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserFleetList drives the fleet's list page in headless Chromium:
// a person sees only their own agent, the operator both, and the link of
// an agent opens its panel, live, showing the input its owner sent. The
// token is in no address once a page has loaded (it passes from the list
// to a panel as a fragment, which no request carries), and a panel opened
// again in the tab without it still works.
func TestBrowserFleetList(t *testing.T) {
	srv, annID, bobID, annTok, _ := fleetPanel(t, true)
	get(t, srv, "POST", "/agents/"+annID+"/inputs", annTok, false, `{"type":"send-user-message","id":"m1","content":"hello panel","timestamp":1}`)
	ctx := newBrowser(t)
	rows := `[...document.querySelectorAll('#agents tr')].map(r => r.cells[0].textContent)`
	var seen []string
	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/?token="+annTok),
		poll(`document.querySelectorAll('#agents tr').length > 0`),
	)
	if err == nil {
		seen, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](rows))
	}
	if err != nil || len(seen) != 1 || seen[0] != annID {
		t.Fatalf("ann's list shows %v (%v), want only %s", seen, err, annID)
	}
	noTokenInAddress(t, ctx, srv.URL+"/")
	err = chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/?token="+operator),
		poll(`document.querySelectorAll('#agents tr').length === 2`),
	)
	if err != nil {
		t.Fatal(err)
	}
	seen, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](rows))
	if err != nil || len(seen) != 2 || !(seen[0] == annID && seen[1] == bobID || seen[0] == bobID && seen[1] == annID) {
		t.Fatalf("the operator's list shows %v (%v), want both", seen, err)
	}
	screenshot(t, ctx, "fleet-list")
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#agents a[href*="`+annID+`"]').href`))
	if err != nil {
		t.Fatal(err)
	}
	if want := srv.URL + "/agents/" + annID + "/#token=" + operator; href != want {
		t.Errorf("the link to ann's panel is %s, want %s", href, want)
	}
	err = chromedp.Do(ctx,
		chromedp.Navigate(href), // where the link goes, as a click would
		poll(`document.getElementById('conn') && document.getElementById('conn').textContent === 'live'`),
		poll(`document.querySelectorAll('#rows tr.row').length >= 1 && document.getElementById('rows').textContent.includes('send-user-message')`),
	)
	if err != nil {
		t.Fatalf("opening ann's panel from the list: %v", err)
	}
	noTokenInAddress(t, ctx, srv.URL+"/agents/"+annID+"/")
	screenshot(t, ctx, "fleet-panel")
	err = chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/agents/"+annID+"/"), // as a reload, or a bookmark, would
		poll(`document.getElementById('conn') && document.getElementById('conn').textContent === 'live'`),
		poll(`document.getElementById('rows').textContent.includes('send-user-message')`),
	)
	if err != nil {
		t.Fatalf("ann's panel opened again without the token in its address: %v", err)
	}
}

// noTokenInAddress fails t unless the page's address is want: its token
// taken out (replaced in the tab's history, not added to it).
func noTokenInAddress(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
	if err != nil || got != want {
		t.Errorf("the page's address is %q (%v), want %q", got, err, want)
	}
}
