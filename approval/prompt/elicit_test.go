package prompt

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestElicit: the server's strings are escaped; accept takes one line per
// field; an empty answer declines; end of input cancels.
func TestElicit(t *testing.T) {
	fields := []Field{{Name: "name", Type: "string", Required: true, Description: "who\x1b[2J"}, {Name: "ok", Type: "boolean"}}
	for _, tc := range []struct {
		name, in, action string
		values           map[string]string
	}{
		{"accept", "a\nAda\nyes\n", Accept, map[string]string{"name": "Ada", "ok": "yes"}},
		{"default declines", "\n", Decline, nil},
		{"cancel", "c\n", Cancel, nil},
		{"eof", "", Cancel, nil},
		{"eof in a field", "a\nAda\n", Cancel, nil},
	} {
		var out bytes.Buffer
		a, _ := New(strings.NewReader(tc.in), &out, &Options{Accessible: true})
		action, values, err := a.Elicit(context.Background(), "evil\x1b]0;x\x07", "Give me\x1b[31m your name", fields)
		if err != nil || action != tc.action || len(values) != len(tc.values) {
			t.Errorf("%s: %q %v %v", tc.name, action, values, err)
		}
		for k, v := range tc.values {
			if values[k] != v {
				t.Errorf("%s: %s = %q, want %q", tc.name, k, values[k], v)
			}
		}
		if strings.ContainsRune(out.String(), 0x1b) || strings.ContainsRune(out.String(), 0x07) {
			t.Errorf("%s: an escape sequence reached the terminal: %q", tc.name, out.String())
		}
		if !strings.Contains(out.String(), "name (string, required)") {
			t.Errorf("%s: fields not shown:\n%s", tc.name, out.String())
		}
	}
}
