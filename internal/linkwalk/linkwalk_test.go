package linkwalk

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestResolve(t *testing.T) {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j := func(p string) string { return filepath.Join(d, p) }
	for _, m := range []string{"cfg", "x/y"} {
		if err := os.MkdirAll(j(m), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(j("file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"link": "cfg", "chain": "link", "abs": j("x"), "up": "x/y/../../cfg",
		"dangling": "gone", "deep": "gone/sub", "loop": "loop"} {
		if err := os.Symlink(target, j(name)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		path           string
		links          []string
		final, missing string
		last           bool
		err            bool
	}{
		{path: j("cfg"), final: j("cfg")},
		{path: j("link"), links: []string{j("link")}, final: j("cfg")},
		{path: j("chain/sub"), links: []string{j("chain"), j("link")}, missing: j("cfg/sub"), last: true},
		{path: j("abs/y"), links: []string{j("abs")}, final: j("x/y")},
		{path: j("up"), links: []string{j("up")}, final: j("cfg")},
		{path: j("dangling"), links: []string{j("dangling")}, missing: j("gone"), last: true},
		{path: j("deep"), links: []string{j("deep")}, missing: j("gone"), last: false},
		{path: j("missing/hooks"), missing: j("missing"), last: false},
		{path: j("file/hooks")},
		{path: j("loop"), err: true},
		{path: "relative", err: true},
	}
	for _, tc := range tests {
		w, err := Resolve(tc.path)
		if (err != nil) != tc.err {
			t.Errorf("Resolve(%s) error = %v, want error %v", tc.path, err, tc.err)
			continue
		}
		if tc.err {
			continue
		}
		if !slices.Equal(w.Links, tc.links) || w.Final != tc.final || w.Missing != tc.missing || w.Last != tc.last {
			t.Errorf("Resolve(%s) = %+v, want links %q final %q missing %q last %v", tc.path, w, tc.links, tc.final, tc.missing, tc.last)
		}
	}
}
