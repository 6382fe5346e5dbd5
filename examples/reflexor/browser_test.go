package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/llm/openai"
	"github.com/moora-go/moora/internal/browsertest"
	"github.com/moora-go/moora/internal/fakemodel"

	"github.com/chromedp/chromedp"
)

// The browser tests drive the page in a real, headless Chromium (Debian's
// chromium, which .ci/run installs) against the command running as a real
// process on loopback. Screenshots go to $REFLEXOR_ARTIFACTS when set
// (look at them), else to the test's temporary directory.

// TestMain lets the test binary be the command: the browser tests start it
// as a child process, which they can kill.
func TestMain(m *testing.M) {
	if os.Getenv("REFLEXOR_CHILD") == "1" {
		if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "reflexor:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const hangGuard = browsertest.HangGuard

// service is the command running as a child process.
type service struct {
	t     testing.TB
	dir   string
	addr  string
	token string
	args  []string
	cmd   *exec.Cmd
	// printedToken is the token in the URL the service printed.
	printedToken string
}

// startService runs the command on a free loopback port with its data in a
// new directory, and waits for it to serve.
func startService(t testing.TB, args ...string) *service {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := &service{t: t, dir: t.TempDir(), addr: addr, token: "test-token", args: args}
	s.start()
	t.Cleanup(func() {
		if s.cmd != nil {
			s.cmd.Process.Kill()
			s.cmd.Wait()
		}
	})
	return s
}

func (s *service) start() {
	s.t.Helper()
	args := []string{"-addr", s.addr, "-data", s.dir}
	if s.token != "" {
		args = append(args, "-token", s.token)
	}
	args = append(args, s.args...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "REFLEXOR_CHILD=1", "OPENAI_MODEL=", "LLM_PROVIDER=")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.cmd = cmd
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case line <- sc.Text():
			default:
			}
		}
	}()
	select {
	case l := <-line:
		if !strings.Contains(l, s.addr) {
			s.t.Fatalf("the service printed %q", l)
		}
		_, s.printedToken, _ = strings.Cut(l, "?token=")
	case <-time.After(hangGuard):
		s.t.Fatal("the service did not start")
	}
}

// kill kills the service with SIGKILL: no shutdown, no snapshot.
func (s *service) kill() {
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
	s.cmd = nil
}

func (s *service) url() string { return fmt.Sprintf("http://%s/?token=%s", s.addr, s.token) }

// opened opens the page and waits until it is connected.
func opened(url string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(".status.connected")))
}

// send types a message and sends it, as a person does.
func send(t *testing.T, ctx context.Context, text string) {
	t.Helper()
	browsertest.Do(t, ctx, "sending "+text,
		chromedp.WaitVisible(chromedp.ID("message")),
		chromedp.SendKeys(chromedp.ID("message"), text),
		chromedp.Click(chromedp.ID("send")),
	)
}

// record makes the page remember every text a streaming message showed.
const record = `window.seen = []; new MutationObserver(() => {
	for (const e of document.querySelectorAll(".msg.brain.streaming")) {
		const t = e.textContent;
		if (t && window.seen[window.seen.length - 1] !== t) window.seen.push(t);
	}
}).observe(document.getElementById("conversation"), {childList: true, subtree: true, characterData: true});`

// conversation returns what the page shows, one line per message or tool
// call.
func conversation(t *testing.T, ctx context.Context) []string {
	t.Helper()
	return browsertest.Eval[[]string](t, ctx, "reading the conversation", `[...document.querySelectorAll("#conversation > *")].map(e => e.className + ": " + e.textContent)`)
}

