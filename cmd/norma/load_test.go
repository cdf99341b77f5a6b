package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/pgtest"
	"github.com/norma-run/norma/provider/scripted"
	"github.com/norma-run/norma/runtime"
)

// The load tests start several `norma run` processes at once, each in a
// state directory and a workspace of its own, against one store, each
// playing a generated script of turns of tool calls: allowed calls
// (Read, Glob, and Edits that append their tool_use id to a ledger file
// of the workspace, the side effect that shows a call ran twice) and
// denied ones (a Read of .env, a Write outside the workspace). Afterwards
// the store must hold every decision exactly once, keyed by run id and
// tool_use id, nothing denied may have happened, and the chain must verify.
//
// $NORMA_LOAD_SIZE (RUNSxTURNSxCALLS, such as 8x100x10) sets the size;
// bench/teamload.sh runs the full size and prints the figures that
// BENCHMARKS.md records.

// loadEnv names the size of the load.
const loadEnv = "NORMA_LOAD_SIZE"

// loadSize is the shape of a load: runs processes, each of turns model
// turns of calls tool calls.
type loadSize struct{ runs, turns, calls int }

func (s loadSize) perRun() int { return s.turns * s.calls }

func (s loadSize) String() string { return fmt.Sprintf("%dx%dx%d", s.runs, s.turns, s.calls) }

// defaultLoad is small enough for CI (-race, two cores) and still starts
// eight processes at once.
var defaultLoad = loadSize{runs: 8, turns: 10, calls: 10}

// loadSizeOf reads $NORMA_LOAD_SIZE, else defaultLoad.
func loadSizeOf(t *testing.T) loadSize {
	t.Helper()
	v := os.Getenv(loadEnv)
	if v == "" {
		return defaultLoad
	}
	var s loadSize
	parts := strings.Split(v, "x")
	ns := make([]int, len(parts))
	for i, p := range parts {
		ns[i], _ = strconv.Atoi(p)
	}
	if len(ns) != 3 || ns[0] < 1 || ns[1] < 1 || ns[2] < 1 {
		t.Fatalf("$%s=%q: want RUNSxTURNSxCALLS, such as 8x100x10", loadEnv, v)
	}
	s.runs, s.turns, s.calls = ns[0], ns[1], ns[2]
	return s
}

// loadCall is one tool call of a generated script and what the policy
// must answer.
type loadCall struct {
	id, tool string
	// deny is the reason of the expected denial, "" when allowed.
	deny capability.Reason
	// edit: the call appends a line with its id to the ledger file.
	edit bool
}

// ledgerFile is the workspace file the Edit calls append to, and
// ledgerEnd the marker each replaces with its line and the marker.
const (
	ledgerFile = "ledger.txt"
	ledgerEnd  = "@@END@@"
)

// loadScript is a script of size.turns turns of size.calls calls, then a
// closing text, and its calls in order. Of every five calls two are
// denied (a Read of .env, a Write into outside, a directory out of the
// workspace) and three allowed (an Edit of the ledger file, a Read, a
// Glob).
func loadScript(size loadSize, outside string) (*scripted.Script, []loadCall) {
	s := &scripted.Script{}
	var calls []loadCall
	for turn := range size.turns {
		var tcs []scripted.ToolCall
		for c := range size.calls {
			id := fmt.Sprintf("t%04dc%02d", turn, c)
			var lc loadCall
			var in any
			switch c % 5 {
			case 0:
				lc = loadCall{tool: "Edit", edit: true}
				in = map[string]string{"path": ledgerFile, "old_string": ledgerEnd, "new_string": id + "\n" + ledgerEnd}
			case 1:
				lc = loadCall{tool: "Read"}
				in = map[string]string{"path": "docs/intro.md"}
			case 2:
				lc = loadCall{tool: "Read", deny: capability.ReasonFilesystemReadDenied}
				in = map[string]string{"path": ".env"}
			case 3:
				lc = loadCall{tool: "Write", deny: capability.ReasonPathEscape}
				in = map[string]string{"path": filepath.Join(outside, id), "content": runCanary}
			default:
				lc = loadCall{tool: "Glob"}
				in = map[string]string{"pattern": "docs/*"}
			}
			lc.id = id
			raw, _ := json.Marshal(in)
			tcs = append(tcs, scripted.ToolCall{ID: id, Name: lc.tool, Input: raw})
			calls = append(calls, lc)
		}
		s.Turns = append(s.Turns, scripted.Turn{ToolCalls: tcs})
	}
	s.Turns = append(s.Turns, scripted.Turn{Text: "done"})
	return s, calls
}

