package inbox

import (
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/internal/chromiumtest"
	"github.com/norma-run/norma/internal/termtext"
)

type css = chromedp.CSS

// attackerPage serves a page on another origin that posts a form to the
// inbox as soon as it loads: a cross-site request forgery.
func attackerPage(t *testing.T, action string, fields map[string]string) *httptest.Server {
	t.Helper()
	var inputs strings.Builder
	for k, v := range fields {
		fmt.Fprintf(&inputs, `<input name="%s" value="%s">`, html.EscapeString(k), html.EscapeString(v))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>win a prize</title><form method="post" action="%s">%s</form><script>document.forms[0].submit()</script>`,
			html.EscapeString(action), inputs.String())
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestChromiumInbox drives the inbox in a real headless Chromium: sign in
// with a token, see a hostile preview shown as text (no element made of
// it, no dialog), suffer forged POSTs from another origin (refused, the
// request still pending), approve, and check that a viewer gets no
// buttons.
func TestChromiumInbox(t *testing.T) {
	f := newFixture(t, false)
	rec := f.file("run_chromium", hostilePreview)
	browser := chromiumtest.Browser(t)
	alice := chromiumtest.NewTab(t, browser, 2*time.Minute)

	// 1. Sign in with the approver's token.
	alice.Do(t,
		chromedp.Navigate(f.srv.URL+Prefix+"/"),
		chromedp.WaitVisible(css(`form.signin input[name=token]`)),
		chromedp.SendKeys(css(`form.signin input[name=token]`), approverToken),
		chromedp.Click(css(`form.signin button`)),
		chromedp.WaitVisible(css(`section.request pre.preview`)),
	)
	if who := chromiumtest.Eval[string](t, alice, `document.querySelector(".who b").textContent`); who != "team:alice" {
		t.Fatalf("signed in as %q", who)
	}
	// The session cookie is HttpOnly: no script of the page can read it.
	if c := chromiumtest.Eval[string](t, alice, `document.cookie`); c != "" {
		t.Fatalf("document.cookie = %q, want the cookies hidden from scripts", c)
	}

	// 2. The preview is the record's, as text.
	shown := chromiumtest.Eval[string](t, alice, `document.querySelector("pre.preview").textContent`)
	if shown != termtext.EscapeText(rec.Preview) {
		t.Fatalf("the preview shown is\n%q\nwant the record's\n%q", shown, termtext.EscapeText(rec.Preview))
	}
	if !strings.Contains(shown, "<script>alert(1)</script>") || !strings.Contains(shown, "<img src=x onerror=alert(2)>") || !strings.Contains(shown, `\u202e`) {
		t.Fatalf("the markup is not shown literally: %q", shown)
	}
	if n := chromiumtest.Eval[int](t, alice, `document.querySelectorAll("script, img, iframe, object, embed, [onerror]").length`); n != 0 {
		t.Fatalf("the page holds %d script, img or handler elements", n)
	}
	if d := alice.Dialogs(); len(d) != 0 {
		t.Fatalf("a dialog opened: %q", d)
	}

	// 3. Forged POSTs from another origin, in the signed-in browser. The
	// last one even carries the session's real CSRF token (as if it had
	// leaked): the browser's Sec-Fetch-Site still gives it away.
	token := chromiumtest.Eval[string](t, alice, `document.querySelector("form.decide input[name=csrf]").value`)
	_, inboxPort, _ := net.SplitHostPort(strings.TrimPrefix(f.srv.URL, "http://"))
	action := f.srv.URL + Prefix + "/approvals/" + rec.ID
	for _, tc := range []struct {
		name, page string
	}{
		{"cross-site, no token", strings.Replace(attackerPage(t, "http://127.0.0.1:"+inboxPort+Prefix+"/approvals/"+rec.ID,
			map[string]string{"decision": "approve"}).URL, "127.0.0.1", "localhost", 1)},
		{"same-site other port, no token", attackerPage(t, action, map[string]string{"decision": "approve"}).URL},
		{"same-site other port, the real token", attackerPage(t, action, map[string]string{"decision": "approve", "csrf": token}).URL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alice.Do(t, chromedp.Navigate(tc.page), chromedp.WaitVisible(css(`p.error`)))
			msg := chromiumtest.Eval[string](t, alice, `document.querySelector("p.error").textContent`)
			if !strings.Contains(msg, "Nothing was changed") {
				t.Fatalf("the forged POST got %q", msg)
			}
			if got := f.record(rec.ID); got.State != approval.StatePending || got.DecidedBy != "" {
				t.Fatalf("a forged POST changed the request: %s by %q", got.State, got.DecidedBy)
			}
		})
	}

	// 4. Approve it with a reason.
	alice.Do(t,
		chromedp.Navigate(f.srv.URL+Prefix+"/"),
		chromedp.WaitVisible(css(`form.decide input[name=why]`)),
		chromedp.SendKeys(css(`form.decide input[name=why]`), "read the preview"),
		chromedp.Click(css(`form.decide button.approve`)),
		chromedp.WaitVisible(css(`dd.decided-by`)),
	)
	got := f.record(rec.ID)
	if got.State != approval.StateGranted || got.DecidedBy != "team:alice" || got.Why != "read the preview" {
		t.Fatalf("after approving: %s by %q why %q", got.State, got.DecidedBy, got.Why)
	}
	if n := chromiumtest.Eval[int](t, alice, `document.querySelectorAll("form.decide").length`); n != 0 {
		t.Fatalf("a decided request still shows %d forms", n)
	}

	// 5. A viewer, in a browser of their own, sees a request but no
	// button.
	rec2 := f.file("run_chromium_2", "git push --force origin main\n")
	victor := chromiumtest.NewTab(t, browser, 2*time.Minute)
	victor.Do(t,
		chromedp.Navigate(f.srv.URL+Prefix+"/signin"),
		chromedp.WaitVisible(css(`form.signin input[name=token]`)),
		chromedp.SendKeys(css(`form.signin input[name=token]`), viewerToken),
		chromedp.Click(css(`form.signin button`)),
		chromedp.WaitVisible(css(`section.request pre.preview`)),
	)
	if shown := chromiumtest.Eval[string](t, victor, `document.querySelector("pre.preview").textContent`); shown != rec2.Preview {
		t.Fatalf("the viewer sees %q", shown)
	}
	if n := chromiumtest.Eval[int](t, victor, `document.querySelectorAll("form.decide, button.approve, button.deny").length`); n != 0 {
		t.Fatalf("the viewer sees %d buttons or forms", n)
	}

	// 6. The run's trail names the approver.
	alice.Do(t, chromedp.Navigate(f.srv.URL+Prefix+"/runs/run_chromium"), chromedp.WaitVisible(css(`table.trail`)))
	by := chromiumtest.Eval[string](t, alice, `[...document.querySelectorAll("tr.type-approval_granted td.by")].map(e => e.textContent).join(",")`)
	if by != "team:alice" {
		t.Fatalf("the trail's approval_granted rows name %q", by)
	}
}
