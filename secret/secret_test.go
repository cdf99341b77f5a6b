package secret

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
)

// canary is a secret value that must never appear in any output.
const canary = "CANARY-s3cr3t-7f3a9c1e"

func TestValueNeverPrints(t *testing.T) {
	v := NewValue([]byte(canary))
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "v", v, "in", struct{ V Value }{v})
	js, err := json.Marshal(map[string]any{"v": v, "p": &v})
	if err != nil {
		t.Fatal(err)
	}
	outs := map[string]string{
		"%v": fmt.Sprintf("%v", v), "%+v": fmt.Sprintf("%+v", v), "%#v": fmt.Sprintf("%#v", v),
		"%s": fmt.Sprintf("%s", v), "%q": fmt.Sprintf("%q", v), "%x": fmt.Sprintf("%x", v),
		"%X": fmt.Sprintf("%X", v), "%d": fmt.Sprintf("%d", v), "struct": fmt.Sprintf("%+v", struct{ V Value }{v}),
		"ptr": fmt.Sprintf("%v", &v), "String": v.String(), "GoString": v.GoString(),
		"slog": logs.String(), "json": string(js), "Sprint": fmt.Sprint(v), "Println": fmt.Sprintln(v),
	}
	hexCanary := fmt.Sprintf("%x", canary)
	for name, out := range outs {
		if strings.Contains(out, canary) || strings.Contains(strings.ToLower(out), hexCanary) {
			t.Errorf("%s printed the value: %q", name, out)
		}
		if !strings.Contains(out, redacted) {
			t.Errorf("%s = %q, want it to contain %s", name, out, redacted)
		}
	}
	if got := string(v.Reveal()); got != canary {
		t.Errorf("Reveal() = %q, want the value", got)
	}
	r := v.Reveal()
	r[0] = 'X'
	if string(v.Reveal()) != canary {
		t.Error("Reveal returned shared memory")
	}
	if !v.Equal(NewValue([]byte(canary))) || v.Equal(NewValue([]byte("other-value"))) {
		t.Error("Equal is wrong")
	}
}

func TestCheckNameAndValue(t *testing.T) {
	tests := []struct {
		name   string
		secret string
		value  string
		want   capability.Reason
	}{
		{name: "ok", secret: "issue_api_token", value: canary},
		{name: "upper name", secret: "Issue", value: canary, want: capability.ReasonSecretInvalid},
		{name: "digit first", secret: "1abc", value: canary, want: capability.ReasonSecretInvalid},
		{name: "too long name", secret: "a" + strings.Repeat("b", 64), value: canary, want: capability.ReasonSecretInvalid},
		{name: "short value", secret: "tok", value: "1234567", want: capability.ReasonSecretInvalid},
		{name: "newline value", secret: "tok", value: "abcdefgh\r\nX-Evil: 1", want: capability.ReasonSecretInvalid},
		{name: "nul value", secret: "tok", value: "abcdefgh\x00", want: capability.ReasonSecretInvalid},
		{name: "huge value", secret: "tok", value: strings.Repeat("a", MaxValueLen+1), want: capability.ReasonSecretInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckName(tt.secret)
			if err == nil {
				err = CheckValue(tt.secret, NewValue([]byte(tt.value)))
			}
			if got := capability.ReasonOf(err); got != tt.want {
				t.Errorf("Check(%q) = %v, want reason %q", tt.secret, err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), tt.value) {
				t.Errorf("error %q holds the value", err)
			}
		})
	}
}

