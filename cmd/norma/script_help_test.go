package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/norma-run/norma/provider/scripted"
	"github.com/norma-run/norma/tool/builtin"
)

// scriptExamples are the blocks of text indented by four spaces, without
// the indentation.
func scriptExamples(text string) []string {
	var out []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, "\n")+"\n")
			cur = nil
		}
	}
	for line := range strings.SplitSeq(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "    "); ok {
			cur = append(cur, rest)
			continue
		}
		flush()
	}
	flush()
	return out
}

// TestScriptFormatHelp: every example of the --script help parses with
// the scripted provider's parser, and each call of a built-in tool has
// the fields its input schema requires and no other. So does the inline
// JSON example, and the text wraps at 80 columns and has no tab.
func TestScriptFormatHelp(t *testing.T) {
	examples := scriptExamples(scriptFormatHelp)
	if len(examples) < 2 {
		t.Fatalf("%d examples in scriptFormatHelp, want 2 or more", len(examples))
	}
	examples = append(examples, `{"turns": [{"text": "hi"}]}`)
	if !strings.Contains(scriptFormatHelp, examples[len(examples)-1]) {
		t.Fatal("the inline JSON example is not in the text")
	}
	schemas, err := builtin.InputSchemas(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for i, ex := range examples {
		s, err := scripted.Parse("example", []byte(ex))
		if err != nil {
			t.Errorf("example %d does not parse: %v\n%s", i+1, err, ex)
			continue
		}
		for _, turn := range s.Turns {
			for _, c := range turn.ToolCalls {
				calls++
				raw, ok := schemas[c.Name]
				if !ok {
					if !strings.HasPrefix(c.Name, "mcp__") {
						t.Errorf("example %d: tool %s is neither built in nor a plugin's", i+1, c.Name)
					}
					continue
				}
				var schema struct {
					Required   []string                   `json:"required"`
					Properties map[string]json.RawMessage `json:"properties"`
				}
				var input map[string]any
				if err := json.Unmarshal(raw, &schema); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(c.Input, &input); err != nil {
					t.Fatal(err)
				}
				for _, r := range schema.Required {
					if _, ok := input[r]; !ok {
						t.Errorf("example %d: %s %s lacks %q", i+1, c.Name, c.ID, r)
					}
				}
				for k := range input {
					if _, ok := schema.Properties[k]; !ok {
						t.Errorf("example %d: %s %s has %q, which its schema does not", i+1, c.Name, c.ID, k)
					}
				}
			}
		}
		if i == 0 && (len(s.Turns) < 2 || !slices.ContainsFunc(s.Turns, func(t scripted.Turn) bool { return len(t.ToolCalls) > 1 })) {
			t.Errorf("the first example shows no turn of several calls:\n%s", ex)
		}
	}
	if calls < 4 {
		t.Errorf("the examples make %d tool calls", calls)
	}
	for n, line := range strings.Split(scriptFormatHelp, "\n") {
		if len([]rune(line)) > 80 || strings.Contains(line, "\t") {
			t.Errorf("line %d is over 80 columns or has a tab: %q", n+1, line)
		}
	}
	// The limits it states are the parser's.
	if !strings.Contains(scriptFormatHelp, "4 MiB") || scripted.MaxScriptSize != 4<<20 {
		t.Errorf("the help's size limit is not scripted.MaxScriptSize (%d)", scripted.MaxScriptSize)
	}
}

// TestScriptFormatHelpMistakes: the mistakes the help lists are refused
// with a position, as it says.
func TestScriptFormatHelpMistakes(t *testing.T) {
	for _, bad := range []string{
		"turns:\n  - text: hi\n    tools: []\n",                                           // unknown field
		"turns:\n  - text: hi\nturns:\n  - text: ho\n",                                    // duplicate key
		"turns:\n  - {}\n",                                                                // empty turn
		"turns:\n  - tool_calls:\n      - {name: Read}\n",                                 // no id
		"turns:\n  - tool_calls:\n      - {id: a}\n",                                      // no name
		"turns:\n  - tool_calls:\n      - {id: a, name: LS}\n      - {id: a, name: LS}\n", // id twice
		"turns:\n  - tool_calls:\n      - {id: a, name: Read, input: [x]}\n",              // input not a mapping
		"turns:\n  - text: !!str hi\n",                                                    // a tag
	} {
		_, err := scripted.Parse("s.yaml", []byte(bad))
		if err == nil || !strings.HasPrefix(err.Error(), "s.yaml:") {
			t.Errorf("Parse(%q) = %v, want a FILE:LINE:COL error", bad, err)
		}
	}
}

// TestDoorRunHelpHasScriptFormat: `norma run --help` documents the
// --script format, as the built binary prints it.
func TestDoorRunHelpHasScriptFormat(t *testing.T) {
	code, out, errs := door(t, "run", "--help")
	if code != 0 || !strings.Contains(out, scriptFormatHelp) {
		t.Errorf("norma run --help: exit %d, without the script format\n%s%s", code, out, errs)
	}
}
