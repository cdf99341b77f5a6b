package manifest

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the expected messages of testdata/manifests/invalid")

// TestInvalid parses every file in testdata/manifests/invalid and compares
// the messages with the .err file beside it.
func TestInvalid(t *testing.T) {
	files, _ := filepath.Glob("testdata/manifests/invalid/*.yaml")
	if len(files) < 40 {
		t.Fatalf("only %d invalid cases", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Parse(filepath.Base(f), data)
			if err == nil {
				t.Fatalf("Parse(%s) succeeded, want an error", f)
			}
			if _, ok := err.(Errors); !ok {
				t.Fatalf("Parse error is %T, want Errors", err)
			}
			got := err.Error() + "\n"
			want := strings.TrimSuffix(f, ".yaml") + ".err"
			if *update {
				os.WriteFile(want, []byte(got), 0o644)
				return
			}
			w, err := os.ReadFile(want)
			if err != nil {
				t.Fatalf("missing expected messages (run go test -update): %v", err)
			}
			if got != string(w) {
				t.Errorf("Parse(%s) messages:\n got  %s\n want %s", f, got, w)
			}
			for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
				if !strings.HasPrefix(line, filepath.Base(f)+":") {
					t.Errorf("message %q does not start with the file name", line)
				}
			}
		})
	}
}

func TestValid(t *testing.T) {
	files, _ := filepath.Glob("testdata/manifests/valid/*.yaml")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			m, err := ParseFile(f)
			if err != nil {
				t.Fatalf("ParseFile(%s): %v", f, err)
			}
			if !strings.HasPrefix(m.Digest(), "sha256:") || len(m.Digest()) != 71 {
				t.Errorf("Digest() = %q", m.Digest())
			}
			for _, tl := range m.Tools {
				if tl.Effects == nil || tl.Approval == "" || tl.Risk != "" {
					t.Errorf("tool %s not normalized: %+v", tl.Name, tl)
				}
			}
		})
	}
}

func TestNormalization(t *testing.T) {
	m, err := ParseFile("testdata/manifests/valid/shorthand-idna.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := m.Permissions.Network.Requests[0]
	if r.Origin != "https://xn--bcher-kva.example:443" {
		t.Errorf("origin = %q", r.Origin)
	}
	if strings.Join(r.Methods, ",") != "GET,POST" {
		t.Errorf("methods = %v", r.Methods)
	}
	if got := strings.Join(m.Permissions.Filesystem.Write, ","); got != "workspace://out/**,workspace://tmp/*.json" {
		t.Errorf("write = %s", got)
	}
	if got := m.Permissions.Filesystem.Deny; len(got) != 1 {
		t.Errorf("deny not de-duplicated: %v", got)
	}
	push, _ := m.Tool("push")
	if *push.Effects != (Effects{Data: "send", ExternalState: "write"}) || push.Approval != "per_action" {
		t.Errorf("push = %+v %+v; want risk external_write expanded and approval per_action by default", push, push.Effects)
	}
	if m.Tools[0].Name != "pull" {
		t.Errorf("tools not sorted: %s first", m.Tools[0].Name)
	}
}

// TestDigestStable: reordering lists and re-spelling origins changes nothing;
// changing a permission changes the digest.
func TestDigestStable(t *testing.T) {
	a := mustParse(t, "testdata/manifests/valid/issue-helper.yaml")
	data, _ := os.ReadFile("testdata/manifests/valid/issue-helper.yaml")
	re := strings.NewReplacer(
		"deny:  [workspace://**/.env*, workspace://**/.git/**]", "deny:  [workspace://**/.git/**, workspace://**/.env*]",
		"origin: https://api.example.invalid\n        methods: [GET]", "origin: HTTPS://API.example.invalid:443\n        methods: [GET]",
		"scopes: [issues:read, comments:write]", "scopes: [comments:write, issues:read]",
	)
	reordered := re.Replace(string(data))
	if reordered == string(data) {
		t.Fatal("replacements did not apply")
	}
	b, err := Parse("b.yaml", []byte(reordered))
	if err != nil {
		t.Fatal(err)
	}
	if a.Digest() != b.Digest() {
		t.Errorf("digest changed by reordering: %s vs %s", a.Digest(), b.Digest())
	}
	c, err := Parse("c.yaml", []byte(strings.Replace(string(data), "workspace://docs/**", "workspace://docs/a/**", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if a.Digest() == c.Digest() {
		t.Error("digest did not change with the permissions")
	}
}

func mustParse(t testing.TB, f string) *Manifest {
	t.Helper()
	m, err := ParseFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLimits(t *testing.T) {
	big := make([]byte, MaxFileSize+1)
	for i := range big {
		big[i] = '#'
	}
	if _, err := Parse("big.yaml", big); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("oversized file: %v", err)
	}
	data, _ := os.ReadFile("testdata/manifests/invalid/billion-laughs.yaml")
	start := time.Now()
	_, err := Parse("laughs.yaml", data)
	if err == nil || !strings.Contains(err.Error(), "alias") {
		t.Fatalf("billion laughs: %v", err)
	}
	// Not a timing assertion of speed, a guard against expansion: the whole
	// expansion would be 9^9 nodes.
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("billion laughs took %v", d)
	}
}

func TestLayer(t *testing.T) {
	l, err := ParseLayer("ws.yaml", []byte(`schema_version: 2
kind: workspace
permissions:
  filesystem:
    write: []
    deny: ["workspace://secrets/**"]
  network:
    allow_private: [127.0.0.1, 10.1.2.3/8]
  external_writes: {default: deny}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.Permissions.Network.AllowPrivate, ","); got != "10.0.0.0/8,127.0.0.1/32" {
		t.Errorf("allow_private = %s", got)
	}
	if l.Permissions.Filesystem.Write == nil || len(l.Permissions.Filesystem.Write) != 0 {
		t.Errorf("write: [] must stay present and empty (no writes), got %#v", l.Permissions.Filesystem.Write)
	}
	out, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	l2, err := ParseLayer("again.yaml", out)
	if err != nil {
		t.Fatalf("Marshal output does not parse: %v\n%s", err, out)
	}
	if l2.Digest() != l.Digest() {
		t.Errorf("round trip changed the layer:\n%s", out)
	}

	for name, src := range map[string]string{
		"grant with allow_private": "schema_version: 2\nkind: grant\npermissions:\n  network:\n    allow_private: [10.0.0.0/8]\n",
		"bad kind":                 "schema_version: 2\nkind: user\n",
		"bad cidr":                 "schema_version: 2\nkind: run\npermissions:\n  network:\n    allow_private: [10.0.0.0/33]\n",
		"unknown field":            "schema_version: 2\nkind: run\npermisions: {}\n",
	} {
		if _, err := ParseLayer(name, []byte(src)); err == nil {
			t.Errorf("%s: ParseLayer succeeded", name)
		}
	}
}

func TestParseTemplate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		segs int
		ok   bool
	}{
		{"/", 0, true},
		{"/repos/{owner}/issues/{number}", 4, true},
		{"/a/{b}c", 0, false},
		{"/a/{b}/{b}", 0, false},
		{"/a//b", 0, false},
		{"/a/./b", 0, false},
		{"a", 0, false},
		{"/a/*", 0, false},
		{"/a/{}", 0, false},
	} {
		segs, err := ParseTemplate(tc.in)
		if (err == nil) != tc.ok || (tc.ok && len(segs) != tc.segs) {
			t.Errorf("ParseTemplate(%q) = %v, %v; want ok=%v segs=%d", tc.in, segs, err, tc.ok, tc.segs)
		}
	}
}
