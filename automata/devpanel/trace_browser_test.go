package devpanel_test

import (
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserTrace drives the trace view in headless Chromium: choosing the
// first input of the timeline shows its trace as a waterfall, a row per
// span nested by depth (the input, its job, the job's model call, tool
// call, model call again and the reply it dispatched), the chosen input's
// row highlighted, model and tool calls in colours of their own; the
// third input's trace has its failed tool call in red. A click on a row
// shows its attributes. The screenshots are
// saved in $DEVPANEL_ARTIFACTS when it is set (trace.png, trace-error.png).
func TestBrowserTrace(t *testing.T) {
	f, watch := tracedFixture(t, "agent-1", 40*time.Millisecond)
	f.send("u1", "what is 6 times 7?")
	watch.wait(t, "moora.job", "moora.input send-assi-message")
	f.send("u2", "divide by zero, fail")
	watch.wait(t, "moora.job", "moora.input send-assi-message")

	ctx := newBrowser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/?token="+token),
		poll(`document.querySelectorAll('#rows tr.row').length === 4`),
		poll(`document.getElementById('conn').textContent === 'live'`),
		chromedp.Click(chromedp.CSS(`#rows tr.row[data-seq="1"]`)),
		poll(`document.querySelectorAll('#trace .wf-row').length === 6`),
	); err != nil {
		t.Fatal(err)
	}
	type row struct {
		Name, Category string
		Depth          int
		Parent         string // the name of the row its parent id names
		Chosen, Error  bool
		Indent         float64 // px
		Bar            string  // the bar's colour
	}
	rows := func() []row {
		t.Helper()
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]row](`(() => {
			const rows = [...document.querySelectorAll('#trace .wf-row')];
			const name = (r) => r.querySelector('.wf-label').firstChild.textContent;
			return rows.map((r) => {
				const p = rows.find((q) => q.dataset.span === r.dataset.parent);
				return { name: name(r), category: r.querySelector('.wf-cat').textContent, depth: Number(r.dataset.depth),
					parent: p ? name(p) : '', chosen: r.classList.contains('chosen'), error: r.classList.contains('error'),
					indent: parseFloat(getComputedStyle(r.querySelector('.wf-name')).paddingLeft),
					bar: getComputedStyle(r.querySelector('.wf-bar')).backgroundColor };
			});
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := rows()
	want := []struct {
		name, category string
		depth          int
		parent         string
	}{
		{"moora.input send-user-message", "input", 0, ""},
		{"moora.job", "job", 1, "moora.input send-user-message"},
		{"chat scripted", "model", 2, "moora.job"},
		{"execute_tool calculator", "tool", 2, "moora.job"},
		{"chat scripted", "model", 2, "moora.job"},
		{"moora.input send-assi-message", "input", 2, "moora.job"},
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.name || g.Category != w.category || g.Depth != w.depth || g.Parent != w.parent || g.Chosen != (i == 0) || g.Error {
			t.Errorf("row %d: %+v, want %+v, chosen %v, no error", i, g, w, i == 0)
		}
		if i > 0 && g.Indent != got[0].Indent+float64(16*w.depth) {
			t.Errorf("row %d (%s) is indented %vpx, want %vpx: depth %d", i, g.Name, g.Indent, got[0].Indent+float64(16*w.depth), w.depth)
		}
	}
	colours := []string{got[0].Bar, got[1].Bar, got[2].Bar, got[3].Bar}
	if len(slices.Compact(slices.Sorted(slices.Values(colours)))) != 4 {
		t.Errorf("the bars of an input, a job, a model call and a tool call are coloured %q: want four colours", colours)
	}
	note, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#trace .wf-row.chosen small').textContent`))
	if err != nil || note != "#1 · user" {
		t.Errorf("the chosen input's row says %q (%v), want its seq and actor from the journal", note, err)
	}
	// A click on a row shows its span's attributes.
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#trace .wf-row.cat-model`)),
		poll(`(() => { const m = document.querySelector('#trace .wf-row.cat-model + .wf-more');
			return !m.hidden && m.textContent.includes('gen_ai.usage.input_tokens = 42') })()`),
	); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "trace")

	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#rows tr.row[data-seq="3"]`)),
		poll(`document.querySelectorAll('#trace .wf-row').length === 6 && document.querySelector('#trace .wf-row.chosen small').textContent === '#3 · user'`),
	); err != nil {
		t.Fatal(err)
	}
	got = rows()
	for i, g := range got {
		failed := g.Name == "execute_tool calculator"
		if g.Error != failed || failed && g.Bar != "rgb(194, 59, 59)" {
			t.Errorf("row %d (%s): error %v, bar %s; want only the tool call's, red", i, g.Name, g.Error, g.Bar)
		}
	}
	screenshot(t, ctx, "trace-error")
}