// loadRun is one norma run process of a load: its directories and
// script, and what its --json output reported.
type loadRun struct {
	home, ws, outside, script string
	calls                     []loadCall
	maxTurns                  int

	mu sync.Mutex
	id string // the run id, from session_started
	// reported is, by tool_use id, the reason its tool_call event gave:
	// the first that was a decision, else the last.
	reported map[string]string
	// unavailable are the calls any of the run's processes reported
	// STATE_UNAVAILABLE: refused because the store failed them.
	unavailable map[string]bool
	// turnDone is when the results of each turn arrived, by turn.
	turnDone map[int]time.Time
	started  time.Time
	status   string // of session_finished
	reason   string // of session_finished
	decided  *atomic.Int64
	bad      []string // lines that are not JSON or show the canary
	stored   int      // the audit events of the run in the store, by checkRun
}

// newLoadRun makes run n's state directory and workspace (a docs file,
// a .env holding the canary, the ledger file) and writes its script.
func newLoadRun(t *testing.T, root string, n int, size loadSize, decided *atomic.Int64) *loadRun {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprintf("run%d", n))
	r := &loadRun{home: filepath.Join(dir, "home"), ws: filepath.Join(dir, "ws"), outside: filepath.Join(dir, "outside"),
		script: filepath.Join(dir, "script.json"), maxTurns: size.turns + 5, reported: map[string]string{}, unavailable: map[string]bool{},
		turnDone: map[int]time.Time{}, decided: decided}
	for _, d := range []string{r.home, filepath.Join(r.ws, "docs"), r.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(r.ws, "docs", "intro.md"): "# Intro\nhello\n",
		filepath.Join(r.ws, ".env"):             "TOKEN=" + runCanary + "\n",
		filepath.Join(r.ws, ledgerFile):         "ledger\n" + ledgerEnd + "\n",
	}
	for p, body := range files {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, calls := loadScript(size, r.outside)
	r.calls = calls
	raw, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.script, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return r
}

// loadProc is a started norma run process of a load.
type loadProc struct {
	r    *loadRun
	cmd  *exec.Cmd
	errb bytes.Buffer
	done chan struct{} // closed when its output is read to the end
}

// command is the norma run (or, with resume, norma run --resume) of r
// against store, not yet started; env adds to the environment.
func (r *loadRun) command(ctx context.Context, t *testing.T, store string, resume bool, env []string) *loadProc {
	t.Helper()
	args := []string{"--home", r.home, "--store", store, "run", "--workspace", r.ws, "--script", r.script,
		"--mode", "acceptEdits", "--json", "--max-turns", strconv.Itoa(r.maxTurns)}
	if resume {
		args = append(args, "--resume", r.id)
	} else {
		args = append(args, "load")
	}
	p := &loadProc{r: r, cmd: exec.CommandContext(ctx, normaBin(t), args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdin = strings.NewReader("")
	p.cmd.Stderr = &p.errb
	return p
}

// start starts p and reads its --json events as they come.
func (p *loadProc) start(t *testing.T) {
	t.Helper()
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.r.mu.Lock()
	p.r.started = time.Now()
	p.r.mu.Unlock()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.r.event(sc.Bytes())
		}
	}()
}

