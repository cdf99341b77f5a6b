package main

import (
	"encoding/json"
	"strings"

	"github.com/norma-run/norma/sandbox"
)

func jsonValid(s string) bool { return json.Valid([]byte(s)) }

// targetOf derives a short external-write target from a tool input:
// "owner/repo#N" for issue-style inputs, else the value of a "target" field,
// else "-".
func targetOf(input string) string {
	var m map[string]any
	if json.Unmarshal([]byte(input), &m) != nil {
		return "-"
	}
	if t, ok := m["target"].(string); ok {
		return t
	}
	repo, _ := m["repo"].(string)
	if repo != "" {
		if n, ok := m["number"]; ok {
			b, _ := json.Marshal(n)
			return repo + "#" + strings.Trim(string(b), `"`)
		}
		return repo
	}
	return "-"
}

// sandboxAvailable reports whether this host can build the OS sandbox; the
// policy's sandbox layer refuses process spawn and plugin network without it.
func sandboxAvailable() bool { return sandbox.Probe().Ready }
