// Command gohook is the minimal Go command hook, the floor of any command
// hook written in Go: it reads the hook's JSON, as hook.py does, and
// answers allow. bench/hooklat.sh builds it as scripts/build builds norma
// (static, stripped).
package main

import (
	"encoding/json"
	"os"
)

func main() {
	var in map[string]any
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		os.Exit(2)
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName": "PreToolUse", "permissionDecision": "allow"}})
}
