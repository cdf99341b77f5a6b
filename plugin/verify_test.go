package plugin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/norma-run/norma/capability"
)

// rewriteEnvelope applies f to the envelope of the package in dir.
func rewriteEnvelope(t testing.TB, dir string, f func(*Envelope)) {
	t.Helper()
	p := filepath.Join(dir, SignatureName)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var env Envelope
	if err := json.Unmarshal(data, &env); err != nil {
		t.Fatal(err)
	}
	f(&env)
	out, _ := json.Marshal(env)
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func flipByte(t testing.TB, p string, at int) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if at < 0 {
		at += len(data)
	}
	data[at] ^= 0x01
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func replaceIn(t testing.TB, p, old, new string) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	out := []byte(stringsReplaceOnce(s, old, new))
	if string(out) == s {
		t.Fatalf("replaceIn(%s): %q not found", p, old)
	}
	os.WriteFile(p, out, 0o644)
}

// tamperCases change a signed issue-helper 1.4.0 package in one way each.
var tamperCases = []struct {
	name   string
	tamper func(t testing.TB, dir string)
	code   capability.Reason
	msg    string
}{
	{"one byte of a file", func(t testing.TB, dir string) { flipByte(t, filepath.Join(dir, "lib", "templates.txt"), 3) },
		capability.ReasonPluginFileModified, "verify lib/templates.txt: content differs"},
	{"one byte of the entrypoint", func(t testing.TB, dir string) { flipByte(t, filepath.Join(dir, "bin", "issue-helper"), -2) },
		capability.ReasonPluginFileModified, "bin/issue-helper"},
	{"one byte of the manifest (permission)", func(t testing.TB, dir string) {
		replaceIn(t, filepath.Join(dir, "manifest.yaml"), "workspace://docs/**", "workspace://doce/**")
	}, capability.ReasonPluginManifestMismatch, "manifest differs from the signed manifest"},
	{"one byte of the manifest (comment)", func(t testing.TB, dir string) {
		f, _ := os.OpenFile(filepath.Join(dir, "manifest.yaml"), os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString("#\n")
		f.Close()
	}, capability.ReasonPluginFileModified, "manifest.yaml"},
	{"one byte of the signature", func(t testing.TB, dir string) {
		rewriteEnvelope(t, dir, func(e *Envelope) { e.Signatures[0].Sig[10] ^= 1 })
	}, capability.ReasonPluginSignatureInvalid, "does not verify over the statement"},
	{"one byte of the statement", func(t testing.TB, dir string) {
		rewriteEnvelope(t, dir, func(e *Envelope) {
			e.Payload = []byte(stringsReplaceOnce(string(e.Payload), `"version":"1.4.0"`, `"version":"1.4.1"`))
		})
	}, capability.ReasonPluginSignatureInvalid, "does not verify over the statement"},
	{"envelope not JSON", func(t testing.TB, dir string) { os.WriteFile(filepath.Join(dir, SignatureName), []byte("{"), 0o644) },
		capability.ReasonPluginEnvelopeInvalid, "malformed envelope"},
	{"signature removed", func(t testing.TB, dir string) { os.Remove(filepath.Join(dir, SignatureName)) },
		capability.ReasonPluginUnsigned, "not signed"},
	{"file added", func(t testing.TB, dir string) {
		os.WriteFile(filepath.Join(dir, "lib", "extra.sh"), []byte("curl evil\n"), 0o755)
	},
		capability.ReasonPluginFileUnexpected, "lib/extra.sh"},
	{"file removed", func(t testing.TB, dir string) { os.Remove(filepath.Join(dir, "README.md")) },
		capability.ReasonPluginFileMissing, "README.md"},
	{"file renamed", func(t testing.TB, dir string) {
		os.Rename(filepath.Join(dir, "lib", "templates.txt"), filepath.Join(dir, "lib", "templates.old"))
	}, capability.ReasonPluginFileRenamed, "lib/templates.txt was renamed to lib/templates.old"},
	{"mode changed", func(t testing.TB, dir string) { os.Chmod(filepath.Join(dir, "README.md"), 0o755) },
		capability.ReasonPluginFileMode, "README.md (0755, signed 0644)"},
	{"symlink swapped in", func(t testing.TB, dir string) {
		os.Remove(filepath.Join(dir, "README.md"))
		os.Symlink("/etc/passwd", filepath.Join(dir, "README.md"))
	}, capability.ReasonPluginLink, "symbolic link refused"},
	{"mix-and-match manifest", func(t testing.TB, dir string) {
		data, _ := os.ReadFile(filepath.Join("testdata", "issue-helper-1.5.0", "manifest.yaml"))
		os.WriteFile(filepath.Join(dir, "manifest.yaml"), data, 0o644)
	}, capability.ReasonPluginManifestMismatch, "manifest declares com.example.issue-helper@1.5.0 but the signed statement is for com.example.issue-helper@1.4.0"},
	{"mix-and-match signature", func(t testing.TB, dir string) {
		// The signature of a genuine 1.5.0 package on 1.4.0 files.
		other := signedFixture(t, "issue-helper-1.5.0", testKey(1))
		data, _ := os.ReadFile(filepath.Join(other, SignatureName))
		os.WriteFile(filepath.Join(dir, SignatureName), data, 0o644)
	}, capability.ReasonPluginManifestMismatch, "signed statement is for com.example.issue-helper@1.5.0"},
}

func TestVerifyTamper(t *testing.T) {
	key := testKey(1)
	for _, tt := range tamperCases {
		t.Run(tt.name, func(t *testing.T) {
			dir := signedFixture(t, "issue-helper-1.4.0", key)
			// Negative control: the untouched package verifies.
			if _, err := Verify(t.Context(), dir, &VerifyOptions{PublicKey: pub(key)}); err != nil {
				t.Fatalf("Verify(untouched) = %v", err)
			}
			tt.tamper(t, dir)
			_, err := Verify(t.Context(), dir, &VerifyOptions{PublicKey: pub(key)})
			wantCode(t, "Verify", err, tt.code, tt.msg)
		})
	}
}

func TestVerifyArchiveTamperThroughStage(t *testing.T) {
	// The same tampering, delivered as an archive: staged, then verified;
	// nothing is written outside the staging directory.
	key := testKey(1)
	for _, tt := range tamperCases {
		if tt.name == "symlink swapped in" {
			continue // covered by TestUnpackRefuses ("symlink entry")
		}
		t.Run(tt.name, func(t *testing.T) {
			dir := signedFixture(t, "issue-helper-1.4.0", key)
			tt.tamper(t, dir)
			archive := packTo(t, dir)
			base := t.TempDir()
			staging := filepath.Join(base, "staging")
			tree, err := Stage(t.Context(), archive, staging, nil)
			if err == nil {
				_, err = Verify(t.Context(), staging, &VerifyOptions{PublicKey: pub(key), Tree: tree})
			}
			wantCode(t, "Stage+Verify", err, tt.code, tt.msg)
			for _, p := range snapshot(t, base) {
				if p != "./" && p != "staging/" && !startsWith(p, "staging/") {
					t.Fatalf("wrote %q outside the staging directory", p)
				}
			}
		})
	}
}

func TestVerifyGood(t *testing.T) {
	key := testKey(1)
	dir := signedFixture(t, "issue-helper-1.4.0", key)
	v, err := Verify(t.Context(), dir, &VerifyOptions{PublicKey: pub(key)})
	if err != nil {
		t.Fatal(err)
	}
	if v.Statement.ID != "com.example.issue-helper" || v.Statement.Version != "1.4.0" || v.Signer != KeyID(pub(key)) {
		t.Fatalf("Verify = %+v", v.Statement)
	}
	if v.Statement.ManifestDigest != v.Manifest.Digest() || !v.Statement.SignedAt.Equal(fixedNow()) {
		t.Fatalf("statement digest %s time %v", v.Statement.ManifestDigest, v.Statement.SignedAt)
	}
	// Archive form of the same package verifies to the same root.
	staging := filepath.Join(t.TempDir(), "s")
	tree, err := Stage(t.Context(), packTo(t, dir), staging, nil)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := Verify(t.Context(), staging, &VerifyOptions{PublicKey: pub(key), Tree: tree})
	if err != nil {
		t.Fatal(err)
	}
	if v2.Statement.MerkleRoot != v.Statement.MerkleRoot {
		t.Fatal("archive and directory roots differ")
	}
	// Wrong key.
	_, err = Verify(t.Context(), dir, &VerifyOptions{PublicKey: pub(testKey(2))})
	wantCode(t, "Verify(other key)", err, capability.ReasonPluginKeyUntrusted, "not signed by the given key")
	// Nothing to verify against fails closed.
	_, err = Verify(t.Context(), dir, &VerifyOptions{})
	wantCode(t, "Verify(no key)", err, capability.ReasonPluginKeyUntrusted, "nothing to verify against")
}

func TestSignRefusesBadEntrypoint(t *testing.T) {
	dir := copyFixture(t, "issue-helper-1.4.0")
	os.Chmod(filepath.Join(dir, "bin", "issue-helper"), 0o644)
	_, err := Sign(t.Context(), dir, testKey(1), nil)
	wantCode(t, "Sign(non-executable entrypoint)", err, capability.ReasonPluginManifestInvalid, "not executable")
	os.Remove(filepath.Join(dir, "bin", "issue-helper"))
	_, err = Sign(t.Context(), dir, testKey(1), nil)
	wantCode(t, "Sign(no entrypoint)", err, capability.ReasonPluginManifestInvalid, "not a file of the package")
}

func TestKeyFiles(t *testing.T) {
	_, priv, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "publisher")
	if err := WriteKeyPair(name, priv); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(name + ".key")
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %#o, want 0600", info.Mode().Perm())
	}
	k, err := LoadPrivateKey(name + ".key")
	if err != nil || !k.Equal(priv) {
		t.Fatalf("LoadPrivateKey = %v", err)
	}
	p, err := LoadPublicKey(name + ".pub")
	if err != nil || !p.Equal(priv.Public()) {
		t.Fatalf("LoadPublicKey = %v", err)
	}
	if err := WriteKeyPair(name, priv); err == nil {
		t.Fatal("WriteKeyPair overwrote an existing key")
	}
	os.Chmod(name+".key", 0o644)
	_, err = LoadPrivateKey(name + ".key")
	wantCode(t, "LoadPrivateKey(0644)", err, capability.ReasonPluginKeyInvalid, "want 0600")
	_, err = LoadPublicKey(name + ".key")
	wantCode(t, "LoadPublicKey(private)", err, capability.ReasonPluginKeyInvalid, "")
}

