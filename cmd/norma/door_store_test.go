package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/norma-run/norma/internal/pgtest"
	"github.com/norma-run/norma/store"
)

// pgConnect connects to dsn as the database's administrator would,
// closed when t ends.
func pgConnect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// pgCanary is the password put in the store URL: the local server trusts
// loopback, so it is never needed, and it must never be printed.
const pgCanary = "pgPW-canary-3f9a1c"

// withPassword returns URL u with user info postgres:pgCanary.
func withPassword(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p.User = url.UserPassword("postgres", pgCanary)
	return p.String()
}

// noCanary fails t when the store password shows in out.
func noCanary(t *testing.T, what, out string) {
	t.Helper()
	if strings.Contains(out, pgCanary) {
		t.Errorf("%s printed the store's password:\n%s", what, out)
	}
}

// TestDoorStoreShared: two `norma run`s with two state directories and
// one `--store` (a PostgreSQL database; a SQLite file) write one chain;
// `audit verify` through either state directory verifies it whole,
// checks its own checkpoints and names the other's as not checked until
// it is given the other's key; nothing is written to the state
// directories' own SQLite files.
func TestDoorStoreShared(t *testing.T) {
	t.Run("postgres", func(t *testing.T) { testDoorSharedStore(t, withPassword(t, pgtest.URL(t))) })
	t.Run("sqlite", func(t *testing.T) { testDoorSharedStore(t, "sqlite:"+filepath.Join(t.TempDir(), "shared.db")) })
}

// sharedRuns makes one run per state directory in homes against store
// dsn (Read of a file, a denied Read of .env) and returns the run ids.
func sharedRuns(t *testing.T, dsn string, homes ...string) map[string]bool {
	t.Helper()
	runIDs := map[string]bool{}
	for i, home := range homes {
		e := newRunEnv(t)
		e.home = home
		script := e.script(t, "turns:\n  - tool_calls:\n      - {id: r, name: Read, input: {path: docs/intro.md}}\n      - {id: s, name: Read, input: {path: .env}}\n  - text: done\n")
		code, out, errs := door(t, "--home", home, "--store", dsn, "run", "--workspace", e.ws, "--provider", "scripted",
			"--script", script, "--mode", "dontAsk", "--json", "go")
		noCanary(t, "run", out+errs)
		if code != 0 || strings.Contains(errs, "norma: ") {
			t.Fatalf("run %d: exit %d\n%s%s", i, code, out, errs)
		}
		for _, ev := range jsonLines(t, out) {
			if id, ok := ev["run_id"].(string); ok && id != "" {
				runIDs[id] = true
			}
		}
	}
	return runIDs
}

func testDoorSharedStore(t *testing.T, dsn string) {
	homes := []string{t.TempDir(), t.TempDir()}
	// The first state directory has a key already, from runs on its own
	// norma.db: its first use of the shared store is no deleted checkpoint.
	sharedRuns(t, "sqlite:"+filepath.Join(homes[0], "norma.db"), homes[0])
	os.Remove(filepath.Join(homes[0], "norma.db"))
	runIDs := sharedRuns(t, dsn, homes...)
	for i, home := range homes {
		if _, err := os.Stat(filepath.Join(home, "norma.db")); err == nil {
			t.Errorf("run %d wrote a SQLite store in its state directory", i)
		}
	}
	code, signed, errs := door(t, "--home", homes[1], "--store", dsn, "audit", "checkpoint")
	if code != 0 || !strings.HasPrefix(signed, "github.com/norma-run/norma/audit/") {
		t.Fatalf("audit checkpoint: exit %d\n%s%s", code, signed, errs)
	}
	if len(runIDs) != 2 {
		t.Fatalf("run ids %v, want two runs", runIDs)
	}
	code, out, errs := door(t, "--home", homes[0], "--store", dsn, "audit", "query", "--json", "--limit", "100000")
	noCanary(t, "audit query", out+errs)
	var recs []struct {
		Seq   int64
		Event map[string]any
	}
	if code != 0 || json.Unmarshal([]byte(out), &recs) != nil {
		t.Fatalf("audit query: exit %d\n%s%s", code, out, errs)
	}
	seen := map[string]bool{}
	for i, r := range recs {
		if r.Seq != int64(i)+1 {
			t.Fatalf("event %d has seq %d: not one chain", i+1, r.Seq)
		}
		if id, _ := r.Event["run_id"].(string); id != "" {
			seen[id] = true
		}
	}
	for id := range runIDs {
		if !seen[id] {
			t.Errorf("run %s has no event in the shared chain:\n%s", id, out)
		}
	}

	code, out, errs = door(t, "--home", homes[0], "--store", dsn, "audit", "verify")
	noCanary(t, "audit verify", out+errs)
	if code != 0 || !strings.HasPrefix(out, "ok: ") || !strings.Contains(out, "not checked: ") {
		t.Fatalf("audit verify: exit %d\n%s%s", code, out, errs)
	}
	otherKey := filepath.Join(homes[1], "keys", "audit-checkpoint.pub")
	code, out, errs = door(t, "--home", homes[0], "--store", dsn, "audit", "verify", "--json", "--trust-key", otherKey)
	var res struct {
		Events      int64
		Checkpoints int
		Reason      string
		Unchecked   []any
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Reason != "" || res.Events != int64(len(recs)) || res.Checkpoints < 2 || len(res.Unchecked) != 0 {
		t.Fatalf("audit verify --trust-key: exit %d %+v\n%s%s", code, res, out, errs)
	}
	// The same store through $NORMA_STORE.
	code, out, errs = doorEnv(t, []string{"NORMA_STORE=" + dsn}, "--home", homes[1], "audit", "verify")
	noCanary(t, "audit verify ($NORMA_STORE)", out+errs)
	if code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("audit verify with $NORMA_STORE: exit %d\n%s%s", code, out, errs)
	}
}

