package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/norma-run/norma/internal/pgtest"
)

// pgExec runs statements on their own connection to the database of u.
func pgExec(t *testing.T, u string, stmts ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestDoorTeamApproveUnauditedChangesNothing: the PostgreSQL database
// refuses every audit write (a trigger, as a full disk, a revoked grant or
// a DBA would) while an approver approves a runner's request through the
// built server's API. The approve is refused (503
// APPROVAL_STORE_UNAVAILABLE), and once audit writes work again the
// request is still pending: no grant is in force without its audit
// record, the runner's redeem finds nothing to redeem (202, no ticket),
// and the audit log holds no grant and no use. Approved again with the
// audit log working, the grant is redeemed as usual.
func TestDoorTeamApproveUnauditedChangesNothing(t *testing.T) {
	dbURL := pgtest.URL(t)
	db := withPassword(t, dbURL)
	home := shortHome(t)
	var outputs, answers strings.Builder
	alice := teamToken(t, home, "alice", "approver", &outputs)
	ci := teamToken(t, home, "ci", "runner", &outputs)
	srv, api := startTeam(t, home, &answers, "--store", db)

	file := `{"run_id":"run-rt","tool":"Bash","effect":"process.spawn","target":"make deploy","preview":"$ make deploy",` +
		`"action_hash":"sha256:` + strings.Repeat("cd", 32) + `"}`
	code, m := api.call(t, "POST", "/api/v1/approvals", ci, file)
	if code != 202 {
		t.Fatalf("file: %d %v", code, m)
	}
	id := m["approval"].(map[string]any)["id"].(string)

	pgExec(t, dbURL,
		`CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'audit writes are refused'; END $$`,
		`CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION refuse_audit()`)
	code, m = api.call(t, "POST", "/api/v1/approvals/"+id+"/approve", alice, `{"reason":"ship it"}`)
	if code != 503 || m["error"].(map[string]any)["code"] != "APPROVAL_STORE_UNAVAILABLE" {
		t.Errorf("approve while the audit log refuses writes: %d %v, want 503 APPROVAL_STORE_UNAVAILABLE", code, m)
	}
	pgExec(t, dbURL, `DROP TRIGGER refuse_audit ON audit_events`)

	_, m = api.call(t, "GET", "/api/v1/approvals/"+id, ci, "")
	if rec := m["approval"].(map[string]any); rec["state"] != "pending" || rec["decided_by"] != nil || rec["why"] != nil {
		t.Errorf("after the unaudited approve the record is %v, want it pending and undecided", rec)
	}
	code, m = api.call(t, "POST", "/api/v1/approvals", ci, file)
	if code != 202 || m["ticket"] != nil {
		t.Errorf("the runner redeems after the unaudited approve: %d %v, want 202 and no ticket", code, m)
	}
	for _, typ := range []string{"approval_granted", "approval_consumed"} {
		if _, m := api.call(t, "GET", "/api/v1/audit?type="+typ, alice, ""); len(m["events"].([]any)) != 0 {
			t.Errorf("%s events after the unaudited approve: %v", typ, m["events"])
		}
	}

	// The audit log works again: the same approve takes effect.
	if code, m = api.call(t, "POST", "/api/v1/approvals/"+id+"/approve", alice, `{"reason":"ship it"}`); code != 200 {
		t.Fatalf("approve: %d %v", code, m)
	}
	if code, m = api.call(t, "POST", "/api/v1/approvals", ci, file); code != 200 || m["ticket"] == nil {
		t.Errorf("redeem after the audited approve: %d %v", code, m)
	}
	if _, m := api.call(t, "GET", "/api/v1/audit/verify", alice, ""); m["ok"] != true {
		t.Errorf("verify = %v", m)
	}

	srv.cmd.Process.Signal(os.Interrupt)
	<-srv.done
	srv.done <- nil
	for _, tok := range []string{alice, ci} {
		if strings.Contains(answers.String()+srv.stderr.String(), tok) {
			t.Error("a token is in an answer or the server log")
		}
	}
	noCanary(t, "server log", srv.stderr.String()+answers.String())
}