func TestFileVaultRoundTrip(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "secrets")
	v, err := OpenFileVault(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !v.KeyCreated() {
		t.Error("KeyCreated() = false on first open")
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode = %v, %v; want 0600", fi.Mode(), err)
	}
	if err := v.Set(ctx, "issue_api_token", NewValue([]byte(canary))); err != nil {
		t.Fatal(err)
	}
	if err := v.Set(ctx, "other", NewValue([]byte("another-secret-value"))); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(v.Path())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(canary)) {
		t.Fatal("vault file holds the plaintext")
	}
	if fi, _ := os.Stat(v.Path()); fi.Mode().Perm() != 0o600 {
		t.Errorf("vault mode = %v, want 0600", fi.Mode())
	}

	v2, err := OpenFileVault(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v2.KeyCreated() {
		t.Error("KeyCreated() = true on second open")
	}
	got, err := v2.Get(ctx, "issue_api_token")
	if err != nil || string(got.Reveal()) != canary {
		t.Fatalf("Get = %v, %v; want the canary", got, err)
	}
	names, err := v2.List(ctx)
	if err != nil || strings.Join(names, ",") != "issue_api_token,other" {
		t.Errorf("List = %v, %v", names, err)
	}
	if err := v2.Delete(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	_, err = v2.Get(ctx, "other")
	if !errors.Is(err, ErrNotFound) || capability.ReasonOf(err) != capability.ReasonSecretUnavailable {
		t.Errorf("Get(deleted) = %v, want ErrNotFound / SECRET_UNAVAILABLE", err)
	}
	if err := v2.Delete(ctx, "other"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Delete(missing) = %v, want ErrNotFound", err)
	}
}

func TestFileVaultFailsClosed(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{name: "key file readable by others", setup: func(t *testing.T, dir string) {
			os.Chmod(filepath.Join(dir, KeyFileName), 0o644)
		}},
		{name: "vault file readable by group", setup: func(t *testing.T, dir string) {
			os.Chmod(filepath.Join(dir, VaultFileName), 0o640)
		}},
		{name: "key file truncated", setup: func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, KeyFileName), []byte("short"), 0o600)
		}},
		{name: "key file replaced", setup: func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, KeyFileName), bytes.Repeat([]byte{7}, KeyLen), 0o600)
		}},
		{name: "key file is a symlink", setup: func(t *testing.T, dir string) {
			p := filepath.Join(dir, KeyFileName)
			os.Rename(p, p+".real")
			os.Symlink(p+".real", p)
		}},
		{name: "entry moved to another name", setup: func(t *testing.T, dir string) {
			p := filepath.Join(dir, VaultFileName)
			raw, _ := os.ReadFile(p)
			var f vaultFile
			json.Unmarshal(raw, &f)
			f.Secrets["tok"] = f.Secrets["other"]
			raw, _ = json.Marshal(f)
			os.WriteFile(p, raw, 0o600)
		}},
		{name: "ciphertext flipped", setup: func(t *testing.T, dir string) {
			p := filepath.Join(dir, VaultFileName)
			raw, _ := os.ReadFile(p)
			var f vaultFile
			json.Unmarshal(raw, &f)
			e := f.Secrets["tok"]
			e.Ciphertext[0] ^= 1
			f.Secrets["tok"] = e
			raw, _ = json.Marshal(f)
			os.WriteFile(p, raw, 0o600)
		}},
		{name: "corrupt file", setup: func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, VaultFileName), []byte("{"), 0o600)
		}},
		{name: "unknown version", setup: func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, VaultFileName), []byte(`{"version":2,"secrets":{}}`), 0o600)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			dir := t.TempDir()
			v, err := OpenFileVault(ctx, dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := v.Set(ctx, "tok", NewValue([]byte(canary))); err != nil {
				t.Fatal(err)
			}
			if err := v.Set(ctx, "other", NewValue([]byte("another-secret-value"))); err != nil {
				t.Fatal(err)
			}
			// Negative control: before the damage, the value is readable.
			if _, err := v.Get(ctx, "tok"); err != nil {
				t.Fatal(err)
			}
			tt.setup(t, dir)
			v, err = OpenFileVault(ctx, dir, nil)
			if err == nil {
				var got Value
				got, err = v.Get(ctx, "tok")
				if err == nil {
					t.Fatalf("Get = %v after damage, want an error", got)
				}
			}
			if r := capability.ReasonOf(err); r != capability.ReasonSecretUnavailable {
				t.Errorf("error = %v, want SECRET_UNAVAILABLE", err)
			}
			if strings.Contains(err.Error(), canary) {
				t.Errorf("error %q holds the value", err)
			}
		})
	}
}

func TestFileVaultConcurrentWriters(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			v, err := OpenFileVault(ctx, dir, nil) // separate instances: flock, not the mutex
			if err != nil {
				t.Error(err)
				return
			}
			if err := v.Set(ctx, fmt.Sprintf("s%d", i), NewValue([]byte(canary))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	v, err := OpenFileVault(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := v.List(ctx)
	if len(names) != 8 {
		t.Errorf("List = %v, want 8 names (lost updates)", names)
	}
}

type fixedKey []byte

func (k fixedKey) Key(context.Context) ([]byte, bool, error) {
	return append([]byte(nil), k...), false, nil
}

func TestFileVaultKeySource(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	v, err := OpenFileVault(ctx, dir, &FileVaultOptions{Key: fixedKey(bytes.Repeat([]byte{1}, KeyLen))})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Set(ctx, "tok", NewValue([]byte(canary))); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, KeyFileName)); !os.IsNotExist(err) {
		t.Error("a key file was created although a KeySource was given")
	}
	v2, _ := OpenFileVault(ctx, dir, &FileVaultOptions{Key: fixedKey(bytes.Repeat([]byte{2}, KeyLen))})
	if _, err := v2.Get(ctx, "tok"); capability.ReasonOf(err) != capability.ReasonSecretUnavailable {
		t.Errorf("Get with the wrong key = %v, want SECRET_UNAVAILABLE", err)
	}
	if _, err := OpenFileVault(ctx, t.TempDir(), &FileVaultOptions{Key: fixedKey{1, 2, 3}}); err == nil {
		t.Error("a 3-byte key was accepted")
	}
}