// event records one line of the run's --json output.
func (r *loadRun) event(line []byte) {
	var e struct {
		Event  string `json:"event"`
		RunID  string `json:"run_id"`
		ID     string `json:"id"`
		Reason string `json:"reason"`
		Status string `json:"status"`
	}
	err := json.Unmarshal(line, &e)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil || bytes.Contains(line, []byte(runCanary)) {
		r.bad = append(r.bad, string(line))
		return
	}
	switch e.Event {
	case "session_started":
		r.id = e.RunID
	case "tool_call":
		// What a run reported done stays its report: a resume may answer
		// the same call again (TOOL_INTERRUPTED), which must not hide it.
		if prev, ok := r.reported[e.ID]; !ok || !decidedReason(prev) {
			r.reported[e.ID] = e.Reason
		}
		if e.Reason == string(capability.ReasonStateUnavailable) {
			r.unavailable[e.ID] = true
		}
		if decidedReason(e.Reason) {
			r.decided.Add(1)
		}
		if turn, err := strconv.Atoi(strings.TrimPrefix(strings.SplitN(e.ID, "c", 2)[0], "t")); err == nil {
			r.turnDone[turn] = time.Now()
		}
	case "session_finished":
		r.status, r.reason = e.Status, e.Reason
	}
}

// decidedReason reports whether a tool_call event's reason is a decision
// of the policy, as opposed to a call the run could not decide or run
// (the store went away: STATE_UNAVAILABLE, AUDIT_UNAVAILABLE; or a resume
// found it started by a process that stopped).
func decidedReason(r string) bool {
	switch capability.Reason(r) {
	case capability.ReasonStateUnavailable, capability.ReasonAuditUnavailable, capability.ReasonToolInterrupted, capability.ReasonToolAlreadyRan, "":
		return false
	}
	return true
}

// wait waits for p and returns its exit code.
func (p *loadProc) wait(t *testing.T) int {
	t.Helper()
	<-p.done
	err := p.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	} else if err != nil {
		t.Fatalf("norma run: %v", err)
	}
	if strings.Contains(p.errb.String(), runCanary) {
		t.Errorf("norma run: the canary leaked on stderr:\n%s", p.errb.String())
	}
	return 0
}

// loadResult is what a load measured.
type loadResult struct {
	store     string
	size      loadSize
	decisions int64
	wall      time.Duration
	// turn latencies, each from the previous turn's results (or the
	// process start) to this turn's.
	turns []time.Duration
}

func (l loadResult) String() string {
	slices.Sort(l.turns)
	pct := func(q float64) time.Duration {
		if len(l.turns) == 0 {
			return 0
		}
		return l.turns[min(len(l.turns)-1, int(q*float64(len(l.turns))))]
	}
	return fmt.Sprintf("teamload: store=%s size=%s decisions=%d wall=%.2fs rate=%.0f decisions/s turn(%d calls) p50=%.1fms p99=%.1fms",
		l.store, l.size, l.decisions, l.wall.Seconds(), float64(l.decisions)/l.wall.Seconds(), l.size.calls,
		float64(pct(0.50).Microseconds())/1000, float64(pct(0.99).Microseconds())/1000)
}

// turnLatencies are r's turn latencies.
func (r *loadRun) turnLatencies() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	prev := r.started
	for turn := 0; ; turn++ {
		at, ok := r.turnDone[turn]
		if !ok {
			return out
		}
		out = append(out, at.Sub(prev))
		prev = at
	}
}

// load is a load in progress: its runs, the processes of its current
// round (the first start, or the resumes after a kill), and the number of
// decisions the runs have reported.
type load struct {
	ctx     context.Context
	store   string
	size    loadSize
	env     []string
	runs    []*loadRun
	procs   []*loadProc
	decided atomic.Int64
	begin   time.Time
}

