package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPluginUnsignedReplaceCLI: `plugin update --dev` with an unsigned
// package over a signed plugin is refused even when nothing widens, and
// names the flag; with --allow-unsigned-replace it applies.
func TestPluginUnsignedReplaceCLI(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	key := filepath.Join(work, "dev")
	mustNorma(t, "plugin", "keygen", "--out", key)
	mustNorma(t, "--home", home, "plugin", "trust", "add", key+".pub", "--publisher", "Example", "--prefix", "com.example")
	grant := filepath.Join(work, "grant.yaml")
	os.WriteFile(grant, []byte("schema_version: 2\nkind: grant\npermissions: {}\n"), 0o644)
	mustNorma(t, "--home", home, "plugin", "install", echoPkg(t, echoManifest("1.0.0", "", "  {}\n"), "", key), "--yes", "--grant", grant)

	unsigned := echoPkg(t, echoManifest("1.1.0", "", "  {}\n"), "", "")
	code, out, errs := norma(t, "--home", home, "plugin", "update", "--dev", unsigned)
	if code != 1 || !strings.Contains(errs, "PLUGIN_UNSIGNED") || !strings.Contains(errs, "--allow-unsigned-replace") {
		t.Fatalf("unsigned update over a signed plugin: exit %d, want 1 and a refusal naming the flag\n%s%s", code, out, errs)
	}
	if out := mustNorma(t, "--home", home, "plugin", "list"); !strings.Contains(out, "com.example.echo 1.0.0") {
		t.Errorf("list after the refused update:\n%s", out)
	}
	mustNorma(t, "--home", home, "plugin", "update", "--dev", "--allow-unsigned-replace", unsigned)
	if out := mustNorma(t, "--home", home, "plugin", "list"); !strings.Contains(out, "com.example.echo 1.1.0") {
		t.Errorf("list after --allow-unsigned-replace:\n%s", out)
	}
}