// TestDoorStoreBadURL: a store that cannot be reached, or a location
// that is not one, is refused with a clear message that hides the
// password; nothing runs and nothing is written.
func TestDoorStoreBadURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now
	e := newRunEnv(t)
	marker := filepath.Join(e.ws, "written.txt")
	script := e.script(t, "turns:\n  - tool_calls:\n      - {id: w, name: Write, input: {path: written.txt, content: x}}\n  - text: done\n")
	for _, c := range []struct {
		store, want string
		code        int
	}{
		{"postgres://postgres:" + pgCanary + "@127.0.0.1:" + strconv.Itoa(port) + "/norma?sslmode=disable&connect_timeout=3",
			"store: postgres://postgres:xxxxx@127.0.0.1:" + strconv.Itoa(port) + "/norma", exitInternal},
		{"postgres://postgres:" + pgCanary + "@127.0.0.1:bad/norma", "--store: not a valid postgres:// URL", exitUsage},
		{"mysql://root:" + pgCanary + "@db/norma", `--store: unknown store scheme "mysql"`, exitUsage},
		{"postgres://db/norma?tenant=../x&password=" + pgCanary, "tenant", exitInternal},
	} {
		code, out, errs := door(t, "--home", e.home, "--store", c.store, "run", "--workspace", e.ws, "--provider", "scripted",
			"--script", script, "--mode", "dontAsk", "--json", "go")
		noCanary(t, "run --store "+c.want, out+errs)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("--store %s: exit %d, want %d and %q\n%s%s", c.want, code, c.code, c.want, out, errs)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a run with a bad store ran its tool call")
	}
	if _, err := os.Stat(filepath.Join(e.home, "norma.db")); err == nil {
		t.Error("a run with a bad store fell back to SQLite")
	}
}

