package scripted

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/norma-run/norma/provider"
)

var corpus = []string{
	// The documented example.
	"turns:\n  - tool_calls:\n      - {id: t1, name: Read, input: {path: docs/intro.md}}\n      - {id: t2, name: mcp__com.example.issue-helper__issues.comment, input: {repo: acme/demo, number: 42, body: \"…\"}}\n  - text: \"Done.\"\n",
	// Text only.
	"turns: [{text: hi}]",
	// JSON form, as Marshal writes it.
	`{"turns":[{"text":"a","tool_calls":[{"id":"x","name":"R","input":{"n":[1,2,{"k":null}]}}]}]}`,
	// Non-string keys in an input mapping.
	"turns: [{tool_calls: [{id: a, name: R, input: {1: one, true: yes}}]}]",
	// Anchors and aliases.
	"turns: [{tool_calls: [{id: a, name: R, input: &x {k: v}}, {id: b, name: R, input: *x}]}]",
	// Unknown field.
	"turns: [{text: a, extra: 1}]",
	// Merge key.
	"turns: [{tool_calls: [{id: a, name: R, input: {<<: {k: v}, j: 1}}]}]",
	// Special floats that JSON cannot hold.
	"turns: [{tool_calls: [{id: a, name: R, input: {f: .nan}}]}]",
	// Duplicate ids.
	"turns: [{tool_calls: [{id: a, name: R}, {id: a, name: S}]}]",
}

// FuzzParse checks that Parse never panics, that every error is a
// *ParseError, that accepted scripts satisfy the documented invariants, and
// that Parse(Marshal(s)) == s.
func FuzzParse(f *testing.F) {
	for _, s := range corpus {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			if _, ok := errors.AsType[*ParseError](err); !ok {
				t.Fatalf("Parse error %T is not *ParseError: %v", err, err)
			}
			return
		}
		if len(s.Turns) == 0 {
			t.Fatal("accepted a script with no turns")
		}
		ids := map[string]bool{}
		for _, turn := range s.Turns {
			if turn.Text == "" && len(turn.ToolCalls) == 0 {
				t.Fatal("accepted an empty turn")
			}
			for _, c := range turn.ToolCalls {
				if c.ID == "" || c.Name == "" || ids[c.ID] {
					t.Fatalf("accepted tool call %+v", c)
				}
				ids[c.ID] = true
				if !provider.IsJSONObject(c.Input) || !json.Valid(c.Input) {
					t.Fatalf("input %q is not a JSON object", c.Input)
				}
			}
		}
		checkRoundTrip(t, s)
	})
}
