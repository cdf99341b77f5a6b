package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A manifest saved by a Windows editor starts with a byte order mark; it
// lints like the same file without one. A schema_version that only equals 2
// (2.0, 0x2) is refused with the field and its position.
func TestDoorManifestInput(t *testing.T) {
	data, err := os.ReadFile(helperManifest)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bom := write("bom.yaml", append([]byte("\ufeff"), data...))
	if code, out, errs := door(t, "manifest", "lint", bom); code != 0 || !strings.Contains(out, ": ok") {
		t.Errorf("lint with BOM: exit %d\n%s%s", code, out, errs)
	}
	for _, tc := range []struct{ value, want string }{
		{"2.0", ":1:17: schema_version: must be the integer 2, written as 2"},
		{"0x2", `:1:17: schema_version: write integers in plain decimal (found "0x2")`},
		{"0o2", `:1:17: schema_version: write integers in plain decimal (found "0o2")`},
	} {
		b := bytes.Replace(data, []byte("schema_version: 2\n"), []byte("schema_version: "+tc.value+"\n"), 1)
		p := write("v"+tc.value+".yaml", b)
		code, _, errs := door(t, "manifest", "lint", p)
		if code != exitFailed || strings.TrimSpace(errs) != p+tc.want {
			t.Errorf("lint schema_version %s: exit %d\n got  %s\n want %s", tc.value, code, errs, p+tc.want)
		}
	}
}
