package keycase

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestJSON(t *testing.T) {
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{`{"command":"node","args":["a"]}`, true},
		{`{"a":{"b":1},"c":[{"b":2},{"b":3}],"d":"b"}`, true},
		{`{"command":"node","Command":"npx"}`, false},
		{`{"mcpServers":{"fs":{"command":"node","COMMAND":"npx"}}}`, false},
		{`{"x":[{"k":1,"K":2}]}`, false},
		// The Kelvin sign folds to k, as encoding/json matches it.
		{"{\"k\":1,\"\u212a\":2}", false},
		{`{"a":1,"a":2}`, false},
		{`{"a":{"k":1},"b":{"k":1}}`, true},
		{`[1,"a",{"a":"A"}]`, true},
		{`not json`, true}, // the caller's decoding reports it
	} {
		if err := JSON([]byte(tt.in)); (err == nil) != tt.ok {
			t.Errorf("JSON(%s) = %v, want ok %v", tt.in, err, tt.ok)
		}
	}
}

// TestJSONMatchesEncodingJSON: for a struct field, encoding/json takes a
// key JSON refuses as the same field; a document JSON accepts is read
// as JSON.parse reads it (the exact key).
func TestJSONMatchesEncodingJSON(t *testing.T) {
	var v struct {
		Command string `json:"command"`
	}
	in := []byte("{\"command\":\"node\",\"COMMAND\":\"npx\"}")
	if err := json.Unmarshal(in, &v); err != nil || v.Command != "npx" {
		t.Fatalf("encoding/json read %q %v: the premise changed", v.Command, err)
	}
	if JSON(in) == nil {
		t.Fatal("JSON accepted it")
	}
}

// FuzzJSON: a document JSON accepts has, in each object, no two keys
// that strings.EqualFold (encoding/json's matching) finds equal.
func FuzzJSON(f *testing.F) {
	f.Add([]byte(`{"a":{"B":[1,{"c":2}]},"b":3}`))
	f.Add([]byte(`{"command":"node","Command":"npx"}`))
	f.Add([]byte("{\"k\":1,\"\u212a\":2}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if JSON(b) != nil {
			return
		}
		var v any
		if json.NewDecoder(bytes.NewReader(b)).Decode(&v) != nil {
			return
		}
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case map[string]any:
				keys := make([]string, 0, len(x))
				for k, e := range x {
					for _, o := range keys {
						if strings.EqualFold(k, o) {
							t.Fatalf("JSON accepted %q and %q in %s", k, o, b)
						}
					}
					keys = append(keys, k)
					walk(e)
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			}
		}
		walk(v)
	})
}

func TestValue(t *testing.T) {
	ok := map[string]any{"mcp_servers": map[string]any{"fs": map[string]any{"command": "node"}}, "list": []any{map[string]any{"a": 1}}}
	if err := Value(ok); err != nil {
		t.Fatal(err)
	}
	bad := map[string]any{"mcp_servers": map[string]any{"fs": map[string]any{"command": "node", "Command": "npx"}}}
	if Value(bad) == nil {
		t.Fatal("Value accepted command and Command")
	}
	if Value(map[string]any{"t": []map[string]any{{"x": 1, "X": 2}}}) == nil {
		t.Fatal("Value accepted x and X in an array of tables")
	}
}
