package postgres_test

import (
	"strings"
	"testing"

	"github.com/norma-run/norma/internal/pgtest"
	"github.com/norma-run/norma/plugin"
)

// TestConsentsAppendOnlyAndTenants: the database refuses to change or
// delete a consent record, and one tenant never sees another's.
func TestConsentsAppendOnlyAndTenants(t *testing.T) {
	ctx := t.Context()
	url := pgtest.URL(t)
	a, b := openPG(t, withTenant(url, "team-a")), openPG(t, withTenant(url, "team-b"))
	r := plugin.ConsentRecord{Plugin: "com.example.p", Action: plugin.ConsentInstall, Who: "alice", Granted: map[plugin.Group][]string{}}
	if err := a.RecordConsent(ctx, r); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{"UPDATE plugin_consents SET who = 'mallory'", "DELETE FROM plugin_consents", "TRUNCATE plugin_consents"} {
		conn := openRaw(t, url)
		if _, err := conn.Exec(ctx, sql); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want append-only", sql, err)
		}
	}
	got, err := a.Consents(ctx, plugin.ConsentFilter{})
	if err != nil || len(got) != 1 || got[0].Who != "alice" {
		t.Fatalf("team-a after the attempts: %+v, %v", got, err)
	}
	if got, err := b.Consents(ctx, plugin.ConsentFilter{Latest: true}); err != nil || len(got) != 0 {
		t.Fatalf("team-b sees %+v, %v; want nothing", got, err)
	}
}
