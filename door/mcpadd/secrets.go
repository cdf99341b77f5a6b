package mcpadd

import (
	"fmt"
	"strings"

	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/secret"
)

// credentialWords mark an environment variable that likely holds a
// credential.
var credentialWords = []string{"TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH", "APIKEY"}

// LooksLikeCredential reports whether an environment variable's name
// suggests a credential: a part (split at '_') that contains TOKEN,
// SECRET, PASSWORD, CREDENTIAL, AUTH or APIKEY, or is KEY or PASS (or ends
// in them).
func LooksLikeCredential(k string) bool {
	for _, part := range strings.Split(strings.ToUpper(k), "_") {
		for _, w := range credentialWords {
			if strings.Contains(part, w) {
				return true
			}
		}
		if strings.HasSuffix(part, "KEY") || part == "PASS" || part == "PASSWD" || part == "PWD" {
			return true
		}
	}
	return false
}

// SecretName is the vault name of server name's secret in variable k.
func SecretName(name, k string) (string, error) {
	s := "mcp_" + strings.ToLower(strings.NewReplacer("-", "_", ".", "_").Replace(name)) + "_" + strings.ToLower(k)
	if err := secret.CheckName(s); err != nil {
		return "", fmt.Errorf("secret %s of %s: %s is not a vault name (at most 64 of a-z 0-9 _)", k, name, s)
	}
	return s, nil
}

// manifestSecrets declares each secret: its placeholder reaches the
// server in its variable, and only its origin gets the value.
func manifestSecrets(name string, secrets map[string]string) ([]manifest.Secret, error) {
	var out []manifest.Secret
	for _, k := range sortedKeys(secrets) {
		n, err := SecretName(name, k)
		if err != nil {
			return nil, err
		}
		out = append(out, manifest.Secret{Name: n, Purpose: secrets[k], InjectAs: secret.InjectBrokeredHeader, Env: k})
	}
	return out, nil
}
