package store_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/store"
)

func schema(t *testing.T, db *store.DB, path string) string {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rows, err := raw.Query("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var typ, name string
		var s sql.NullString
		if err := rows.Scan(&typ, &name, &s); err != nil {
			t.Fatal(err)
		}
		b.WriteString(typ + " " + name + " " + s.String + "\n")
	}
	return b.String()
}

// TestMigrateForward opens a database at every earlier version (with a row
// in each table that exists by then) and migrates it to the current one;
// the schema equals a fresh database's and the rows survive.
func TestMigrateForward(t *testing.T) {
	ctx := t.Context()
	freshPath := filepath.Join(t.TempDir(), "fresh.db")
	fresh, err := store.Open(ctx, freshPath)
	if err != nil {
		t.Fatal(err)
	}
	want := schema(t, fresh, freshPath)
	if v, _ := fresh.Version(ctx); v != store.Migrations {
		t.Fatalf("fresh Version = %d, want %d", v, store.Migrations)
	}
	fresh.Close()
	for from := 0; from < store.Migrations; from++ {
		t.Run(fmt.Sprintf("from=%d", from), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), store.FileName)
			old, err := store.OpenAt(ctx, path, from)
			if err != nil {
				t.Fatal(err)
			}
			if v, _ := old.Version(ctx); v != from {
				t.Fatalf("OpenAt(%d) Version = %d", from, v)
			}
			if from >= 1 {
				l, _ := audit.Open(old, nil)
				if err := l.Record(ctx, audit.Event{Type: audit.TypePluginInstalled, Plugin: "p"}); err != nil {
					t.Fatal(err)
				}
				l.Close()
			}
			old.Close()
			db, err := store.Open(ctx, path)
			if err != nil {
				t.Fatalf("Open from version %d: %v", from, err)
			}
			defer db.Close()
			if got := schema(t, db, path); got != want {
				t.Errorf("schema after migrating from %d:\n%s\nwant:\n%s", from, got, want)
			}
			res, err := audit.VerifyBackend(ctx, db)
			if wantN := int64(min(from, 1)); err != nil || !res.OK() || res.Events != wantN {
				t.Errorf("Verify after migration = %+v, %v; want %d events", res, err, wantN)
			}
		})
	}
}

func TestRefuseNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), store.FileName)
	db, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	raw, _ := sql.Open("sqlite", "file:"+path)
	if _, err := raw.Exec("PRAGMA user_version = 999"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if _, err := store.Open(t.Context(), path); !errors.Is(err, store.ErrTooNew) {
		t.Errorf("Open(newer) = %v, want ErrTooNew", err)
	}
}

func TestFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), store.FileName)
	db, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
}

// TestRedactionCanary feeds a canary secret through every string field of
// audit events and through approval previews, targets and reasons, then
// scans the database file and its WAL byte for byte (and the JSON that
// query and approvals list print).
func TestRedactionCanary(t *testing.T) {
	const canary = "sk_live_CANARY_7f3a9e51d2c84b06"
	red := audit.RedactorFunc(func(s string) string { return strings.ReplaceAll(s, canary, "[REDACTED:secret]") })
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, store.FileName)
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	log, err := audit.Open(db, &audit.Options{Redactor: red})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	c := "Authorization: Bearer " + canary
	if err := log.Record(ctx, audit.Event{
		Type: audit.TypeCapabilityDecision, RunID: c, Principal: c, Plugin: c, PluginVersion: c, Tool: c,
		CapabilityKind: c, Decision: c, Reason: c, Layer: c, Rule: c, ManifestDigest: c, ApprovalID: c,
		TargetHash: c, OutputDigest: c, Detail: map[string]string{"header": c, c: "key", "url": "https://x.invalid/?sig=" + canary},
	}); err != nil {
		t.Fatal(err)
	}
	svc, err := approval.NewService(db, &approval.Options{Sink: log, Redactor: red, Approver: approval.Auto{Grant: true, By: "auto " + canary}})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := approval.HashAction(approval.Action{Tool: "t", RunID: "r", Input: json.RawMessage(`{"token":"` + canary + `"}`)})
	if _, err := svc.Authorize(ctx, approval.Request{RunID: "r", Tool: "t", ActionHash: h, Preview: "send " + canary, Target: "https://x.invalid/?sig=" + canary}); err != nil {
		t.Fatal(err)
	}
	recs, _ := log.Query(ctx, audit.Filter{})
	listed, _ := svc.List(ctx, approval.ListFilter{})
	printed, _ := json.Marshal([]any{recs, listed})
	if bytes.Contains(printed, []byte(canary)) {
		t.Errorf("query/list output contains the canary")
	}
	if len(recs) < 4 {
		t.Fatalf("only %d events recorded", len(recs))
	}
	for _, f := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(canary)) {
			t.Errorf("%s contains the canary", filepath.Base(f))
		}
		// Negative control: the redacted placeholder did reach the file.
		if f == path+"-wal" && !bytes.Contains(b, []byte("[REDACTED:secret]")) {
			t.Errorf("%s does not contain the placeholder; the scan saw nothing", filepath.Base(f))
		}
	}
}

// TestMigrateCheckpointOrigin: checkpoints stored before they were keyed
// by origin keep their note and get the origin it names (its first line).
func TestMigrateCheckpointOrigin(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), store.FileName)
	old, err := store.OpenAt(ctx, path, store.Migrations-1)
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	note := "github.com/norma-run/norma/audit/0123456789abcdef\n7\nAAAA\n\n— sig\n"
	raw, _ := sql.Open("sqlite", "file:"+path)
	if _, err := raw.Exec("INSERT INTO audit_checkpoints (size, time_ns, note) VALUES (7, 1, ?)", []byte(note)); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cps, err := db.AuditCheckpoints(ctx)
	if err != nil || len(cps) != 1 || cps[0].Origin != "github.com/norma-run/norma/audit/0123456789abcdef" || cps[0].Size != 7 || string(cps[0].Note) != note {
		t.Fatalf("after migration: %+v, %v", cps, err)
	}
}
