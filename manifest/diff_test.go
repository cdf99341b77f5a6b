package manifest

import (
	"strings"
	"testing"
)

func TestDiffIssueHelperUpdate(t *testing.T) {
	old := mustParse(t, "testdata/manifests/valid/issue-helper.yaml")
	new := mustParse(t, "testdata/manifests/valid/issue-helper-1.5.0.yaml")
	d := Diff(old, new)
	if !d.NeedsConsent() {
		t.Fatal("1.4.0 → 1.5.0 must need re-consent")
	}
	var got []string
	for _, c := range append(d.Added, d.Widened...) {
		got = append(got, c.String())
	}
	want := []string{
		"filesystem.read workspace://src/**",
		"network POST https://hooks.example.invalid:443/notify/{channel}",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("widening:\n got  %q\n want %q", got, want)
	}
	if len(d.Removed)+len(d.Narrowed) != 0 {
		t.Errorf("unexpected narrowing: %+v", d)
	}
	back := Diff(new, old)
	if back.NeedsConsent() || len(back.Removed) != 2 {
		t.Errorf("reverse must only narrow: %+v", back)
	}
}

func perms(t *testing.T, body string) Permissions {
	t.Helper()
	l, err := ParseLayer("p.yaml", []byte("schema_version: 2\nkind: workspace\npermissions:\n"+body))
	if err != nil {
		t.Fatal(err)
	}
	return l.Permissions
}

func TestDiffPermissions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string
		consent  bool
		wantKind string // the first change's list: added|widened|narrowed|removed|none
	}{
		{"reorder changes nothing",
			"  filesystem: {read: [\"workspace://a/**\", \"workspace://b/**\"]}\n",
			"  filesystem: {read: [\"workspace://b/**\", \"workspace://a/**\"]}\n", false, "none"},
		{"docs/** to ** widens",
			"  filesystem: {read: [\"workspace://docs/**\"]}\n",
			"  filesystem: {read: [\"workspace://**\"]}\n", true, "widened"},
		{"docs/a/** to docs/** widens",
			"  filesystem: {write: [\"workspace://docs/a/**\"]}\n",
			"  filesystem: {write: [\"workspace://docs/**\"]}\n", true, "widened"},
		{"** to docs/** narrows",
			"  filesystem: {read: [\"workspace://**\"]}\n",
			"  filesystem: {read: [\"workspace://docs/**\"]}\n", false, "narrowed"},
		{"a literal inside a granted tree is covered",
			"  filesystem: {read: [\"workspace://docs/**\"]}\n",
			"  filesystem: {read: [\"workspace://docs/**\", \"workspace://docs/x/y.md\", \"workspace://docs/*.md\"]}\n", false, "none"},
		{"a new deny narrows",
			"  filesystem: {deny: []}\n",
			"  filesystem: {deny: [\"workspace://**/.env*\"]}\n", false, "narrowed"},
		{"a dropped deny widens",
			"  filesystem: {deny: [\"workspace://**/.env*\"]}\n",
			"  filesystem: {deny: []}\n", true, "widened"},
		{"new origin",
			"  network: {requests: [{origin: https://a.example, methods: [GET], paths: [\"/x\"]}]}\n",
			"  network: {requests: [{origin: https://a.example, methods: [GET], paths: [\"/x\"]}, {origin: https://b.example, methods: [GET], paths: [\"/x\"]}]}\n", true, "added"},
		{"new method",
			"  network: {requests: [{origin: https://a.example, methods: [GET], paths: [\"/x\"]}]}\n",
			"  network: {requests: [{origin: https://a.example, methods: [GET, DELETE], paths: [\"/x\"]}]}\n", true, "added"},
		{"renamed template parameter is the same path",
			"  network: {requests: [{origin: https://a.example, methods: [GET], paths: [\"/x/{a}\"]}]}\n",
			"  network: {requests: [{origin: https://a.example, methods: [GET], paths: [\"/x/{b}\"]}]}\n", false, "none"},
		{"approval dropped widens",
			"  network: {requests: [{origin: https://a.example, methods: [POST], paths: [\"/x\"], approval: per_action}]}\n",
			"  network: {requests: [{origin: https://a.example, methods: [POST], paths: [\"/x\"]}]}\n", true, "widened"},
		{"new secret",
			"  secrets: []\n",
			"  secrets: [{name: t, purpose: https://a.example, inject_as: brokered_header}]\n", true, "added"},
		{"new scope widens",
			"  secrets: [{name: t, purpose: https://a.example, inject_as: brokered_header, scopes: [r]}]\n",
			"  secrets: [{name: t, purpose: https://a.example, inject_as: brokered_header, scopes: [r, w]}]\n", true, "widened"},
		{"spawn allowed widens",
			"  process: {spawn: deny}\n",
			"  process: {spawn: allow}\n", true, "widened"},
		{"external writes to deny narrows",
			"  external_writes: {default: approval_required}\n",
			"  external_writes: {default: deny}\n", false, "narrowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DiffPermissions(perms(t, tc.old), perms(t, tc.new))
			if d.NeedsConsent() != tc.consent {
				t.Errorf("NeedsConsent = %v, want %v; delta %+v", d.NeedsConsent(), tc.consent, d)
			}
			kind := "none"
			switch {
			case len(d.Added) > 0:
				kind = "added"
			case len(d.Widened) > 0:
				kind = "widened"
			case len(d.Narrowed) > 0:
				kind = "narrowed"
			case len(d.Removed) > 0:
				kind = "removed"
			}
			if kind != tc.wantKind {
				t.Errorf("first change kind = %s, want %s; delta %+v", kind, tc.wantKind, d)
			}
		})
	}
}

