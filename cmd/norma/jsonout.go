package main

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"

	"github.com/norma-run/norma/internal/snakejson"
	"github.com/norma-run/norma/plugin"
)

// Every --json output of norma has one key style: snake_case, as `norma
// run --json` events always had (package snakejson converts library
// values' camelCase keys on the way out). Names that are data (versions,
// reason codes, ids) are values, never keys; a key that is data is
// reshaped (pluginStateJSON, groupsJSON, demo.ReasonCounts) or, when it
// cannot be, listed in verbatimKeys. TestJSONKeysSnakeCase runs every
// --json command and catches any other.

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

// snakeJSON returns v's JSON value with identifier keys in snake_case.
func snakeJSON(v any) (any, error) { return snakejson.Convert(v, verbatimKeys) }

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
