package main

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/norma-run/norma/internal/chromiumtest"
	"github.com/norma-run/norma/internal/pgtest"
	"github.com/norma-run/norma/internal/termtext"
)

// inboxScript asks for one Bash line whose text is markup: the preview a
// person approves holds <script> and an <img> with an onerror handler.
const inboxScript = `turns:
  - tool_calls:
      - {id: b1, name: Bash, input: {command: "echo '<script>alert(1)</script>' '<img src=x onerror=alert(2)>' >> count.txt"}}
  - text: "Done."
`

// inboxRan is what the Bash line appends to count.txt each time it runs.
const inboxRan = "<script>alert(1)</script> <img src=x onerror=alert(2)>\n"

// TestDoorInboxChromium: the built norma serve --team, tokens from norma
// serve token add, and a headless norma run in another state directory
// sharing the store, driven by a real headless Chromium. The approver
// signs in and sees the run's request; its preview is shown as text (the
// DOM holds the literal <script>, no script or img element was made, no
// dialog opened). A viewer sees no button, and the POST it forges in its
// own signed-in browser is 403 and changes nothing (the line has not run,
// the record is pending). The approver approves; the run proceeds and the
// line runs exactly once; the run's audit trail page names the approver.
// It runs on both stores: a SQLite file and a PostgreSQL database.
func TestDoorInboxChromium(t *testing.T) {
	browser := chromiumtest.Browser(t)
	for _, st := range []struct {
		name  string
		store func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "team.db") }},
		{"postgres", func(t *testing.T) string { return pgtest.URL(t) }},
	} {
		t.Run(st.name, func(t *testing.T) { inboxChromium(t, browser, st.store(t)) })
	}
}

