package httpbridge

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/moora-go/moora/internal/browsertest"
)

// page is a chat page built on the ES module, as a program would write one.
const page = `<!doctype html>
<meta charset="utf-8">
<title>chat</title>
<ul id="messages"></ul>
<p id="reply"></p>
<input id="text"><button id="send">Send</button>
<script type="module">
import { connect } from "/agent/client.js";
const agent = connect("/agent", { token: "` + testToken + `" });
window.agent = agent;
let n = 0;
agent.onState((view) => {
  const all = view.userMessages.flatMap((m, i) =>
    i < view.assiMessages.length ? [["user", m], ["llm", view.assiMessages[i]]] : [["user", m]]);
  document.getElementById("messages").innerHTML = all
    .map(([who, m]) => "<li>" + who + ": " + m.content.replace(/</g, "&lt;") + "</li>").join("");
});
document.getElementById("send").onclick = async () => {
  const id = "b" + n++;
  const input = document.getElementById("text");
  const res = await agent.post({ type: "send-user-message", id, content: input.value, timestamp: 0 });
  input.value = "";
  agent.follow("reply-" + id, (text, done) => {
    document.getElementById("reply").textContent = (done ? "done: " : "") + text;
  });
  await agent.until(res.seq);
};
</script>`

// TestBrowser drives the ES module in headless Chromium: a person types two
// messages and sees the streamed replies and the conversation, and the
// page's view equals the server's.
func TestBrowser(t *testing.T) {
	f := newFixture(t, nil)
	mux := http.NewServeMux()
	mux.Handle("/agent/", http.StripPrefix("/agent", f.b))
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(page))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer f.b.Close()

	// The default window, as the test was written for it.
	ctx, cancel := context.WithTimeout(browsertest.New(t, 800, 600), 2*time.Minute)
	defer cancel()

	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#send")),
		chromedp.SendKeys(chromedp.CSS("#text"), "hello there"),
		chromedp.Click(chromedp.CSS("#send")),
		chromedp.WaitVisible(chromedp.Search(`//p[@id="reply"][text()="done: echo: hello there (b0)"]`)),
		chromedp.WaitVisible(chromedp.Search(`//li[text()="llm: echo: hello there (b0)"]`)),
		chromedp.SendKeys(chromedp.CSS("#text"), "and again"),
		chromedp.Click(chromedp.CSS("#send")),
		chromedp.WaitVisible(chromedp.Search(`//li[text()="llm: echo: and again (b1)"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	screenshot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("HTTPBRIDGE_ARTIFACTS") // to look at it
	if dir == "" {
		dir = t.TempDir()
	}
	shot := filepath.Join(dir, "chat.png")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shot, screenshot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)

	items, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("li")].map((li) => li.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	viewJSON, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.agent.view)`))
	if err != nil {
		t.Fatal(err)
	}
	stats, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]int](`window.agent.stats`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"user: hello there", "llm: echo: hello there (b0)", "user: and again", "llm: echo: and again (b1)"}
	if !reflect.DeepEqual(items, want) {
		t.Fatalf("the page shows %q, want %q", items, want)
	}
	var v any
	json.Unmarshal([]byte(viewJSON), &v)
	if !reflect.DeepEqual(v, f.serverView()) {
		t.Fatalf("page view %s\nserver view %v", viewJSON, f.serverView())
	}
	if stats["snapshots"] != 1 || stats["gaps"] != 0 || stats["resyncs"] != 0 || stats["deltas"] != 4 {
		t.Fatalf("stats %v: want 1 snapshot, 4 deltas, no gap or resync", stats)
	}
	if !strings.Contains(string(screenshot[:8]), "PNG") {
		t.Fatal("the screenshot is not a PNG")
	}
}