func TestEnvVault(t *testing.T) {
	env := map[string]string{"TOKEN_A": canary}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	v, err := NewEnvVault(map[string]string{"tok": "TOKEN_A", "missing": "TOKEN_B"}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	env["TOKEN_A"] = "changed-after-construction"
	got, err := v.Get(t.Context(), "tok")
	if err != nil || string(got.Reveal()) != canary {
		t.Errorf("Get = %v, %v; want the value read at construction", got, err)
	}
	if _, err := v.Get(t.Context(), "missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(unset) = %v, want ErrNotFound", err)
	}
	if err := v.Set(t.Context(), "tok", got); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Set = %v, want ErrReadOnly", err)
	}
	if err := v.Delete(t.Context(), "tok"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Delete = %v, want ErrReadOnly", err)
	}
	if names, _ := v.List(t.Context()); strings.Join(names, ",") != "tok" {
		t.Errorf("List = %v", names)
	}
	if vars := v.Variables(); strings.Join(vars, ",") != "TOKEN_B,TOKEN_A" && strings.Join(vars, ",") != "TOKEN_A,TOKEN_B" {
		t.Errorf("Variables = %v", vars)
	}
	if _, err := NewEnvVault(map[string]string{"short": "S"}, func(string) (string, bool) { return "x", true }); err == nil {
		t.Error("a 1-byte value was accepted")
	}
}

func TestNewHandle(t *testing.T) {
	tests := []struct {
		name       string
		in         manifest.Secret
		wantErr    bool
		wantHeader string
		wantBearer bool
		wantOrigin string
	}{
		{name: "default bearer", in: manifest.Secret{Name: "tok", Purpose: "https://API.example.invalid", InjectAs: "brokered_header"},
			wantHeader: "Authorization", wantBearer: true, wantOrigin: "https://api.example.invalid:443"},
		{name: "custom header", in: manifest.Secret{Name: "tok", Purpose: "https://api.example.invalid:8443", InjectAs: "brokered_header", Header: "x-api-key"},
			wantHeader: "X-Api-Key", wantOrigin: "https://api.example.invalid:8443"},
		{name: "explicit authorization", in: manifest.Secret{Name: "tok", Purpose: "https://a.example.invalid", InjectAs: "brokered_header", Header: "authorization"},
			wantHeader: "Authorization", wantBearer: true, wantOrigin: "https://a.example.invalid:443"},
		{name: "env inject", in: manifest.Secret{Name: "tok", Purpose: "https://a.example.invalid", InjectAs: "env"}, wantErr: true},
		{name: "host header", in: manifest.Secret{Name: "tok", Purpose: "https://a.example.invalid", InjectAs: "brokered_header", Header: "Host"}, wantErr: true},
		{name: "proxy auth header", in: manifest.Secret{Name: "tok", Purpose: "https://a.example.invalid", InjectAs: "brokered_header", Header: "proxy-authorization"}, wantErr: true},
		{name: "header injection", in: manifest.Secret{Name: "tok", Purpose: "https://a.example.invalid", InjectAs: "brokered_header", Header: "X: y"}, wantErr: true},
		{name: "purpose with path", in: manifest.Secret{Name: "tok", Purpose: "https://a.example.invalid/x", InjectAs: "brokered_header"}, wantErr: true},
		{name: "purpose with userinfo", in: manifest.Secret{Name: "tok", Purpose: "https://u@a.example.invalid", InjectAs: "brokered_header"}, wantErr: true},
		{name: "bad env", in: manifest.Secret{Name: "tok", Purpose: "https://a.example.invalid", InjectAs: "brokered_header", Env: "lower"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := NewHandle(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("NewHandle(%+v) = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err != nil {
				if capability.ReasonOf(err) != capability.ReasonSecretInvalid {
					t.Errorf("reason = %q, want SECRET_INVALID", capability.ReasonOf(err))
				}
				if h.Valid() {
					t.Error("invalid handle reports Valid")
				}
				return
			}
			if h.Header() != tt.wantHeader || h.Bearer() != tt.wantBearer || h.Purpose() != tt.wantOrigin {
				t.Errorf("NewHandle = %s bearer=%v, want %s %v %s", h, h.Bearer(), tt.wantHeader, tt.wantBearer, tt.wantOrigin)
			}
			want := canary
			if tt.wantBearer {
				want = "Bearer " + canary
			}
			if got := h.HeaderValue(NewValue([]byte(canary))); got != want {
				t.Errorf("HeaderValue = %q, want %q", got, want)
			}
			if strings.Contains(h.String(), canary) {
				t.Error("handle prints a value")
			}
		})
	}
}