// inboxChromium is TestDoorInboxChromium on the store db.
func inboxChromium(t *testing.T, browser context.Context, db string) {
	serverHome, runHome := shortHome(t), t.TempDir()
	var outputs, answers strings.Builder
	alice := teamToken(t, serverHome, "alice", "approver", &outputs)
	vic := teamToken(t, serverHome, "vic", "viewer", &outputs)

	srv, api := startTeam(t, serverHome, &answers, "--store", db)
	base := api.base

	wr := startWaitingRun(t, runHome, db, inboxScript, "120s")
	ws, runOut, runErr, runDone := wr.ws, wr.out, wr.errOut, wr.done
	count := filepath.Join(ws, "count.txt")

	// 1. The approver signs in with the token.
	aliceTab := chromiumtest.NewTab(t, browser, 3*time.Minute)
	aliceTab.Do(t,
		chromedp.Navigate(base+"/inbox/"),
		chromedp.WaitVisible(chromedp.CSS(`form.signin input[name=token]`)),
		chromedp.SendKeys(chromedp.CSS(`form.signin input[name=token]`), alice),
		chromedp.Click(chromedp.CSS(`form.signin button`)),
		chromedp.WaitVisible(chromedp.CSS(`form.signout`)), // only a signed-in page has it
	)
	if who := chromiumtest.Eval[string](t, aliceTab, `document.querySelector(".who b") ? document.querySelector(".who b").textContent : ""`); who != "team:alice" {
		t.Fatalf("signed in as %q: %s", who, chromiumtest.Eval[string](t, aliceTab, `document.location.href + " " + document.body.innerText`))
	}

	// 2. The request the run filed shows up (reload until it does).
	var id string
	for deadline := time.Now().Add(60 * time.Second); id == "" && time.Now().Before(deadline); {
		id = chromiumtest.Eval[string](t, aliceTab, `document.querySelector("section.request") ? document.querySelector("section.request").id : ""`)
		if id != "" {
			break
		}
		select {
		case err := <-runDone:
			runDone <- err
			t.Fatalf("the run ended before its request was shown: %v\n%s%s", err, runOut, runErr)
		case <-time.After(200 * time.Millisecond):
		}
		aliceTab.Do(t, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`h1`)))
	}
	if id == "" {
		t.Fatalf("the inbox never showed the request:\n%s\n%s", runOut, runErr)
	}
	code, m := api.call(t, "GET", "/api/v1/approvals/"+id, vic, "")
	if code != 200 {
		t.Fatalf("the API's record: %d %v", code, m)
	}
	rec := m["approval"].(map[string]any)
	preview, _ := rec["preview"].(string)
	runID, _ := rec["run_id"].(string)

	// 3. The preview is the record's, shown as text.
	shown := chromiumtest.Eval[string](t, aliceTab, `document.querySelector("section.request pre.preview").textContent`)
	if shown != termtext.EscapeText(preview) || !strings.Contains(shown, "<script>alert(1)</script>") || !strings.Contains(shown, "<img src=x onerror=alert(2)>") {
		t.Fatalf("the page shows\n%q\nfor the record's preview\n%q", shown, preview)
	}
	if n := chromiumtest.Eval[int](t, aliceTab, `document.querySelectorAll("script, img, iframe, object, embed, [onerror]").length`); n != 0 {
		t.Fatalf("the page holds %d script or img elements", n)
	}
	if d := aliceTab.Dialogs(); len(d) != 0 {
		t.Fatalf("a dialog opened: %q", d)
	}

	// 4. A viewer, in a browser of their own: no button; the POST they
	// forge with their own session (and its CSRF token) is refused.
	vicTab := chromiumtest.NewTab(t, browser, 3*time.Minute)
	vicTab.Do(t,
		chromedp.Navigate(base+"/inbox/signin"),
		chromedp.WaitVisible(chromedp.CSS(`form.signin input[name=token]`)),
		chromedp.SendKeys(chromedp.CSS(`form.signin input[name=token]`), vic),
		chromedp.Click(chromedp.CSS(`form.signin button`)),
		chromedp.WaitVisible(chromedp.CSS(`section.request pre.preview`)),
	)
	if n := chromiumtest.Eval[int](t, vicTab, `document.querySelectorAll("form.decide, button.approve, button.deny").length`); n != 0 {
		t.Fatalf("the viewer sees %d buttons or forms", n)
	}
	// The page has no form to post, so the viewer builds one (a form
	// post is what the page's CSP allows: form-action 'self').
	chromiumtest.Eval[bool](t, vicTab, `(() => {
		const f = document.createElement("form");
		f.method = "post";
		f.action = "/inbox/approvals/`+id+`";
		for (const [k, v] of Object.entries({csrf: document.querySelector("form.signout input[name=csrf]").value, decision: "approve", why: "me too"})) {
			const i = document.createElement("input");
			i.name = k; i.value = v; f.appendChild(i);
		}
		document.body.appendChild(f);
		f.submit();
		return true;
	})()`)
	vicTab.Do(t, chromedp.WaitVisible(chromedp.CSS(`p.error`)))
	if msg := chromiumtest.Eval[string](t, vicTab, `document.title + " " + document.querySelector("p.error").textContent`); !strings.Contains(msg, "Forbidden") || !strings.Contains(msg, "Nothing was changed") {
		t.Errorf("the viewer's forged POST got %q, want 403", msg)
	}
	// Nor does a bearer token open the pages' POST: they take a session.
	req, _ := http.NewRequest("POST", base+"/inbox/approvals/"+id, strings.NewReader(url.Values{"decision": {"approve"}}.Encode()))
	req.Header.Set("Authorization", "Bearer "+vic)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("a POST with the viewer's bearer token: %v %v, want 403", res.Status, err)
	} else {
		res.Body.Close()
	}
	time.Sleep(500 * time.Millisecond) // the run's waiter polls: give it the chance to act on a change
	if _, m := api.call(t, "GET", "/api/v1/approvals/"+id, vic, ""); m["approval"].(map[string]any)["state"] != "pending" || m["approval"].(map[string]any)["decided_by"] != nil {
		t.Fatalf("after the viewer's POST: %v", m["approval"])
	}
	if _, err := os.Stat(count); !os.IsNotExist(err) {
		t.Fatalf("the line ran before the approver decided: %v", err)
	}

	// 5. The approver approves, with a reason; the run proceeds and the
	// line runs exactly once.
	aliceTab.Do(t,
		chromedp.SendKeys(chromedp.CSS(`form.decide input[name=why]`), "the markup is only echoed"),
		chromedp.Click(chromedp.CSS(`form.decide button.approve`)),
		chromedp.WaitVisible(chromedp.CSS(`dd.decided-by`)),
	)
	select {
	case err := <-runDone:
		runDone <- err
		if err != nil {
			t.Fatalf("run: %v\n%s%s", err, runOut, runErr)
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("the run did not proceed:\n%s\n%s", runOut, runErr)
	}
	lines := jsonLines(t, runOut.String())
	if fin := lines[len(lines)-1]; fin["event"] != "session_finished" || fin["status"] != "completed" {
		t.Errorf("run finished with %v", fin)
	}
	if b, err := os.ReadFile(count); err != nil || string(b) != inboxRan {
		t.Errorf("count.txt = %q, %v; want the line run exactly once", b, err)
	}
	if _, m := api.call(t, "GET", "/api/v1/approvals/"+id, vic, ""); m["approval"].(map[string]any)["decided_by"] != "team:alice" {
		t.Errorf("record after approving: %v", m["approval"])
	}

	// 6. The run's audit trail page shows the decision by name, and one
	// finished call.
	aliceTab.Do(t, chromedp.Navigate(base+"/inbox/runs/"+url.PathEscape(runID)), chromedp.WaitVisible(chromedp.CSS(`table.trail`)))
	if by := chromiumtest.Eval[string](t, aliceTab, `[...document.querySelectorAll("tr.type-approval_granted td.by")].map(e => e.textContent).join(",")`); by != "team:alice" {
		t.Errorf("the trail's approval_granted rows name %q", by)
	}
	if n := chromiumtest.Eval[int](t, aliceTab, `document.querySelectorAll("tr.type-tool_call_finished").length`); n != 1 {
		t.Errorf("the trail shows %d finished calls, want 1", n)
	}
	if d := aliceTab.Dialogs(); len(d) != 0 {
		t.Fatalf("a dialog opened: %q", d)
	}

	// No token in any output, log or answer.
	all := outputs.String() + answers.String() + srv.stderr.String() + runOut.String() + runErr.String()
	for _, tok := range []string{alice, vic} {
		if strings.Contains(all, tok) {
			t.Fatalf("a token leaked into an output or a log")
		}
	}
}
