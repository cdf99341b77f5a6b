package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/norma-run/norma/plugin"
)

// Every --json output of norma has one key style: snake_case
// (^[a-z][a-z0-9_]*$), as `norma run --json` events always had. Names
// that are data (versions, reason codes, ids) are values, never keys.
//
// Many outputs are library values whose Go JSON keys are camelCase (an
// audit record, an approval, a plugin's state; some are persisted or
// hashed, so their encoding cannot change). writeJSON converts their keys
// on the way out: a camelCase or PascalCase identifier key — ASCII letters
// and digits with both cases, as a Go field or a camelCase JSON key is —
// becomes snake_case ("manifestDigest" → "manifest_digest",
// "ChainVerified" → "chain_verified", "landlockABI" → "landlock_abi").
// Any other key (snake_case already, all capitals, dotted, a version) is
// left as it is, and so is everything under a key in verbatimKeys, so
// that data used as a key is never quietly rewritten —
// TestJSONKeysSnakeCase, which runs every --json command, catches such
// keys instead, and the output is reshaped (pluginStateJSON, groupsJSON,
// demo.ReasonCounts).

// verbatimKeys name objects whose keys are data, passed through as they
// are: "env" maps environment variable names (settings show).
var verbatimKeys = map[string]bool{"env": true}

// writeJSON writes v as indented JSON with snake_case keys.
func writeJSON(w io.Writer, v any) error {
	out, err := snakeJSON(v)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// writeJSONLine writes v as one line of JSON with snake_case keys.
func writeJSONLine(w io.Writer, v any) error {
	out, err := snakeJSON(v)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// snakeJSON returns v's JSON value (maps, slices, json.Number, strings,
// bools, nil) with identifier keys in snake_case.
func snakeJSON(v any) (any, error) {
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
	return snakeTree(tree), nil
}

func snakeTree(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if verbatimKeys[k] {
				out[k] = e
				continue
			}
			out[snakeKey(k)] = snakeTree(e)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = snakeTree(e)
		}
		return x
	}
	return v
}

// snakeKey converts a camelCase or PascalCase key (ASCII letters and
// digits, starting with a letter, with both upper- and lower-case letters)
// to snake_case: an underscore goes before an upper-case letter that
// follows a lower-case letter or a digit, or that starts a word after an
// acronym ("ABIVersion" → "abi_version"), and everything is lower-cased.
// Every other key is returned as it is.
func snakeKey(k string) string {
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

// groupsJSON keys capability groups ("filesystem.read") as snake_case
// names ("filesystem_read").
func groupsJSON(m map[plugin.Group][]string) map[string][]string {
	if m == nil {
		return nil
	}
	out := make(map[string][]string, len(m))
	for g, items := range m {
		out[strings.ReplaceAll(string(g), ".", "_")] = items
	}
	return out
}

// pluginStateJSON is a plugin's state as --json prints it: the versions
// and the version history as lists (a version is a value, not a key),
// sorted by version as the state orders them.
func pluginStateJSON(st *plugin.State) map[string]any {
	type version struct {
		Version string `json:"version"`
		*plugin.VersionState
	}
	type history struct {
		Version    string        `json:"version"`
		MerkleRoot plugin.Digest `json:"merkle_root"`
	}
	versions := []version{}
	for _, v := range sortedVersions(st.Versions) {
		versions = append(versions, version{v, st.Versions[v]})
	}
	hist := []history{}
	for _, v := range sortedVersions(st.History) {
		hist = append(hist, history{v, st.History[v]})
	}
	out := map[string]any{"id": st.ID, "active": st.Active, "versions": versions, "history": hist}
	if st.Held != "" {
		out["held"] = st.Held
	}
	return out
}

// sortedVersions returns m's keys in semver order where they parse, by
// string otherwise.
func sortedVersions[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c, err := plugin.CompareVersions(a, b); err == nil && c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return keys
}
