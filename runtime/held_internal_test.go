package runtime

import (
	"testing"

	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/settings"
)

// checkHeld checks the version in force while a change is held, by the
// same engine that held it: from the accepted version it only narrows
// (nothing waits in it that the user did not accept), and from it to the
// held version nothing narrows (every narrowing of the held version is
// in force). Every narrowing of the table's changes is of a kind that
// applies now: appliedKinds misses none the engine produces here.
func checkHeld(t *testing.T, d, fromAccepted, toHeld manifest.Delta) {
	t.Helper()
	for _, c := range append(d.Removed, d.Narrowed...) {
		if !appliesNow(c) {
			t.Errorf("narrowing %v is of a kind that does not apply now", c)
		}
	}
	if fromAccepted.NeedsConsent() {
		t.Errorf("the version in force widens the accepted one: %+v", fromAccepted)
	}
	if len(toHeld.Removed)+len(toHeld.Narrowed) > 0 {
		t.Errorf("the held version still narrows the version in force: %+v", toHeld)
	}
	if d.NeedsConsent() != toHeld.NeedsConsent() {
		t.Errorf("what waits: held %v, from the version in force %v", d.NeedsConsent(), toHeld.NeedsConsent())
	}
}

func TestHeldSettingsComposition(t *testing.T) {
	parse := func(t *testing.T, body string) *settings.File {
		t.Helper()
		if body == "none" {
			return nil
		}
		f, err := settings.Parse("/ws/.norma/settings.yaml", []byte(body), settings.ScopeWorkspace, "/ws")
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	net := func(rules string) string { return "network:\n  requests:\n" + rules }
	for _, tc := range []struct{ name, old, new string }{
		{"allow and deny at first sight", "none", "permissions: {allow: [\"Bash(git status:*)\"], deny: [\"Read(./secrets/**)\"]}\n"},
		{"ask at first sight", "none", "permissions: {allow: [Bash], ask: [\"Read(./secrets/**)\"]}\n"},
		{"an allow replaced, a deny added", "permissions: {allow: [Read, \"Write(tmp/**)\"]}\n",
			"permissions: {allow: [Read, \"Write(docs/**)\"], deny: [\"Read(.env)\"]}\n"},
		{"a deny dropped, an allow dropped", "permissions: {allow: [Read, Write], deny: [\"Read(a)\"]}\n", "permissions: {allow: [Read]}\n"},
		{"a lower mode and a hook", "permissions: {defaultMode: acceptEdits}\n",
			"permissions: {defaultMode: plan}\nhooks: {PreToolUse: [{hooks: [{type: command, command: ./.norma/hooks/h}]}]}\n"},
		{"a higher mode and a deny", "permissions: {defaultMode: plan}\n", "permissions: {defaultMode: acceptEdits, deny: [Bash]}\n"},
		{"directories and env", "permissions: {additionalDirectories: [/srv, /opt]}\nenv: {A: \"1\", B: \"2\"}\n",
			"permissions: {additionalDirectories: [/opt, /var]}\nenv: {A: \"3\"}\n"},
		{"network requests", net("    - {origin: \"https://a.example\", methods: [GET, POST], paths: [\"/a\", \"/b/{x}\"]}\n  allow_private: [\"10.0.0.0/8\", \"127.0.0.1/32\"]\n"),
			net("    - {origin: \"https://a.example\", methods: [GET], paths: [\"/a\"]}\n    - {origin: \"https://a.example\", methods: [POST], paths: [\"/b/{y}\"], approval: per_action}\n    - {origin: \"https://c.example\", methods: [GET], paths: [\"/\"]}\n  allow_private: [\"127.0.0.1/32\", \"192.168.0.0/16\"]\n")},
		{"the file removed", "permissions: {allow: [Read], deny: [Bash]}\n", "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := parse(t, tc.old), parse(t, tc.new)
			d := SettingsDelta(old, cur)
			eff := heldSettings(old, cur, d)
			checkHeld(t, d, SettingsDelta(old, eff), SettingsDelta(eff, cur))
		})
	}
}

