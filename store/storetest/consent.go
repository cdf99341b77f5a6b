package storetest

import (
	"reflect"
	"testing"
	"time"

	"github.com/norma-run/norma/plugin"
)

// testConsents: consent records come back as stored, oldest first, by
// plugin, by host and as the newest per plugin and host (what each
// machine holds now); a record without plugin or action is refused.
func testConsents(t *testing.T, b Backend) {
	fresh := func(t *testing.T) plugin.ConsentBackend { return open(t, b, b.New(t)) }
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 123456789, time.UTC)
	install := plugin.ConsentRecord{
		Plugin: "com.example.p", Version: "1.0.0", ManifestDigest: "sha256:m1", PermissionDigest: "sha256:p1",
		GrantDigest: "sha256:g1", Generation: 1, Action: plugin.ConsentInstall,
		Granted: map[plugin.Group][]string{plugin.GroupNetwork: {"GET https://a.example:443 /x"}, plugin.GroupSecrets: {"tok"}},
		Who:     "alice", Host: "laptop", Time: t0,
	}
	update := install
	update.Version, update.Generation, update.Action, update.Time = "1.1.0", 2, plugin.ConsentUpdate, t0.Add(time.Hour)
	other := install
	other.Host, other.Who, other.Time = "ci-runner", "ci", t0.Add(2*time.Hour)
	revoke := plugin.ConsentRecord{Plugin: "com.example.p", Version: "1.1.0", ManifestDigest: "sha256:m2", Action: plugin.ConsentRevoke,
		Granted: map[plugin.Group][]string{}, Who: "alice", Host: "laptop", Time: t0.Add(3 * time.Hour)}
	second := install
	second.Plugin, second.Time = "com.example.q", t0.Add(4*time.Hour)
	all := []plugin.ConsentRecord{install, update, other, revoke, second}

	cases := []struct {
		name string
		f    plugin.ConsentFilter
		want []plugin.ConsentRecord
	}{
		{"all, oldest first", plugin.ConsentFilter{}, all},
		{"one plugin", plugin.ConsentFilter{Plugin: "com.example.q"}, []plugin.ConsentRecord{second}},
		{"one host", plugin.ConsentFilter{Host: "ci-runner"}, []plugin.ConsentRecord{other}},
		{"latest per plugin and host", plugin.ConsentFilter{Latest: true}, []plugin.ConsentRecord{other, revoke, second}},
		{"latest of one plugin", plugin.ConsentFilter{Plugin: "com.example.p", Latest: true}, []plugin.ConsentRecord{other, revoke}},
		{"no match", plugin.ConsentFilter{Plugin: "com.example.none"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := fresh(t)
			for _, r := range all {
				if err := b.RecordConsent(t.Context(), r); err != nil {
					t.Fatal(err)
				}
			}
			got, err := b.Consents(t.Context(), c.f)
			if err != nil {
				t.Fatal(err)
			}
			var prev int64
			for i := range got {
				if got[i].Seq <= prev {
					t.Fatalf("record %d: Seq %d not increasing after %d", i, got[i].Seq, prev)
				}
				prev = got[i].Seq
				got[i].Seq = 0
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Consents(%+v)\n got %+v\nwant %+v", c.f, got, c.want)
			}
		})
	}
	t.Run("refuses a record without plugin or action", func(t *testing.T) {
		b := fresh(t)
		for _, r := range []plugin.ConsentRecord{{Action: plugin.ConsentInstall, Time: t0}, {Plugin: "com.example.p", Time: t0}} {
			if err := b.RecordConsent(t.Context(), r); err == nil {
				t.Fatalf("RecordConsent(%+v) = nil, want an error", r)
			}
		}
		if got, err := b.Consents(t.Context(), plugin.ConsentFilter{}); err != nil || len(got) != 0 {
			t.Fatalf("after refusals: %v, %v; want nothing stored", got, err)
		}
	})
}
