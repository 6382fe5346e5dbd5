// Package browsertest drives the project's pages in a real, headless
// Chromium (Debian's chromium, which .ci/run installs) through chromedp:
// start a browser, run actions with a guard against hangs, evaluate
// JavaScript, wait for text, save screenshots to look at.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium is where Debian installs the browser.
const Chromium = "/usr/bin/chromium"

// HangGuard bounds a wait for something that must happen; it is never
// reached when the code is right.
const HangGuard = 30 * time.Second

// New starts a headless Chromium with a window of width×height and returns
// a context for its first tab. Without the browser, the test fails when CI
// is set and is skipped otherwise.
func New(t *testing.T, width, height int) context.Context {
	t.Helper()
	if _, err := os.Stat(Chromium); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must run the browser tests, and %s is missing (.ci/run installs Debian's chromium)", Chromium)
		}
		t.Skipf("no %s: install Debian's chromium to run the browser tests", Chromium)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(width, height),
	}
	// A browser that crashes as it starts (seen on a loaded machine: its
	// crash handler's report, no page yet) is started again, up to
	// startAttempts times: the tests are of the pages, not of Chromium.
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		profile := chromedp.UserDataDir(t.TempDir()) // a fresh one each time
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(opts, profile)...)
		ctx, cancel := chromedp.NewContext(actx)
		if err = chromedp.Do(ctx); err == nil { // no timeout: it binds the browser's life
			t.Cleanup(cancelAlloc)
			t.Cleanup(cancel)
			return ctx
		}
		cancel()
		cancelAlloc()
		t.Logf("starting chromium (attempt %d of %d): %v", attempt, startAttempts, err)
	}
	t.Fatalf("starting chromium: %v", err)
	return nil
}

// startAttempts is how often New starts a browser that crashes as it
// starts.
const startAttempts = 3

// Screenshot saves the page as name.png in the directory named by the
// environment variable dirEnv when it is set (to look at it), else in the
// test's temporary directory.
func Screenshot(t *testing.T, ctx context.Context, dirEnv, name string) {
	t.Helper()
	dir := os.Getenv(dirEnv)
	if dir == "" {
		dir = t.TempDir()
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// Do runs actions in the tab, failing the test on an error or a hang.
func Do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, HangGuard)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Eval evaluates a JavaScript expression in the tab.
func Eval[T any](t *testing.T, ctx context.Context, what, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, HangGuard)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// WaitJS waits until the expression is true.
func WaitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	Do(t, ctx, "waiting for "+what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(20*time.Millisecond)))
}

// WaitText waits until an element matching sel, not hidden, shows text
// containing want.
func WaitText(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	js := fmt.Sprintf(`[...document.querySelectorAll(%q)].some(e => !e.closest("[hidden]") && e.textContent.includes(%q))`, sel, want)
	WaitJS(t, ctx, fmt.Sprintf("%s to show %q", sel, want), js)
}