func TestBrowserStreamsAReplyChunkByChunk(t *testing.T) {
	s := startService(t, "-delay", "60ms")
	ctx := browsertest.New(t, 900, 700)
	browsertest.Do(t, ctx, "opening the page", opened(s.url()))
	browsertest.Eval[chromedp.Void](t, ctx, "recording", record)
	send(t, ctx, "tell me something about streaming text in a browser")
	want := "You said: tell me something about streaming text in a browser. I can calculate, count words and tell the time."
	browsertest.WaitText(t, ctx, ".msg.brain:not(.streaming)", want)
	seen := browsertest.Eval[[]string](t, ctx, "reading what streamed", `window.seen`)
	if len(seen) < 3 {
		t.Fatalf("the reply appeared in %d steps (%q), want it to grow chunk by chunk", len(seen), seen)
	}
	for i, text := range seen {
		if !strings.HasPrefix(want, text) || (i > 0 && len(text) <= len(seen[i-1])) {
			t.Fatalf("step %d showed %q: not a growing prefix of the reply %q", i, text, want)
		}
	}
	browsertest.Screenshot(t, ctx, "REFLEXOR_ARTIFACTS", "streamed-reply")
}

func TestBrowserShowsAToolCallAndItsResult(t *testing.T) {
	s := startService(t, "-delay", "0", "-tool-delay", "1500ms")
	ctx := browsertest.New(t, 900, 700)
	browsertest.Do(t, ctx, "opening the page", opened(s.url()))
	send(t, ctx, "what is (2 + 3) * 4?")
	browsertest.WaitText(t, ctx, ".tool.pending", "calculator")
	browsertest.WaitText(t, ctx, ".tool.pending .state", "running")
	browsertest.Screenshot(t, ctx, "REFLEXOR_ARTIFACTS", "tool-running")
	browsertest.WaitText(t, ctx, ".tool.done", "→ 20")
	browsertest.WaitText(t, ctx, ".msg.brain:not(.streaming)", "The calculator tool says: 20.")
	browsertest.Screenshot(t, ctx, "REFLEXOR_ARTIFACTS", "tool-done")
}

func TestBrowserReloadMidStreamContinuesWithoutDuplicates(t *testing.T) {
	s := startService(t, "-delay", "120ms")
	ctx := browsertest.New(t, 900, 700)
	browsertest.Do(t, ctx, "opening the page", opened(s.url()))
	send(t, ctx, "one two three four five six seven eight nine ten eleven twelve")
	want := "You said: one two three four five six seven eight nine ten eleven twelve. I can calculate, count words and tell the time."
	browsertest.WaitText(t, ctx, ".msg.brain.streaming", "You said: one")
	browsertest.Do(t, ctx, "reloading", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(".status.connected")))
	browsertest.Eval[chromedp.Void](t, ctx, "recording", record)
	browsertest.WaitText(t, ctx, ".msg.brain:not(.streaming)", want)
	seen := browsertest.Eval[[]string](t, ctx, "reading what streamed", `window.seen`)
	for _, text := range seen {
		if !strings.HasPrefix(want, text) {
			t.Fatalf("after the reload the message showed %q: not a prefix of the reply %q (duplicated or garbled)", text, want)
		}
	}
	lines := conversation(t, ctx)
	if got := strings.Join(lines, "\n"); strings.Count(got, "You said:") != 1 || strings.Count(got, "msg user") != 1 {
		t.Fatalf("the conversation after the reload:\n%s", got)
	}
	browsertest.Screenshot(t, ctx, "REFLEXOR_ARTIFACTS", "after-reload")
}