// newLoad makes size.runs runs against store, not yet started.
func newLoad(t *testing.T, store string, size loadSize) *load {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	t.Cleanup(cancel)
	l := &load{ctx: ctx, store: store, size: size, env: isolated(t)}
	root := t.TempDir()
	for n := range size.runs {
		l.runs = append(l.runs, newLoadRun(t, root, n, size, &l.decided))
	}
	normaBin(t) // built before the clock starts
	return l
}

// start starts runs (every run of l, or, with resume, norma run --resume
// of each) as close to at once as it can: every process is made before
// the first is started.
func (l *load) start(t *testing.T, runs []*loadRun, resume bool) {
	t.Helper()
	l.procs = nil
	for _, r := range runs {
		l.procs = append(l.procs, r.command(l.ctx, t, l.store, resume, l.env))
	}
	if l.begin.IsZero() {
		l.begin = time.Now()
	}
	for _, p := range l.procs {
		p.start(t)
	}
}

// wait waits for the processes of the current round and returns them
// with their exit codes.
func (l *load) wait(t *testing.T) map[*loadProc]int {
	t.Helper()
	codes := map[*loadProc]int{}
	for _, p := range l.procs {
		codes[p] = p.wait(t)
	}
	return codes
}

// requireCompleted asserts that every process of codes exited 0 with its
// run completed.
func requireCompleted(t *testing.T, codes map[*loadProc]int) {
	t.Helper()
	for p, code := range codes {
		if code != 0 || p.r.status != "completed" {
			t.Errorf("run %s: exit %d, status %q (%s)\n%s", p.r.id, code, p.r.status, p.r.reason, p.errb.String())
		}
	}
}

// result is what l measured, from its first start to now.
func (l *load) result(name string) loadResult {
	res := loadResult{store: name, size: l.size, decisions: l.decided.Load(), wall: time.Since(l.begin)}
	for _, r := range l.runs {
		res.turns = append(res.turns, r.turnLatencies()...)
	}
	return res
}

// runLoad starts size.runs processes at once against store and waits for
// them: each must complete. It returns the runs and what it measured.
func runLoad(t *testing.T, name, store string, size loadSize) ([]*loadRun, loadResult) {
	t.Helper()
	l := newLoad(t, store, size)
	l.start(t, l.runs, false)
	requireCompleted(t, l.wait(t))
	if t.Failed() {
		t.FailNow() // the store's records of failed runs would only repeat it
	}
	return l.runs, l.result(name)
}

// storeRecord is what the load tests read of an audit event.
type storeRecord struct {
	Type, Tool, Decision string
	Reason               capability.Reason
	ToolUseID            string
}