// TestDoorStoreKeywordValue: a PostgreSQL keyword/value connection
// string given as the store (a colon after its password once made it a
// "scheme" quoted in the error; spaces around "=" once made it a SQLite
// path, a file named with the password) is refused as a usage error that
// does not print the password; no file is created and nothing runs.
func TestDoorStoreKeywordValue(t *testing.T) {
	e := newRunEnv(t)
	marker := filepath.Join(e.ws, "written.txt")
	script := e.script(t, "turns:\n  - tool_calls:\n      - {id: w, name: Write, input: {path: written.txt, content: x}}\n  - text: done\n")
	cwd := t.TempDir()
	for _, kv := range []string{
		"host=db user=postgres password=" + pgCanary + ":x dbname=norma",
		"host=db password=" + pgCanary + " options=-csearch_path=a:b",
		"host=db user=postgres password = " + pgCanary + " dbname=norma",
	} {
		for _, args := range [][]string{
			{"--home", e.home, "--store", kv, "run", "--workspace", e.ws, "--provider", "scripted", "--script", script, "--mode", "dontAsk", "--json", "go"},
			{"--home", e.home, "audit", "tail"},
		} {
			cmd := exec.Command(normaBin(t), args...)
			cmd.Dir = cwd
			cmd.Env = append(os.Environ(), "NORMA_STORE="+kv)
			code, out, errs := doorCmd(t, cmd)
			noCanary(t, args[len(args)-1], out+errs)
			if code != exitUsage || !strings.Contains(errs, "postgres:// URL") {
				t.Errorf("store %q, %s: exit %d, want %d and a usage message\n%s%s", kv, args[len(args)-1], code, exitUsage, out, errs)
			}
		}
	}
	// In the user's settings: `settings show` hides its password too.
	cfg := t.TempDir()
	os.MkdirAll(filepath.Join(cfg, "norma"), 0o700)
	kv := "host=db user=postgres password = '" + pgCanary + " x' dbname=norma"
	if err := os.WriteFile(filepath.Join(cfg, "norma", "settings.yaml"), []byte("store: \""+kv+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"settings", "show", "--workspace", e.ws}, {"settings", "show", "--json", "--workspace", e.ws}, {"audit", "tail"}} {
		cmd := exec.Command(normaBin(t), append([]string{"--home", e.home}, args...)...)
		cmd.Dir = cwd
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+cfg, "NORMA_STORE=")
		code, out, errs := doorCmd(t, cmd)
		noCanary(t, strings.Join(args, " "), out+errs)
		if args[0] == "settings" && code != 0 || args[0] == "audit" && code != exitUsage {
			t.Errorf("%s with a keyword/value store in the user's settings: exit %d\n%s%s", args, code, out, errs)
		}
	}
	if ents, err := os.ReadDir(cwd); err != nil || len(ents) != 0 {
		t.Errorf("a keyword/value store created files in the working directory: %v %v", ents, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a run with a keyword/value store ran its tool call")
	}
	if _, err := os.Stat(filepath.Join(e.home, "norma.db")); err == nil {
		t.Error("a run with a keyword/value store fell back to the default SQLite file")
	}
}

// TestDoorStoreNotFromWorkspace: a workspace's settings cannot redirect
// the store: the run refuses the file, and the database it names is
// never contacted.
func TestDoorStoreNotFromWorkspace(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var contacted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			contacted.Add(1)
			c.Close()
		}
	}()
	e := newRunEnv(t)
	os.MkdirAll(filepath.Join(e.ws, ".norma"), 0o755)
	evil := "store: postgres://postgres@" + ln.Addr().String() + "/norma?sslmode=disable\n"
	if err := os.WriteFile(filepath.Join(e.ws, ".norma", "settings.yaml"), []byte(evil), 0o644); err != nil {
		t.Fatal(err)
	}
	script := e.script(t, "turns:\n  - text: done\n")
	code, out, errs := doorEnv(t, isolated(t), "--home", e.home, "run", "--workspace", e.ws, "--provider", "scripted",
		"--script", script, "--mode", "dontAsk", "--json", "go")
	if code == 0 || !strings.Contains(errs, "not in a workspace's") {
		t.Fatalf("run with a workspace store setting: exit %d\n%s%s", code, out, errs)
	}
	if n := contacted.Load(); n != 0 {
		t.Fatalf("the workspace's database was contacted %d times", n)
	}
}

