package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/store"
)

// auditDB opens the state database behind norma's back, as an attacker
// with the file would.
func auditDB(t *testing.T, home string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(home, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

func execSQL(t *testing.T, raw *sql.DB, qs ...string) {
	t.Helper()
	for _, q := range qs {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// rechain rewrites the first allow decision into a deny and recomputes
// every hash after it, so that the unkeyed chain verifies again.
func rechain(t *testing.T, raw *sql.DB) {
	t.Helper()
	execSQL(t, raw, "DROP TRIGGER audit_events_no_update")
	rows, err := raw.Query("SELECT seq, body FROM audit_events ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		seq  int64
		body []byte
	}
	var all []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.seq, &r.body); err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	rows.Close()
	var prev [audit.HashSize]byte
	done := false
	for _, r := range all {
		if !done && bytes.Contains(r.body, []byte(`"decision":"allow"`)) {
			r.body, done = bytes.Replace(r.body, []byte(`"decision":"allow"`), []byte(`"decision":"deny"`), 1), true
		}
		h := audit.Link(prev, r.body)
		if _, err := raw.Exec("UPDATE audit_events SET body = ?, hash = ? WHERE seq = ?", r.body, h[:], r.seq); err != nil {
			t.Fatal(err)
		}
		prev = h
	}
	if !done {
		t.Fatal("the run recorded no allow decision to rewrite")
	}
}

func countCheckpoints(t *testing.T, raw *sql.DB) int {
	t.Helper()
	var n int
	if err := raw.QueryRow("SELECT count(*) FROM audit_checkpoints").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDoorAuditCheckpoint: `norma run` ends with a signed checkpoint;
// deleting the newest events with SQL, or rewriting one and recomputing
// the chain, makes `norma audit verify` exit 1 with the reason code and
// the missing range; an exported checkpoint still catches truncation when
// every stored checkpoint was deleted, and a key replaced to sign the
// truncated log. The next run does not sign over the tampered log, and a
// failing verify writes nothing.
func TestDoorAuditCheckpoint(t *testing.T) {
	const script = `turns:
  - tool_calls:
      - {id: t1, name: Read, input: {path: docs/intro.md}}
      - {id: t2, name: Read, input: {path: .env}}
      - {id: t3, name: Read, input: {path: docs/intro.md}}
      - {id: t4, name: Read, input: {path: docs/intro.md}}
  - text: "Done."
`
	tests := []struct {
		name   string
		tamper func(t *testing.T, home string, raw *sql.DB, n int)
		// want are the outputs of `audit verify` and of `audit verify
		// --checkpoint EXPORTED`.
		want, wantExported []string
		// resigned: the attacker made new checkpoints; the run end's
		// refusal is not checked.
		resigned bool
	}{
		{"truncate the newest 3", func(t *testing.T, _ string, raw *sql.DB, n int) {
			execSQL(t, raw, "DROP TRIGGER audit_events_no_delete", "DELETE FROM audit_events WHERE seq > "+strconv.Itoa(n-3))
		}, []string{"FAILED AUDIT_EVENTS_MISSING: events {n-2}..{n} are missing"},
			[]string{"FAILED AUDIT_EVENTS_MISSING: events {n-2}..{n} are missing"}, false},
		{"rewrite and recompute the chain", func(t *testing.T, _ string, raw *sql.DB, n int) {
			rechain(t, raw)
		}, []string{"FAILED AUDIT_CHECKPOINT_MISMATCH: the chain hash at event {n} differs"},
			[]string{"FAILED AUDIT_CHECKPOINT_MISMATCH"}, false},
		{"truncate and delete every checkpoint", func(t *testing.T, home string, raw *sql.DB, n int) {
			execSQL(t, raw, "DROP TRIGGER audit_events_no_delete", "DELETE FROM audit_events WHERE seq > "+strconv.Itoa(n-3),
				"DROP TRIGGER audit_checkpoints_no_delete", "DELETE FROM audit_checkpoints")
			os.Remove(filepath.Join(home, runtime.AuditCheckpointFile))
		}, []string{"FAILED AUDIT_CHECKPOINT_MISSING"},
			[]string{"FAILED AUDIT_EVENTS_MISSING: events {n-2}..{n} are missing: the checkpoint in {exported} covers {n} events"}, false},
		{"truncate and replace the key", func(t *testing.T, home string, raw *sql.DB, n int) {
			execSQL(t, raw, "DROP TRIGGER audit_events_no_delete", "DELETE FROM audit_events WHERE seq > "+strconv.Itoa(n-3),
				"DROP TRIGGER audit_checkpoints_no_delete", "DELETE FROM audit_checkpoints")
			os.Remove(filepath.Join(home, runtime.AuditCheckpointFile))
			os.RemoveAll(filepath.Join(home, runtime.KeyStoreDir))
			if code, out, errs := door(t, "--home", home, "audit", "checkpoint"); code != 0 {
				t.Fatalf("attacker's checkpoint: exit %d\n%s%s", code, out, errs)
			}
		}, []string{"ok: {n-3} events verified"},
			[]string{"FAILED AUDIT_CHECKPOINT_INVALID", "not signed by this state directory's audit key"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newRunEnv(t)
			s := e.script(t, script)
			if code, out, errs := door(t, "--home", e.home, "run", "--workspace", e.ws, "--script", s, "--yes", "go"); code != 0 {
				t.Fatalf("run: exit %d\n%s%s", code, out, errs)
			}
			code, out, errs := door(t, "--home", e.home, "audit", "verify", "--json")
			var res struct {
				Events, Checkpoints, CheckpointSize int64
			}
			json.Unmarshal([]byte(strings.NewReplacer("checkpoint_size", "checkpointsize").Replace(out)), &res)
			if code != 0 || res.Events < 4 || res.Checkpoints < 1 || res.CheckpointSize != res.Events {
				t.Fatalf("verify after the run: exit %d, %+v\n%s%s", code, res, out, errs)
			}
			n := int(res.Events)
			exported := filepath.Join(t.TempDir(), "exported.checkpoint")
			if code, out, errs := door(t, "--home", e.home, "audit", "checkpoint", "--out", exported); code != 0 {
				t.Fatalf("checkpoint --out: exit %d\n%s%s", code, out, errs)
			}
			if b, _ := os.ReadFile(exported); !bytes.Contains(b, []byte("\n"+strconv.Itoa(n)+"\n")) || !bytes.Contains(b, []byte("\n\n— ")) {
				t.Fatalf("exported checkpoint:\n%s", b)
			}

			raw := auditDB(t, e.home)
			tt.tamper(t, e.home, raw, n)
			expand := strings.NewReplacer("{n}", strconv.Itoa(n), "{n-2}", strconv.Itoa(n-2), "{n-3}", strconv.Itoa(n-3), "{exported}", exported)
			stored := countCheckpoints(t, raw)
			copyBefore, _ := os.ReadFile(filepath.Join(e.home, runtime.AuditCheckpointFile))

			for _, c := range []struct {
				args []string
				want []string
			}{
				{nil, tt.want},
				{[]string{"--checkpoint", exported}, tt.wantExported},
			} {
				code, out, errs := door(t, append([]string{"--home", e.home, "audit", "verify"}, c.args...)...)
				wantCode := 1
				if strings.HasPrefix(c.want[0], "ok:") {
					wantCode = 0
				}
				if code != wantCode {
					t.Errorf("verify %v: exit %d, want %d\n%s%s", c.args, code, wantCode, out, errs)
				}
				for _, w := range c.want {
					if w = expand.Replace(w); !strings.Contains(out, w) {
						t.Errorf("verify %v: output lacks %q:\n%s%s", c.args, w, out, errs)
					}
				}
			}
			if tt.resigned {
				return
			}
			// The next run's end refuses to sign over the tampered log.
			code, out, errs = door(t, "--home", e.home, "run", "--workspace", e.ws, "--script", s, "--yes", "go")
			if code != 0 || !strings.Contains(errs, "audit: checkpoint: AUDIT_") {
				t.Errorf("second run: exit %d; want 0 with the checkpoint refusal on stderr\n%s%s", code, out, errs)
			}
			copyAfter, _ := os.ReadFile(filepath.Join(e.home, runtime.AuditCheckpointFile))
			if got := countCheckpoints(t, raw); got != stored || !bytes.Equal(copyBefore, copyAfter) {
				t.Errorf("checkpoints: %d stored before, %d after verify and a run; copy changed %v; want nothing written",
					stored, got, !bytes.Equal(copyBefore, copyAfter))
			}
		})
	}
}