func TestTrustStore(t *testing.T) {
	ctx := t.Context()
	oldKey, newKey, other := testKey(1), testKey(2), testKey(3)
	ts, err := OpenTrustStore(filepath.Join(t.TempDir(), "trust"))
	if err != nil {
		t.Fatal(err)
	}
	dir := signedFixture(t, "issue-helper-1.4.0", oldKey)

	_, err = Verify(ctx, dir, &VerifyOptions{Trust: ts})
	wantCode(t, "Verify(empty store)", err, capability.ReasonPluginKeyUntrusted, "not in the trust store")

	if _, err := ts.Add(pub(oldKey), "Example Corp", []string{"org.other"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	_, err = Verify(ctx, dir, &VerifyOptions{Trust: ts})
	wantCode(t, "Verify(key for other prefix)", err, capability.ReasonPluginKeyScope, "trusted only for org.other")

	if _, err := ts.Add(pub(oldKey), "Example Corp", []string{"com.example"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	v, err := Verify(ctx, dir, &VerifyOptions{Trust: ts})
	if err != nil {
		t.Fatal(err)
	}
	if v.Publisher != "Example Corp" {
		t.Fatalf("Publisher = %q", v.Publisher)
	}
	if err := ts.Record(v.Statement.ID, v.Statement.Key, v.Statement.Version, v.Statement.MerkleRoot); err != nil {
		t.Fatal(err)
	}

	// Rotation without a co-signature is refused even if the new key is
	// itself trusted for the prefix.
	ts.Add(pub(newKey), "Example Corp", []string{"com.example"}, time.Now())
	rotatedBare := signedFixture(t, "issue-helper-1.5.0", newKey)
	_, err = Verify(ctx, rotatedBare, &VerifyOptions{Trust: ts})
	wantCode(t, "Verify(new key, no co-signature)", err, capability.ReasonPluginKeyRotation, "co-signed by "+KeyID(pub(oldKey)))

	// Co-signed by the pinned key: accepted as a rotation.
	rotated := signedFixture(t, "issue-helper-1.5.0", newKey, oldKey)
	v, err = Verify(ctx, rotated, &VerifyOptions{Trust: ts})
	if err != nil {
		t.Fatal(err)
	}
	if !v.Rotated || v.Signer != KeyID(pub(newKey)) || !slices.Equal(v.CoSigners, []string{KeyID(pub(oldKey))}) {
		t.Fatalf("Verify(rotated) = rotated %v signer %s co %v", v.Rotated, v.Signer, v.CoSigners)
	}
	// A co-signature by an unrelated key does not help.
	wrongCo := signedFixture(t, "issue-helper-1.5.0", other, newKey)
	_, err = Verify(ctx, wrongCo, &VerifyOptions{Trust: ts})
	wantCode(t, "Verify(co-signed by non-pinned key)", err, capability.ReasonPluginKeyRotation, "")
}

func TestRollback(t *testing.T) {
	ts, err := OpenTrustStore(filepath.Join(t.TempDir(), "trust"))
	if err != nil {
		t.Fatal(err)
	}
	k := KeyRef{ID: KeyID(pub(testKey(1))), PublicKey: pub(testKey(1))}
	k2 := KeyRef{ID: KeyID(pub(testKey(2))), PublicKey: pub(testKey(2))}
	r1, r2 := Digest{1}, Digest{2}
	if err := ts.Record("com.example.a", k, "1.5.0", r1); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		version   string
		root      Digest
		downgrade bool
		code      capability.Reason
	}{
		{"higher", "1.6.0", r2, false, ""},
		{"same version same bytes", "1.5.0", r1, false, ""},
		{"same version other bytes", "1.5.0", r2, false, capability.ReasonPluginRollback},
		{"same version other bytes, allowed downgrade", "1.5.0", r2, true, capability.ReasonPluginRollback},
		{"lower", "1.4.0", r2, false, capability.ReasonPluginRollback},
		{"lower pre-release", "1.5.0-rc.1", r2, false, capability.ReasonPluginRollback},
		{"lower, allowed", "1.4.0", r2, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ts.CheckRollback("com.example.a", tt.version, tt.root, tt.downgrade)
			if capability.ReasonOf(err) != tt.code {
				t.Fatalf("CheckRollback(%s) = %v, want code %q", tt.version, err, tt.code)
			}
		})
	}
	// A rotation does not reset the floor.
	ts.Record("com.example.a", k2, "1.5.1", r2)
	if err := ts.CheckRollback("com.example.a", "1.5.0", r1, false); capability.ReasonOf(err) != capability.ReasonPluginRollback {
		t.Fatalf("1.5.0 after 1.5.1 by another key = %v; want refused", err)
	}
	if err := ts.CheckRollback("com.example.a", "1.4.9", r2, false); capability.ReasonOf(err) != capability.ReasonPluginRollback {
		t.Fatalf("CheckRollback(1.4.9) = %v", err)
	}
	// A corrupt table fails closed.
	os.WriteFile(filepath.Join(ts.Dir(), "rollback.json"), []byte("{"), 0o600)
	if err := ts.CheckRollback("com.example.a", "9.0.0", r1, false); capability.ReasonOf(err) != capability.ReasonPluginState {
		t.Fatalf("CheckRollback(corrupt) = %v, want PLUGIN_STATE", err)
	}
}

func TestPrefixMatches(t *testing.T) {
	tests := []struct {
		prefix, id string
		want       bool
	}{
		{"com.example", "com.example", true},
		{"com.example", "com.example.issue-helper", true},
		{"com.example", "com.example-tools.x", true},
		{"com.example", "com.examples.x", false},
		{"com.example.", "com.example.x", true},
		{"com.example.", "com.example", false},
		{"", "com.example", false},
	}
	for _, tt := range tests {
		if got := PrefixMatches(tt.prefix, tt.id); got != tt.want {
			t.Errorf("PrefixMatches(%q, %q) = %v, want %v", tt.prefix, tt.id, got, tt.want)
		}
	}
}

func TestCompareVersions(t *testing.T) {
	order := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.4.0", "1.10.0", "2.0.0"}
	for i := range order {
		for j := range order {
			got, err := CompareVersions(order[i], order[j])
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got != want {
				t.Errorf("CompareVersions(%s, %s) = %d, want %d", order[i], order[j], got, want)
			}
		}
	}
	for _, bad := range []string{"1.0", "01.0.0", "1.0.0-", "1.0.0-01", "v1.0.0", "1.0.0+"} {
		if _, err := CompareVersions(bad, "1.0.0"); err == nil {
			t.Errorf("CompareVersions(%q) accepted", bad)
		}
	}
}