func TestGlobCovers(t *testing.T) {
	for _, tc := range []struct {
		b, a string
		want bool
	}{
		{"**", "anything/**", true},
		{"docs/**", "docs/a/**", true},
		{"docs/**", "docs", true},
		{"docs/**", "docsx/**", false},
		{"docs/**", "**", false},
		{"docs/*.md", "docs/a.md", true},
		{"docs/*.md", "docs/a/b.md", false},
		{"docs/a/**", "docs/**", false},
		{"*.md", "docs/*.md", false},
	} {
		if got := GlobCovers(tc.b, tc.a); got != tc.want {
			t.Errorf("GlobCovers(%q, %q) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}

func tools(t *testing.T, body string) *Manifest {
	t.Helper()
	m, err := Parse("m.yaml", []byte("schema_version: 2\nid: com.example.t\nversion: 1.0.0\nentrypoint: bin/t\ntools:\n"+body+"permissions: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDiffTools(t *testing.T) {
	const (
		readNever  = "  - {name: a, effects: {data: read, external_state: none}, approval: never}\n"
		sendNever  = "  - {name: a, effects: {data: send, external_state: none}, approval: never}\n"
		writeNever = "  - {name: a, effects: {data: none, external_state: write}, approval: never}\n"
		writeAsk   = "  - {name: a, effects: {data: none, external_state: write}, approval: per_action}\n"
		other      = "  - {name: b, effects: {data: none, external_state: none}, approval: per_action}\n"
	)
	for _, tc := range []struct {
		name         string
		old, new     string
		consent      bool
		wantKind     string
		reverseAsks  bool
		reverseKinds string
	}{
		{"new tool of any kind", readNever, readNever + other, true, "tool", false, "tool"},
		{"effects read to send", readNever, sendNever, true, "tool.effects", false, "tool.effects"},
		// Neither effect covers the other: both directions widen.
		{"send to external write", sendNever, writeNever, true, "tool.effects", true, "tool.effects"},
		{"approval per_action to never", writeAsk, writeNever, true, "tool.approval", false, "tool.approval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Diff(tools(t, tc.old), tools(t, tc.new))
			if d.NeedsConsent() != tc.consent {
				t.Errorf("Diff NeedsConsent = %v, want %v: %+v", d.NeedsConsent(), tc.consent, d)
			}
			if c := append(d.Added, d.Widened...); len(c) == 0 || c[0].Kind != tc.wantKind || c[0].Item == "" {
				t.Errorf("Diff widening = %+v, want a %s change naming its tool", c, tc.wantKind)
			}
			back := Diff(tools(t, tc.new), tools(t, tc.old))
			if back.NeedsConsent() != tc.reverseAsks {
				t.Errorf("reverse NeedsConsent = %v, want %v: %+v", back.NeedsConsent(), tc.reverseAsks, back)
			}
		})
	}
}

// TestDiffItems: each change names its consent item, on the side the
// change is about.
func TestDiffItems(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string
		want     string // "list kind item" of the only consent-needing change
	}{
		{"added glob names the new glob",
			"  filesystem: {read: [\"workspace://docs/**\"]}\n",
			"  filesystem: {read: [\"workspace://docs/**\", \"workspace://src/**\"]}\n", "added filesystem.read workspace://src/**"},
		{"widened glob names the new glob",
			"  filesystem: {read: [\"workspace://docs/**\"]}\n",
			"  filesystem: {read: [\"workspace://**\"]}\n", "widened filesystem.read workspace://**"},
		{"a dropped deny names the old glob",
			"  filesystem: {deny: [\"workspace://**/.env*\"]}\n",
			"  filesystem: {deny: []}\n", "widened filesystem.deny workspace://**/.env*"},
		{"a narrowed deny names the old glob",
			"  filesystem: {deny: [\"workspace://**/.env*\"]}\n",
			"  filesystem: {deny: [\"workspace://.env\"]}\n", "widened filesystem.deny workspace://**/.env*"},
		{"network names method, origin and path",
			"  network: {requests: [{origin: https://a.example, methods: [POST], paths: [\"/x/{id}\"], approval: per_action}]}\n",
			"  network: {requests: [{origin: https://a.example, methods: [POST], paths: [\"/x/{n}\"]}]}\n", "widened network POST https://a.example:443 /x/{n}"},
		{"secret retarget names the secret",
			"  secrets: [{name: t, purpose: https://a.example, inject_as: brokered_header}]\n",
			"  secrets: [{name: t, purpose: https://b.example, inject_as: brokered_header}]\n", "widened secret.purpose t"},
		{"mode names the new mode",
			"  external_writes: {default: approval_required}\n",
			"  external_writes: {default: allow}\n", "widened external_writes.default allow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DiffPermissions(perms(t, tc.old), perms(t, tc.new))
			var got []string
			for _, c := range d.Added {
				got = append(got, "added "+c.Kind+" "+c.Item)
			}
			for _, c := range d.Widened {
				got = append(got, "widened "+c.Kind+" "+c.Item)
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("consent-needing changes = %q, want [%q]", got, tc.want)
			}
		})
	}
}

// TestDiffModeUnknown: a mode spelling capability.ParseMode rejects never
// passes as a narrowing.
func TestDiffModeUnknown(t *testing.T) {
	old := Permissions{Process: &Process{Spawn: "allow"}}
	new := Permissions{Process: &Process{Spawn: "sometimes"}}
	if d := DiffPermissions(old, new); !d.NeedsConsent() {
		t.Errorf("allow → unknown mode: %+v, want a widening", d)
	}
}