func TestBrowserSecondTabFollowsLive(t *testing.T) {
	s := startService(t, "-delay", "20ms")
	first := browsertest.New(t, 900, 700)
	second, cancel := chromedp.NewContext(first) // another tab of the same browser
	defer cancel()
	if err := chromedp.Do(second); err != nil { // opens the tab, for as long as second lives
		t.Fatal(err)
	}
	for _, tab := range []context.Context{first, second} {
		browsertest.Do(t, tab, "opening the page", opened(s.url()))
	}
	send(t, first, "what is 6 * 7?")
	browsertest.WaitText(t, second, ".msg.user", "what is 6 * 7?")
	// Both tabs settled: the reply's text whole and its message no longer
	// streaming (the text's stream may end before the state says so).
	browsertest.WaitText(t, second, ".msg.brain:not(.streaming)", "The calculator tool says: 42.")
	browsertest.WaitText(t, first, ".msg.brain:not(.streaming)", "The calculator tool says: 42.")
	a, b := conversation(t, first), conversation(t, second)
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatalf("the tabs differ:\n%s\n---\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	browsertest.Screenshot(t, second, "REFLEXOR_ARTIFACTS", "second-tab")
}

func TestBrowserServerKilledMidToolCallCompletesAfterRestart(t *testing.T) {
	s := startService(t, "-delay", "0", "-tool-delay", "3s")
	ctx := browsertest.New(t, 900, 700)
	browsertest.Do(t, ctx, "opening the page", opened(s.url()))
	send(t, ctx, "count the words of this short sentence")
	browsertest.WaitText(t, ctx, ".tool.pending", "word_count")
	s.kill()
	browsertest.WaitText(t, ctx, ".status.reconnecting", "reconnecting")
	browsertest.Screenshot(t, ctx, "REFLEXOR_ARTIFACTS", "server-killed")
	s.start() // the same address, data and token: the page reconnects by itself
	browsertest.WaitText(t, ctx, ".msg.brain", "The word_count tool says: 7.")
	lines := conversation(t, ctx)
	got := strings.Join(lines, "\n")
	count := func(re string) int { return len(regexp.MustCompile(re).FindAllString(got, -1)) }
	if count(`msg user: count the words`) != 1 || count(`tool done: word_count`) != 1 ||
		count(`Let me count the words\.`) != 1 || count(`The word_count tool says: 7\.`) != 1 || len(lines) != 4 {
		t.Fatalf("after the restart the conversation is:\n%s\nwant the message, one reply, one tool call and its report, once each", got)
	}
	browsertest.Screenshot(t, ctx, "REFLEXOR_ARTIFACTS", "after-restart")
}

// TestBrowserShowsAFailedReplyAndGoesOn: with -model, the brain is a model
// server that streams text without end, until the provider's byte limit
// ends the call. The page shows the reply as failed, and why, and the
// next message is answered.
func TestBrowserShowsAFailedReplyAndGoesOn(t *testing.T) {
	fake := fakemodel.Start(t)
	// About two seconds to the byte limit, for the page to show it
	// streaming first, however busy the machine.
	fake.SetPace(8 * time.Millisecond)
	t.Setenv(openai.EnvBaseURL, fake.URL)
	t.Setenv(openai.EnvAPIKey, "sk-test")
	s := startService(t, "-model", "fake")
	ctx := browsertest.New(t, 900, 700)
	browsertest.Do(t, ctx, "opening the page", opened(s.url()))
	send(t, ctx, fakemodel.Endless)
	browsertest.WaitText(t, ctx, ".msg.brain.streaming", "and so on and so on")
	browsertest.WaitText(t, ctx, ".msg.brain.failed", "No reply: the model failed.")
	browsertest.WaitText(t, ctx, ".msg.brain.failed .reason", "response too large")
	browsertest.Screenshot(t, ctx, "REFLEXOR_ARTIFACTS", "failed-reply")

	send(t, ctx, "hello after the failure")
	want := fakemodel.Reply("hello after the failure")
	browsertest.WaitText(t, ctx, ".msg.brain:not(.streaming):not(.failed)", want)
	lines := conversation(t, ctx)
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "msg user: endless") || !strings.HasPrefix(lines[1], "msg brain failed: No reply") ||
		lines[2] != "msg user: hello after the failure" || lines[3] != "msg brain: "+want {
		t.Fatalf("the conversation is:\n%s\nwant the message, its failed reply, the next message and its reply", strings.Join(lines, "\n"))
	}
	// A reload shows the failure from the state.
	browsertest.Do(t, ctx, "reloading", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(".status.connected")))
	browsertest.WaitText(t, ctx, ".msg.brain:not(.streaming):not(.failed)", want)
	if again := conversation(t, ctx); strings.Join(again, "\n") != strings.Join(lines, "\n") {
		t.Fatalf("after a reload the page shows\n%s\nbefore it\n%s", strings.Join(again, "\n"), strings.Join(lines, "\n"))
	}
	browsertest.Screenshot(t, ctx, "REFLEXOR_ARTIFACTS", "after-failed-reply")
}