// storeRecords reads every audit event of run r from store, through the
// door (`norma audit query --run`).
func storeRecords(t *testing.T, store string, r *loadRun) []storeRecord {
	t.Helper()
	code, out, errs := door(t, "--home", r.home, "--store", store, "audit", "query", "--json", "--run", r.id, "--limit", "10000000")
	if code != 0 {
		t.Fatalf("audit query --run %s: exit %d\n%s", r.id, code, errs)
	}
	var recs []struct {
		Event struct {
			Type, Tool, Decision string
			Reason               capability.Reason
			Detail               struct {
				ToolUseID string `json:"tool_use_id"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		t.Fatalf("audit query: %v", err)
	}
	var evs []storeRecord
	for _, rec := range recs {
		e := rec.Event
		evs = append(evs, storeRecord{Type: e.Type, Tool: e.Tool, Decision: e.Decision, Reason: e.Reason, ToolUseID: e.Detail.ToolUseID})
	}
	return evs
}

// callTally is what the store holds of one tool_use.
type callTally struct{ denied, started, finished int }

// checkRun asserts that store holds every decision of r exactly once and
// that nothing ran twice or ran at all when denied. A call the run
// reported as not decided (TOOL_INTERRUPTED on a resume, STATE_UNAVAILABLE
// when the store went away) is one that may have been decided before the
// stop, but at most once, and its edit is in the ledger at most once. It
// returns the number of such calls.
func checkRun(t *testing.T, store string, r *loadRun) (undecided int) {
	t.Helper()
	tally := map[string]*callTally{}
	byID := map[string]loadCall{}
	for _, c := range r.calls {
		tally[c.id], byID[c.id] = &callTally{}, c
	}
	recs := storeRecords(t, store, r)
	r.stored = len(recs)
	for _, e := range recs {
		if e.ToolUseID == "" {
			continue
		}
		c, ok := tally[e.ToolUseID]
		if !ok {
			t.Errorf("run %s: the store holds %s of tool_use %q, which the script does not have", r.id, e.Type, e.ToolUseID)
			continue
		}
		want := byID[e.ToolUseID]
		switch e.Type {
		case "capability_decision":
			// A call a run reported STATE_UNAVAILABLE was refused because
			// the store failed it; its refusal may still be stored (the
			// store answered again for the audit event). That refusal is
			// not one of the load's decisions: the call never ran, and a
			// resume decides it again.
			r.mu.Lock()
			unavailable := r.unavailable[e.ToolUseID]
			r.mu.Unlock()
			if unavailable && e.Decision == "deny" && e.Reason == capability.ReasonStateUnavailable {
				continue
			}
			if e.Decision != "deny" || e.Reason != want.deny {
				t.Errorf("run %s: %s %s decided %s %s, want deny %s", r.id, e.ToolUseID, want.tool, e.Decision, e.Reason, want.deny)
			}
			c.denied++
		case "tool_call_started":
			if want.deny != "" {
				t.Errorf("run %s: %s %s was started, want denied %s", r.id, e.ToolUseID, want.tool, want.deny)
			}
			c.started++
		case "tool_call_finished":
			c.finished++
		}
	}
	ledger, err := os.ReadFile(filepath.Join(r.ws, ledgerFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{}
	for l := range strings.Lines(string(ledger)) {
		lines[strings.TrimSuffix(l, "\n")]++
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bad) != 0 {
		t.Errorf("run %s: --json printed %d lines that are not JSON or show the canary, such as %.300q", r.id, len(r.bad), r.bad[0])
	}
	for _, call := range r.calls {
		c, got := tally[call.id], r.reported[call.id]
		decisions := c.denied + c.started
		switch {
		case !decidedReason(got):
			undecided++
			if decisions > 1 || c.finished > c.started {
				t.Errorf("run %s: %s (reported %q) is in the store %+v, want at most one decision", r.id, call.id, got, *c)
			}
		case call.deny != "":
			if got != string(call.deny) || c.denied != 1 || c.started != 0 {
				t.Errorf("run %s: %s %s reported %q, in the store %+v; want denied %s exactly once", r.id, call.id, call.tool, got, *c, call.deny)
			}
		default:
			if got != string(capability.ReasonAllowed) || c.started != 1 || c.finished != 1 || c.denied != 0 {
				t.Errorf("run %s: %s %s reported %q, in the store %+v; want started and finished exactly once", r.id, call.id, call.tool, got, *c)
			}
		}
		if !call.edit {
			continue
		}
		switch n := lines[call.id]; {
		case n > 1:
			t.Errorf("run %s: edit %s ran %d times", r.id, call.id, n)
		case c.finished == 1 && n != 1, c.started == 0 && n != 0:
			t.Errorf("run %s: edit %s is in the ledger file %d times, in the store %+v", r.id, call.id, n, *c)
		}
	}
	if left, _ := os.ReadDir(r.outside); len(left) != 0 {
		t.Errorf("run %s: a denied Write wrote %d files outside the workspace", r.id, len(left))
	}
	return undecided
}

// checkVerify asserts that `norma audit verify` passes on store, from the
// state directory of the first run trusting the audit keys of the others
// and of the homes in trust (a team server's): the whole chain verifies
// and so does every checkpoint, each run's closing one included, none
// left unchecked.
func checkVerify(t *testing.T, store string, runs []*loadRun, events int, trust ...string) {
	t.Helper()
	args := []string{"--home", runs[0].home, "--store", store, "audit", "verify", "--json"}
	for _, r := range runs[1:] {
		trust = append(trust, r.home)
	}
	for _, home := range trust {
		args = append(args, "--trust-key", filepath.Join(home, runtime.KeyStoreDir, "audit-checkpoint.pub"))
	}
	code, out, errs := door(t, args...)
	var v struct {
		Events, Checkpoints int
		Unchecked           []any
	}
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil {
		t.Fatalf("audit verify: exit %d (%v)\n%s%s", code, err, out, errs)
	}
	if v.Events < events || v.Checkpoints < len(runs) || len(v.Unchecked) != 0 {
		t.Errorf("audit verify: %d events and %d checkpoints verified, %d keys unchecked; want at least the load's %d events, a checkpoint of each of the %d runs, none unchecked\n%s",
			v.Events, v.Checkpoints, len(v.Unchecked), events, len(runs), out)
	}
}

// checkLoad asserts checkRun of every run, that at most maxUndecided of
// each run's calls were not decided (the calls of the turn in flight when
// the store went away), and that the chain verifies.
func checkLoad(t *testing.T, store string, runs []*loadRun, size loadSize, maxUndecided int, trust ...string) {
	t.Helper()
	events, undecided := 0, 0
	defer func() { t.Logf("%d decisions in the store, %d calls undecided", events, undecided) }()
	for _, r := range runs {
		n := checkRun(t, store, r)
		undecided += n
		if n > maxUndecided {
			t.Errorf("run %s: %d calls not decided, want at most %d", r.id, n, maxUndecided)
		}
		events += size.perRun() - n
	}
	checkVerify(t, store, runs, events, trust...)
}

// waitDecided waits until the runs of l reported n decisions, and reports
// whether they did before every process ended.
func (l *load) waitDecided(n int64) bool {
	for l.decided.Load() < n {
		running := false
		for _, p := range l.procs {
			select {
			case <-p.done:
			default:
				running = true
			}
		}
		if !running {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// TestDoorLoadSQLite: the load on one SQLite file that every state
// directory shares (--store PATH): every run completes, each of its
// decisions is stored exactly once, no denied call had an effect, no
// edit ran twice, and the chain verifies.
func TestDoorLoadSQLite(t *testing.T) {
	size := loadSizeOf(t)
	store := filepath.Join(t.TempDir(), "shared.db")
	runs, res := runLoad(t, "sqlite", store, size)
	checkLoad(t, store, runs, size, 0)
	if want := int64(size.runs * size.perRun()); res.decisions != want {
		t.Errorf("%d decisions reported, want %d", res.decisions, want)
	}
	t.Log(res)
}

// TestDoorLoadPostgres is TestDoorLoadSQLite on one database of a private
// PostgreSQL server (--store postgres://…).
func TestDoorLoadPostgres(t *testing.T) {
	size := loadSizeOf(t)
	srv := pgtest.Cluster(t)
	store := srv.Database(t)
	runs, res := runLoad(t, "postgres", store, size)
	checkLoad(t, store, runs, size, 0)
	if want := int64(size.runs * size.perRun()); res.decisions != want {
		t.Errorf("%d decisions reported, want %d", res.decisions, want)
	}
	t.Log(res)
}

// TestDoorLoadPostgresKill9 kills the PostgreSQL server (postmaster and
// every backend, SIGKILL) when the runs have reported half the load's
// decisions. A run fails closed (no decision without its audit record):
// it stops with STATE_UNAVAILABLE and exit 4. The server restarts on the
// same data directory (crash recovery) and each stopped run is resumed,
// all at once. Then every decision a run reported, before the kill or
// after, is in the store exactly once (nothing committed was lost), a
// call is undecided only if it was in flight at the kill (at most one
// turn of each run), no edit ran twice, and the chain verifies.
func TestDoorLoadPostgresKill9(t *testing.T) {
	size := loadSizeOf(t)
	srv := pgtest.Cluster(t)
	store := srv.Database(t)
	l := newLoad(t, store, size)
	l.start(t, l.runs, false)
	if !l.waitDecided(int64(size.runs*size.perRun()) / 2) {
		t.Fatalf("the runs ended before half the load was decided")
	}
	before := l.decided.Load()
	srv.Kill()
	var stopped []*loadRun
	for p, code := range l.wait(t) {
		if code == 0 && p.r.status == "completed" {
			continue // it ended before the kill
		}
		if code != exitInternal || p.r.reason != string(capability.ReasonStateUnavailable) {
			t.Errorf("run %s after the kill: exit %d, status %q, reason %q; want exit %d, %s\n%s",
				p.r.id, code, p.r.status, p.r.reason, exitInternal, capability.ReasonStateUnavailable, p.errb.String())
		}
		stopped = append(stopped, p.r)
	}
	if len(stopped) == 0 {
		t.Fatal("no run was running at the kill")
	}
	t.Logf("killed the server at %d decisions reported; %d runs stopped", before, len(stopped))
	srv.Start()
	l.start(t, stopped, true)
	requireCompleted(t, l.wait(t))
	checkLoad(t, store, l.runs, size, size.calls)
}

// TestDoorLoadTeamServerKill9 kills `norma serve --team` (SIGKILL) when the
// runs, which write to PostgreSQL themselves, have reported half the
// load's decisions. The runs are unaffected: each completes. The server
// restarts on the same store and its API serves the full counts again:
// each run's events in /api/v1/runs are the store's, and
// /api/v1/audit/verify passes.
func TestDoorLoadTeamServerKill9(t *testing.T) {
	size := loadSizeOf(t)
	srv := pgtest.Cluster(t)
	store := srv.Database(t)
	serverHome := shortHome(t)
	var outputs, answers strings.Builder
	vic := teamToken(t, serverHome, "vic", "viewer", &outputs)
	server, _ := startTeam(t, serverHome, &answers, "--store", store)
	l := newLoad(t, store, size)
	l.start(t, l.runs, false)
	if !l.waitDecided(int64(size.runs*size.perRun()) / 2) {
		t.Fatalf("the runs ended before half the load was decided")
	}
	if err := server.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err := <-server.done
	server.done <- err // for its cleanup
	t.Logf("killed the team server at %d decisions reported (%v)", l.decided.Load(), err)
	requireCompleted(t, l.wait(t))
	_, api := startTeam(t, serverHome, &answers, "--store", store)
	code, m := api.call(t, "GET", "/api/v1/runs", vic, "")
	if code != 200 {
		t.Fatalf("GET /api/v1/runs after the restart: %d %v", code, m)
	}
	listed := map[string]float64{}
	for _, x := range m["runs"].([]any) {
		run := x.(map[string]any)
		listed[run["id"].(string)], _ = run["events"].(float64)
	}
	checkLoad(t, store, l.runs, size, 0, serverHome)
	for _, r := range l.runs {
		if got := listed[r.id]; int(got) != r.stored {
			t.Errorf("GET /api/v1/runs: run %s has %v events, the store %d", r.id, got, r.stored)
		}
	}
	if code, m := api.call(t, "GET", "/api/v1/audit/verify", vic, ""); code != 200 || m["ok"] != true {
		t.Errorf("GET /api/v1/audit/verify after the restart: %d %v", code, m)
	}
	if strings.Contains(answers.String()+outputs.String(), vic) {
		t.Error("the viewer token appears in an answer or an output")
	}
}