// TestDoorStoreApproveElsewhere: a headless `norma run` in one state
// directory files its request in the PostgreSQL store and waits; `norma
// approvals approve` from another state directory (another machine, as
// far as the run can tell) decides it; the run wakes, makes the call
// exactly once, and the shared chain records the decision and verifies.
func TestDoorStoreApproveElsewhere(t *testing.T) {
	dsn := withPassword(t, pgtest.URL(t))
	e := newRunEnv(t)
	approver := t.TempDir()
	target := filepath.Join(e.ws, "notes.md")
	script := e.script(t, "turns:\n  - tool_calls:\n      - {id: w1, name: Write, input: {path: notes.md, content: from-the-run}}\n  - text: written\n")
	cmd := exec.Command(normaBin(t), "--home", e.home, "--store", dsn, "run", "--workspace", e.ws, "--provider", "scripted",
		"--script", script, "--approval-wait", "60s", "--json", "go")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &out, &errb, strings.NewReader("")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()

	var id string
	for deadline := time.Now().Add(30 * time.Second); id == ""; {
		if time.Now().After(deadline) {
			t.Fatalf("no pending request in the store after 30s\n%s%s", out.String(), errb.String())
		}
		code, list, errs := door(t, "--home", approver, "--store", dsn, "approvals", "list", "--json")
		noCanary(t, "approvals list", list+errs)
		var recs []struct{ ID, Tool string }
		if code != 0 || json.Unmarshal([]byte(list), &recs) != nil {
			t.Fatalf("approvals list: exit %d\n%s%s", code, list, errs)
		}
		if len(recs) == 1 && recs[0].Tool == "Write" {
			id = recs[0].ID
		}
		time.Sleep(250 * time.Millisecond)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the call ran before it was approved")
	}
	code, o, errs := door(t, "--home", approver, "--store", dsn, "approvals", "approve", id, "--reason", "reviewed on another machine")
	noCanary(t, "approvals approve", o+errs)
	if code != 0 {
		t.Fatalf("approvals approve: exit %d\n%s%s", code, o, errs)
	}
	decided := time.Now()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("run: %v\n%s%s", err, out.String(), errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the run did not proceed within 30s of the approval\n%s", errb.String())
	}
	woke := time.Since(decided)
	t.Logf("the run ended %v after the approval was stored", woke)
	if woke > 2*time.Second { // its fallback poll is every 5s: NOTIFY woke it, or it took too long
		t.Errorf("the run took %v after the approval to end; it should wake at once", woke)
	}
	noCanary(t, "run", out.String()+errb.String())
	if fin := last(jsonLines(t, out.String())); fin["status"] != "completed" {
		t.Fatalf("run ended %v", fin)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "from-the-run" {
		t.Fatalf("notes.md = %q, %v", b, err)
	}
	code, show, _ := door(t, "--home", approver, "--store", dsn, "approvals", "show", id, "--json")
	var rec struct {
		State     string `json:"state"`
		DecidedBy string `json:"decided_by"`
		Why       string `json:"why"`
		Uses      int    `json:"uses"`
	}
	if code != 0 || json.Unmarshal([]byte(show), &rec) != nil || rec.Uses != 1 || rec.Why != "reviewed on another machine" || rec.DecidedBy == "" {
		t.Fatalf("approvals show: %+v\n%s", rec, show)
	}
	granted := 0
	code, q, _ := door(t, "--home", e.home, "--store", dsn, "audit", "query", "--json", "--type", "approval_granted")
	var recs []struct{ Event map[string]any }
	if code != 0 || json.Unmarshal([]byte(q), &recs) != nil {
		t.Fatalf("audit query: %s", q)
	}
	for _, r := range recs {
		if r.Event["approval_id"] == id {
			granted++
		}
	}
	if granted != 1 {
		t.Errorf("%d approval_granted events for %s in the shared chain, want 1", granted, id)
	}
	if code, o, errs := door(t, "--home", e.home, "--store", dsn, "audit", "verify"); code != 0 {
		t.Fatalf("audit verify: exit %d\n%s%s", code, o, errs)
	}
}

// TestDoorStorePostgresTampered: whoever administers the database (and
// not the state directories) deletes the newest events and every
// checkpoint, dropping the append-only triggers and moving the head back:
// `audit verify` through either state directory fails, from the copy of
// its newest checkpoint each keeps: the second, whose checkpoint covered
// the deleted events, names them missing; the first, whose checkpoint
// still verifies, finds its checkpoints deleted.
func TestDoorStorePostgresTampered(t *testing.T) {
	dsn := withPassword(t, pgtest.URL(t))
	homes := []string{t.TempDir(), t.TempDir()}
	sharedRuns(t, dsn, homes...)
	conn := pgConnect(t, dsn)
	var n int64
	if err := conn.QueryRow(t.Context(), "SELECT max(seq) FROM audit_events").Scan(&n); err != nil || n < 6 {
		t.Fatalf("events: %d, %v", n, err)
	}
	keep := n - 3
	for _, q := range []string{
		"DROP TRIGGER audit_events_append_only ON audit_events",
		"DROP TRIGGER audit_checkpoints_append_only ON audit_checkpoints",
		"DELETE FROM audit_events WHERE seq > " + strconv.FormatInt(keep, 10),
		"DELETE FROM audit_checkpoints",
		"UPDATE audit_heads SET seq = e.seq, hash = e.hash FROM audit_events e WHERE e.tenant = audit_heads.tenant AND e.seq = " + strconv.FormatInt(keep, 10),
	} {
		if _, err := conn.Exec(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for i, want := range []string{"AUDIT_CHECKPOINT_MISSING", "AUDIT_EVENTS_MISSING"} {
		code, out, errs := door(t, "--home", homes[i], "--store", dsn, "audit", "verify", "--json")
		noCanary(t, "audit verify", out+errs)
		var res struct{ Reason, Problem string }
		json.Unmarshal([]byte(out), &res)
		if code != 1 || res.Reason != want {
			t.Errorf("state directory %d: verify after the truncation: exit %d %+v, want %s\n%s", i, code, res, want, errs)
		}
	}
}

// TestDoorStoreFromSettings: the store key of the user's settings moves
// the store (a run's events land in the database it names), and `settings
// show` prints it with its password hidden.
func TestDoorStoreFromSettings(t *testing.T) {
	dsn := withPassword(t, pgtest.URL(t))
	cfg := t.TempDir()
	os.MkdirAll(filepath.Join(cfg, "norma"), 0o700)
	if err := os.WriteFile(filepath.Join(cfg, "norma", "settings.yaml"), []byte("store: '"+dsn+"'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"XDG_CONFIG_HOME=" + cfg, "NORMA_STORE="}
	e := newRunEnv(t)
	script := e.script(t, "turns:\n  - tool_calls:\n      - {id: r, name: Read, input: {path: docs/intro.md}}\n  - text: done\n")
	code, out, errs := doorEnv(t, env, "--home", e.home, "run", "--workspace", e.ws, "--provider", "scripted",
		"--script", script, "--mode", "dontAsk", "--json", "go")
	noCanary(t, "run", out+errs)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(e.home, "norma.db")); err == nil {
		t.Error("the run wrote norma.db instead of the store its settings name")
	}
	var n int64
	if err := pgConnect(t, dsn).QueryRow(t.Context(), "SELECT count(*) FROM audit_events WHERE type = 'tool_call_finished'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("tool_call_finished events in the settings' store: %d, %v", n, err)
	}
	code, out, errs = doorEnv(t, env, "--home", e.home, "settings", "show", "--workspace", e.ws)
	noCanary(t, "settings show", out+errs)
	if code != 0 || !strings.Contains(out, "store postgres://postgres:xxxxx@") {
		t.Fatalf("settings show: exit %d\n%s%s", code, out, errs)
	}
}

// TestDoorStoreOwnAfterOther: a state directory whose key was made with
// another store (--store) and that then uses its own norma.db is not
// taken for one whose checkpoints were deleted; deleting them afterwards
// is still caught.
func TestDoorStoreOwnAfterOther(t *testing.T) {
	home := t.TempDir()
	other := "sqlite:" + filepath.Join(t.TempDir(), "other.db")
	sharedRuns(t, other, home)
	e := newRunEnv(t)
	e.home = home
	script := e.script(t, "turns:\n  - tool_calls:\n      - {id: r, name: Read, input: {path: docs/intro.md}}\n  - text: done\n")
	code, out, errs := door(t, "--home", home, "run", "--workspace", e.ws, "--provider", "scripted",
		"--script", script, "--mode", "dontAsk", "--json", "go")
	if code != 0 || strings.Contains(errs, "CHECKPOINT") {
		t.Fatalf("run on the own store after another: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = door(t, "--home", home, "audit", "verify")
	if code != 0 || strings.Contains(out+errs, "AUDIT_CHECKPOINT_MISSING") {
		t.Fatalf("audit verify of the own store: exit %d\n%s%s", code, out, errs)
	}
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(home, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	// As someone with the file would: past the append-only trigger.
	for _, q := range []string{"DROP TRIGGER audit_checkpoints_no_delete", "DELETE FROM audit_checkpoints"} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	code, out, errs = door(t, "--home", home, "audit", "verify")
	if code == 0 || !strings.Contains(out+errs, "AUDIT_CHECKPOINT_MISSING") {
		t.Fatalf("deleted checkpoints of the own store: exit %d, want AUDIT_CHECKPOINT_MISSING\n%s%s", code, out, errs)
	}
}
