// Package chromiumtest starts a real headless Chromium for the tests of
// the web pages (the approval inbox), driven over the DevTools protocol
// with chromedp. It is for tests only; no production package imports it
// (internal/deptest checks).
//
// The browser is Debian's chromium, found through NORMA_TEST_CHROMIUM
// (.ci/run installs it and sets the variable). Without it a test skips,
// except under NORMA_REQUIRE_SANDBOX=1 (CI), where the skip is a failure.
//
// This package should be considered internal; its API is not stable.
package chromiumtest

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Env names the variable that holds the path of the chromium binary.
const Env = "NORMA_TEST_CHROMIUM"

// Path returns the chromium binary the tests use: NORMA_TEST_CHROMIUM.
// When it is unset the test is skipped, or fails under
// NORMA_REQUIRE_SANDBOX=1; when it names no executable file the test
// fails.
func Path(t testing.TB) string {
	t.Helper()
	p := os.Getenv(Env)
	if p == "" {
		if os.Getenv("NORMA_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("%s is unset, and NORMA_REQUIRE_SANDBOX=1 makes a skipped browser test a failure (install Debian's chromium: .ci/run does)", Env)
		}
		t.Skipf("%s is unset: no real browser to test the page in", Env)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s=%s is not an executable file: %v", Env, p, err)
	}
	return p
}

// Browser starts a headless Chromium for the test and returns its
// context; it stops when the test ends. Each [Tab] made from it has its
// own cookie jar.
func Browser(t testing.TB) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(Path(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.DisableGPU,
		chromedp.Flag("no-proxy-server", true),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to start as root with its own sandbox on
		// ("Running as root without --no-sandbox is not supported"):
		// its setuid/namespace sandbox is built to drop from a normal
		// user. The pages it loads here are the test's own, served on
		// loopback; the browser is the client under test, not a
		// confinement boundary.
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	// The first Run starts the browser (with a blank tab of its own).
	if err := chromedp.Do(bctx); err != nil {
		cancelBrowser()
		cancelAlloc()
		t.Fatalf("starting chromium: %v", err)
	}
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	return bctx
}

// Tab is one tab in a browser context of its own (its own cookies, like
// another person's browser). It counts the JavaScript dialogs that any
// page in it opened, and dismisses them.
type Tab struct {
	Ctx context.Context

	mu      sync.Mutex
	dialogs []string
}

// NewTab opens a tab in a new browser context of browser. Every action
// on it is bounded by timeout.
func NewTab(t testing.TB, browser context.Context, timeout time.Duration) *Tab {
	t.Helper()
	tab := &Tab{}
	opened := make(chan struct{}, 16)
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext(),
		chromedp.WithListener(func(ev any) {
			if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
				tab.mu.Lock()
				tab.dialogs = append(tab.dialogs, string(d.Type)+": "+d.Message)
				tab.mu.Unlock()
				select {
				case opened <- struct{}{}:
				default:
				}
			}
		}))
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	// A dialog blocks the page until it is answered: dismiss each one
	// (outside the listener, which must not run commands).
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-opened:
				chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
			}
		}
	}()
	tab.Ctx = ctx
	return tab
}

// Dialogs returns the dialogs (alert, confirm, prompt) pages in the tab
// opened so far, as "type: message".
func (tab *Tab) Dialogs() []string {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	return append([]string(nil), tab.dialogs...)
}

// Do runs actions on the tab and fails the test on an error.
func (tab *Tab) Do(t testing.TB, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(tab.Ctx, actions...); err != nil {
		t.Fatalf("chromium: %v", err)
	}
}

// Eval evaluates a JavaScript expression on the tab's page and decodes its
// value into T; an error fails the test.
func Eval[T any](t testing.TB, tab *Tab, expr string) T {
	t.Helper()
	v, err := chromedp.Run(tab.Ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("chromium: evaluating %s: %v", expr, err)
	}
	return v
}
