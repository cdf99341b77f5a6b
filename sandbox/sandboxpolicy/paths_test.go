package sandboxpolicy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
)

const manifestHead = `schema_version: 2
id: com.norma.sandboxpolicy-test
version: 1.0.0
entrypoint: bin/x
tools:
  - name: t
    effects: {data: read, external_state: none}
    approval: never
permissions:
  filesystem:
`

// The workspace every case derives from (relative paths; "/" ends a
// directory).
var tree = []string{"docs/a.md", "docs/.env", "docs/api/b.md", "src/main.go", "src/.env.local", "secret/key", ".env"}

func TestDerive(t *testing.T) {
	tests := []struct {
		name                      string
		fs                        string // the manifest's filesystem block
		readOnly, readWrite, deny []string
		pin                       []string
		created                   []string    // directories Derive must create
		root                      bool        // propose the workspace root too, as tools/shell does
		extra                     []string    // files besides tree
		protected                 []string    // directories hidden by identity
		links                     [][2]string // hard links: new name, existing file
	}{{
		name:     "literal prefixes, deny hidden",
		fs:       "    read: [workspace://docs/**]\n    write: [workspace://out/**]\n    deny: [workspace://**/.env*]\n",
		readOnly: []string{"docs"}, readWrite: []string{"out"}, deny: []string{"docs/.env"},
		created: []string{"out"},
	}, {
		// ** has no literal prefix: the root is granted only when proposed.
		name:     "workspace root proposed",
		fs:       "    read: [workspace://**]\n    write: [workspace://src/**]\n    deny: [workspace://**/.env*, workspace://secret/**]\n",
		root:     true,
		readOnly: []string{"."}, readWrite: []string{"src"},
		deny: []string{".env", "docs/.env", "secret", "src/.env.local"},
	}, {
		// Read-write root: every directory between the root and a hidden
		// path, or the existing prefix of a deny glob, keeps its name.
		name: "pins",
		fs: "    read: [workspace://**]\n    write: [workspace://**]\n" +
			"    deny: [workspace://**/.env*, 'workspace://docs/api/keys/*.pem', workspace://.norma/policy.yaml," +
			" workspace://.norma/settings.local.yaml, workspace://.local/state/norma/**, workspace://gone/x/**]\n",
		root:      true,
		extra:     []string{".norma/policy.yaml", ".norma/memory/m.md", ".local/state/norma/secrets/key", "docs/api/keys/k.pem"},
		readWrite: []string{"."},
		deny:      []string{".env", ".local/state/norma", ".norma/policy.yaml", "docs/.env", "docs/api/keys/k.pem", "src/.env.local"},
		pin:       []string{".local", ".local/state", ".norma", "docs", "docs/api", "docs/api/keys", "src"},
	}, {
		// A protected directory is hidden by identity under any name (here
		// one no deny rule matches), and its parents are pinned.
		name:      "protected by identity",
		fs:        "    read: [workspace://**]\n    write: [workspace://**]\n",
		root:      true,
		extra:     []string{"home/renamed-state/secrets/key"},
		protected: []string{"home/renamed-state", "missing"},
		readWrite: []string{"."},
		deny:      []string{"home/renamed-state"},
		pin:       []string{"home"},
	}, {
		// A hard link to a denied file, made before the deny rule, is
		// hidden under its allowed name too (the sandbox then refuses
		// the spec: it cannot hide a file with several names); other hard
		// links stay.
		name:      "hard links of a denied file",
		fs:        "    read: [workspace://**]\n    write: [workspace://**]\n    deny: [workspace://secret/**]\n",
		root:      true,
		links:     [][2]string{{"docs/key-link", "secret/key"}, {"src/main-link.go", "src/main.go"}},
		readWrite: []string{"."},
		deny:      []string{"docs/key-link", "secret"},
		pin:       []string{"docs"},
	}, {
		name:      "write covers read",
		fs:        "    read: [workspace://docs/api/**]\n    write: [workspace://docs/**]\n",
		readWrite: []string{"docs"},
	}, {
		// A glob without a literal prefix cannot be a bind: nothing is granted.
		name: "no literal prefix",
		fs:   "    read: [workspace://**, 'workspace://**/*.md']\n",
	}, {
		// A read candidate that does not exist is left out, not created.
		name: "missing read directory",
		fs:   "    read: [workspace://missing/**]\n",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			for _, f := range slices.Concat(tree, tc.extra) {
				p := filepath.Join(ws, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, l := range tc.links {
				if err := os.Link(filepath.Join(ws, l[1]), filepath.Join(ws, l[0])); err != nil {
					t.Fatal(err)
				}
			}
			m, err := manifest.Parse("manifest.yaml", []byte(manifestHead+tc.fs))
			if err != nil {
				t.Fatalf("manifest.Parse: %v", err)
			}
			set, err := policy.Compile(policy.Inputs{Manifest: m, Host: policy.Host{Sandbox: true}})
			if err != nil {
				t.Fatalf("policy.Compile: %v", err)
			}
			layers := []manifest.Permissions{m.Permissions}
			if tc.root {
				layers = append(layers, manifest.Permissions{Filesystem: &manifest.Filesystem{
					Read: []string{manifest.WorkspaceScheme + "."}, Write: []string{manifest.WorkspaceScheme + "."}}})
			}
			abs := func(rel []string) []string {
				var out []string
				for _, r := range rel {
					out = append(out, filepath.Join(ws, r))
				}
				return out
			}
			prot, err := Protect(abs(tc.protected)...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Derive(t.Context(), ws, set, prot, layers...)
			if err != nil {
				t.Fatalf("Derive: %v", err)
			}
			// A bind nested in another is walked twice: its entries may repeat.
			slices.Sort(got.Deny)
			got.Deny = slices.Compact(got.Deny)
			for _, c := range []struct {
				field     string
				got, want []string
			}{{"ReadOnly", got.ReadOnly, abs(tc.readOnly)}, {"ReadWrite", got.ReadWrite, abs(tc.readWrite)}, {"Deny", got.Deny, abs(tc.deny)},
				{"Pin", got.Pin, abs(tc.pin)}} {
				if !slices.Equal(c.got, c.want) {
					t.Errorf("Derive(%q).%s:\n\tgot  %q\n\twant %q", tc.fs, c.field, c.got, c.want)
				}
			}
			for _, d := range abs(tc.created) {
				if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
					t.Errorf("Derive(%q) did not create %s", tc.fs, d)
				}
			}
			if _, err := os.Stat(filepath.Join(ws, "missing")); err == nil {
				t.Errorf("Derive(%q) created a read directory", tc.fs)
			}
		})
	}
}

func TestLiteralDir(t *testing.T) {
	tests := []struct{ in, want string }{
		{"docs/**", "docs"},
		{"docs/*.md", "docs"},
		{"a/b.md", "a/b.md"},
		{"**/x", ""},
		{".", "."},
		{"a/b/[xy]/c", "a/b"},
	}
	for _, tc := range tests {
		if got := literalDir(tc.in); got != tc.want {
			t.Errorf("literalDir(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