func TestHeldLayerComposition(t *testing.T) {
	parse := func(t *testing.T, body string) *manifest.Layer {
		t.Helper()
		if body == "none" {
			return nil
		}
		l, err := manifest.ParseLayer("policy.yaml", []byte("schema_version: 2\nkind: workspace\n"+body))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	const secret = "{name: tok, purpose: \"https://a.example\", scopes: [read, write], inject_as: brokered_header}"
	for _, tc := range []struct{ name, old, new string }{
		{"a deny glob and a private range at first sight", "none",
			"permissions:\n  filesystem: {deny: [\"workspace://secrets/**\"]}\n  network: {allow_private: [\"127.0.0.1/32\"]}\n"},
		{"read and write ceilings at first sight", "none",
			"permissions:\n  filesystem: {read: [\"workspace://docs/**\", \"workspace://src/**\"], write: []}\n  process: {spawn: allow}\n"},
		{"a read ceiling narrowed and widened", "permissions:\n  filesystem: {read: [\"workspace://docs/**\", \"workspace://src/**\"]}\n",
			"permissions:\n  filesystem: {read: [\"workspace://docs/a/**\", \"workspace://docs/b.md\", \"workspace://lib/**\"]}\n"},
		{"a deny glob grown and one dropped", "permissions:\n  filesystem: {deny: [\"workspace://a/x/**\", \"workspace://b/**\"]}\n",
			"permissions:\n  filesystem: {deny: [\"workspace://a/**\"]}\n"},
		{"network bounded at first sight", "none",
			"permissions:\n  network:\n    requests: [{origin: \"https://a.example\", methods: [GET], paths: [\"/a\"]}]\n    allow_private: [\"127.0.0.1/32\"]\n"},
		{"network requests", "permissions:\n  network:\n    requests: [{origin: \"https://a.example\", methods: [GET, POST], paths: [\"/a\", \"/b\"]}]\n    allow_private: [\"10.0.0.0/8\"]\n",
			"permissions:\n  network:\n    requests:\n      - {origin: \"https://a.example\", methods: [GET], paths: [\"/a\"]}\n      - {origin: \"https://a.example\", methods: [POST], paths: [\"/b\"], approval: per_action}\n      - {origin: \"https://c.example\", methods: [GET], paths: [\"/\"]}\n"},
		{"network requests all gone", "permissions:\n  network:\n    requests: [{origin: \"https://a.example\", methods: [GET], paths: [\"/a\"]}]\n",
			"permissions:\n  network:\n    requests: []\n"},
		{"secrets bounded", "none", "permissions:\n  secrets: [" + secret + "]\n"},
		{"a secret and a scope", "permissions:\n  secrets: [" + secret + ", {name: b, purpose: \"https://b.example\", inject_as: brokered_header}]\n",
			"permissions:\n  secrets: [{name: tok, purpose: \"https://a.example\", scopes: [read, admin], inject_as: brokered_header}]\n"},
		{"modes", "permissions:\n  process: {spawn: allow}\n  external_writes: {default: approval_required}\n",
			"permissions:\n  process: {spawn: deny}\n  external_writes: {default: allow}\n"},
		{"modes the other way", "permissions:\n  process: {spawn: deny}\n  external_writes: {default: allow}\n",
			"permissions:\n  process: {spawn: approval_required}\n  external_writes: {default: deny}\n"},
		{"the policy removed", "permissions:\n  filesystem: {deny: [\"workspace://a/**\"]}\n", "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := parse(t, tc.old), parse(t, tc.new)
			d := manifest.DiffCeiling(old, cur)
			eff := heldLayer(old, cur, d)
			if eff != nil && eff != old {
				// What Open applies is the rendering, parsed again.
				data, err := eff.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				if eff, err = manifest.ParseLayer("held.yaml", data); err != nil {
					t.Fatalf("the version in force does not parse: %v\n%s", err, data)
				}
			}
			checkHeld(t, d, manifest.DiffCeiling(old, eff), manifest.DiffCeiling(eff, cur))
		})
	}
}
