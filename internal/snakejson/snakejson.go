// Package snakejson gives Norma's JSON outputs one key style, snake_case
// (^[a-z][a-z0-9_]*$): every --json output of the CLI and every answer of
// the team server's API.
//
// Many outputs are library values whose Go JSON keys are camelCase (an
// audit record, an approval, a plugin's state; some are persisted or
// hashed, so their encoding cannot change). [Convert] converts their keys
// on the way out: a camelCase or PascalCase identifier key (ASCII letters
// and digits with both cases, as a Go field or a camelCase JSON key is)
// becomes snake_case ("manifestDigest" → "manifest_digest",
// "ChainVerified" → "chain_verified", "landlockABI" → "landlock_abi").
// Any other key (snake_case already, all capitals, dotted, a version) is
// left as it is, and so is everything under a verbatim key, so that data
// used as a key is never quietly rewritten.
package snakejson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Convert returns v's JSON value (maps, slices, json.Number, strings,
// bools, nil) with identifier keys in snake_case. The objects under a
// key in verbatim keep their keys.
func Convert(v any, verbatim map[string]bool) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("json output: %w", err)
	}
	return convertTree(tree, verbatim), nil
}

func convertTree(v any, verbatim map[string]bool) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if verbatim[k] {
				out[k] = e
				continue
			}
			out[Key(k)] = convertTree(e, verbatim)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = convertTree(e, verbatim)
		}
		return x
	}
	return v
}

// Key converts a camelCase or PascalCase key (ASCII letters and digits,
// starting with a letter, with both upper- and lower-case letters) to
// snake_case: an underscore goes before an upper-case letter that follows
// a lower-case letter or a digit, or that starts a word after an acronym
// ("ABIVersion" → "abi_version"), and everything is lower-cased. Every
// other key is returned as it is.
func Key(k string) string {
	if k == "" || !isLetter(k[0]) {
		return k
	}
	upper, lower := false, false
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !isLetter(c) && !isDigit(c) {
			return k // snake_case already, or not an identifier
		}
		upper = upper || isUpper(c)
		lower = lower || isLower(c)
	}
	if !upper || !lower {
		return k
	}
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		c := k[i]
		if isUpper(c) && i > 0 {
			prev := k[i-1]
			nextLower := i+1 < len(k) && isLower(k[i+1])
			if isLower(prev) || isDigit(prev) || (isUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		if isUpper(c) {
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isUpper(c byte) bool  { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool  { return c >= 'a' && c <= 'z' }
func isLetter(c byte) bool { return isUpper(c) || isLower(c) }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
