package plugin

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/norma-run/norma/capability"
)

// consentLog is an in-memory ConsentBackend.
type consentLog struct {
	mu   sync.Mutex
	recs []ConsentRecord
	fail bool
}

func (l *consentLog) RecordConsent(_ context.Context, r ConsentRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail {
		return errors.New("store down")
	}
	r.Seq = int64(len(l.recs) + 1)
	l.recs = append(l.recs, r)
	return nil
}

func (l *consentLog) Consents(context.Context, ConsentFilter) ([]ConsentRecord, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.recs), nil
}

func (e *env) managerWith(t *testing.T, c Consenter, log *consentLog) *Manager {
	m, err := NewManager(Options{Home: e.home, Trust: e.trust, Audit: e.audit, Consenter: c, Out: &e.out, Now: fixedNow,
		Consents: log, Who: "alice", Host: "laptop"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestConsentRecords: install, a held update and its consent, a narrowing
// update and a removal each leave one record in the store, naming what
// the enforced grant holds at that moment (its items and the digest
// grant.json binds), who and where.
func TestConsentRecords(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	log := &consentLog{}
	sc := &script{answers: map[Group][]string{GroupFilesystemWrite: {"workspace://.agent-output/reports/**"}}}
	m := e.managerWith(t, sc, log)
	check := func(step string, action ConsentAction, version string) {
		t.Helper()
		r := log.recs[len(log.recs)-1]
		if r.Action != action || r.Plugin != helper || r.Version != version || r.Who != "alice" || r.Host != "laptop" || !r.Time.Equal(fixedNow()) {
			t.Fatalf("%s: record %+v, want %s of %s %s by alice on laptop", step, r, action, helper, version)
		}
		g, b, err := m.Grant(helper)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if !reflect.DeepEqual(r.Granted, GrantItems(g.Permissions)) || r.GrantDigest != b.GrantDigest || r.Generation != b.Generation {
			t.Fatalf("%s: record granted %v digest %s gen %d; grant.json has %v %s %d", step, r.Granted, r.GrantDigest, r.Generation,
				GrantItems(g.Permissions), b.GrantDigest, b.Generation)
		}
		st, _ := m.Info(helper)
		if r.ManifestDigest != st.Versions[st.Active].ManifestDigest {
			t.Fatalf("%s: record manifest %s, active %s", step, r.ManifestDigest, st.Versions[st.Active].ManifestDigest)
		}
	}
	if _, err := m.Install(ctx, e.pkg(t, "issue-helper-1.4.0"), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	check("install", ConsentInstall, "1.4.0")
	if _, err := m.Update(ctx, e.pkg(t, "issue-helper-1.5.0"), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(log.recs) != 1 {
		t.Fatalf("a held update recorded a consent: %+v", log.recs[1:])
	}
	m = e.managerWith(t, &script{}, log)
	if _, err := m.Consent(ctx, helper, nil); err != nil {
		t.Fatal(err)
	}
	check("consent", ConsentGrant, "1.5.0")
	if _, err := m.Update(ctx, e.pkg(t, "issue-helper-1.4.1"), InstallOptions{AllowDowngrade: true}); err != nil {
		t.Fatal(err)
	}
	check("update", ConsentUpdate, "1.4.1")
	if err := m.Remove(ctx, helper); err != nil {
		t.Fatal(err)
	}
	r := log.recs[len(log.recs)-1]
	if len(log.recs) != 4 || r.Action != ConsentRevoke || r.Version != "1.4.1" || len(r.Granted) != 0 || r.Who != "alice" {
		t.Fatalf("after remove: %+v", log.recs)
	}
}

// TestConsentStoreDownAborts: when the store refuses the record, the
// install and the removal fail and nothing on disk changed.
func TestConsentStoreDownAborts(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	log := &consentLog{fail: true}
	m := e.managerWith(t, &script{}, log)
	before := snapshot(t, e.home)
	_, err := m.Install(ctx, e.pkg(t, "issue-helper-1.4.0"), InstallOptions{})
	wantCode(t, "Install(store down)", err, capability.ReasonPluginState, "consent record")
	if after := snapshot(t, e.home); !slices.Equal(before, after) {
		t.Errorf("install without the store changed state: %q", after)
	}
	log.fail = false
	if _, err := m.Install(ctx, e.pkg(t, "issue-helper-1.4.0"), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	log.fail = true
	before = snapshot(t, e.home)
	err = m.Remove(ctx, helper)
	wantCode(t, "Remove(store down)", err, capability.ReasonPluginState, "consent record")
	if after := snapshot(t, e.home); !slices.Equal(before, after) {
		t.Errorf("remove without the store changed state: %q", after)
	}
}
