package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/audit/metrics"
	"github.com/norma-run/norma/audit/metrics/metricstest"
	"github.com/norma-run/norma/internal/pgtest"
)

// metricsScript makes one decision of each kind the figures tell apart:
// a read allowed, a read denied, an unknown tool, and a Bash line that
// needs approval (--yes grants it).
const metricsScript = `turns:
  - tool_calls:
      - {id: t1, name: Read, input: {path: docs/intro.md}}
      - {id: t2, name: Read, input: {path: .env}}
      - {id: t3, name: Nope, input: {}}
      - {id: t4, name: Bash, input: {command: "echo ran >> count.txt"}}
  - text: "Done."
`

// scrapeMetrics GETs /metrics with tok and parses a 200's body with
// Prometheus's own text parser; it returns the status, the samples and
// the body.
func scrapeMetrics(t *testing.T, base, tok string, answers *strings.Builder) (int, map[string]float64, string) {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	answers.Write(b)
	if res.StatusCode != 200 {
		return res.StatusCode, nil, string(b)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("/metrics Content-Type %q", ct)
	}
	got, err := metricstest.Parse(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, b)
	}
	return 200, got, string(b)
}

// TestDoorTeamMetrics: norma serve --team over a SQLite store that three
// norma runs in two other state directories share (one before the server
// started, one headless while it runs, one on a terminal). /metrics, read
// with a viewer token and parsed with Prometheus's text parser, counts
// every decision, approval and run of all of them, with the labels the
// runs' own output gives; a runner token and no token are refused and
// get no figure.
// On PostgreSQL the server wakes on the store's append notification.
func TestDoorTeamMetrics(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testDoorTeamMetrics(t, "sqlite:"+filepath.Join(t.TempDir(), "team.db")) })
	t.Run("postgres", func(t *testing.T) { testDoorTeamMetrics(t, withPassword(t, pgtest.URL(t))) })
}

func testDoorTeamMetrics(t *testing.T, db string) {
	serverHome, homeA, homeB := shortHome(t), t.TempDir(), t.TempDir()
	var outputs, answers strings.Builder
	vic := teamToken(t, serverHome, "vic", "viewer", &outputs)
	ci := teamToken(t, serverHome, "ci", "runner", &outputs)

	e := newRunEnv(t)
	script := e.script(t, metricsScript)
	headless := func(home string) {
		t.Helper()
		cmd := exec.Command(normaBin(t), "--home", home, "--store", db, "run", "--workspace", e.ws, "--provider", "scripted",
			"--script", script, "--yes", "--json", "go")
		cmd.Env = append(os.Environ(), isolated(t)...)
		code, out, errs := doorCmd(t, cmd)
		if code != 0 {
			t.Fatalf("run: exit %d\n%s%s", code, out, errs)
		}
		calls := toolCalls(jsonLines(t, out))
		for id, want := range map[string]string{"t1": "ALLOWED", "t2": "FILESYSTEM_READ_DENIED", "t3": "TOOL_UNKNOWN", "t4": "ALLOWED"} {
			if calls[id]["reason"] != want {
				t.Fatalf("call %s: reason %v, want %s:\n%s", id, calls[id]["reason"], want, out)
			}
		}
	}
	headless(homeA) // before the server starts: counted all the same

	srv, api := startTeam(t, serverHome, &answers, "--store", db)
	headless(homeB)
	term := startOnTerminal(t, isolated(t), "--home", homeA, "--store", db, "run", "--workspace", e.ws, "--provider", "scripted",
		"--script", script, "--yes", "go")
	if code := term.wait(); code != 0 {
		t.Fatalf("terminal run: exit %d\n%s%s", code, term.out.String(), term.errb.String())
	}
	if n := strings.Count(readFile(t, filepath.Join(e.ws, "count.txt")), "ran"); n != 3 {
		t.Fatalf("the Bash line ran %d times, want 3", n)
	}

	dec := func(kind, decision, reason string) string {
		return metricstest.Key(metrics.MetricDecisions, "kind", kind, "decision", decision, "reason", reason, "plugin", "-", "version", "-")
	}
	builtin := func(name string) string { return metricstest.Key(name, "plugin", "-", "version", "-") }
	want := map[string]float64{
		dec("fs.read", "allow", "ALLOWED"):                             3,
		dec("fs.read", "deny", "FILESYSTEM_READ_DENIED"):               3,
		dec("tool", "deny", "TOOL_UNKNOWN"):                            3,
		dec("process.spawn", "approval_required", "APPROVAL_REQUIRED"): 3,
		builtin(metrics.MetricApprovalsRequested):                      3,
		builtin(metrics.MetricApprovalsGranted):                        3,
		metricstest.Key(metrics.MetricRuns, "kind", "background"):      2,
		metricstest.Key(metrics.MetricRuns, "kind", "interactive"):     1,
	}
	var got map[string]float64
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		code, m, _ := scrapeMetrics(t, api.base, vic, &answers)
		if code != 200 {
			t.Fatalf("/metrics with a viewer token: %d", code)
		}
		got = m
		if got[metricstest.Key(metrics.MetricRuns, "kind", "interactive")] == 1 || time.Now().After(deadline) {
			break
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	for k, v := range got {
		if strings.HasPrefix(k, metrics.MetricDecisions) {
			if _, ok := want[k]; !ok {
				t.Errorf("unexpected decision sample %s = %v", k, v)
			}
		}
	}

	for _, c := range []struct {
		tok  string
		want int
	}{{ci, 403}, {"", 401}, {"norma_team_forged", 401}} {
		code, _, body := scrapeMetrics(t, api.base, c.tok, &answers)
		if code != c.want || strings.Contains(body, "norma_") {
			t.Errorf("/metrics with token %.12q…: %d, want %d, and no figure in:\n%s", c.tok, code, c.want, body)
		}
	}
	all := outputs.String() + answers.String() + srv.stderr.String()
	noCanary(t, "the server", srv.stderr.String())
	for _, tok := range []string{vic, ci} {
		if strings.Contains(all, tok) {
			t.Errorf("a token appears in an output or an answer")
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
