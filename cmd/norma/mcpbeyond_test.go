package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/norma-run/norma/approval/prompt"
	"github.com/norma-run/norma/plugin/host"
)

// TestNoticeEscaped: a server's logging message and progress text reach
// the terminal escaped, and --json carries them as plugin_notice events.
func TestNoticeEscaped(t *testing.T) {
	evil := host.Notice{Server: "srv\x1b]0;t\x07", Kind: host.NoticeLog, Level: "info\x1b[2J", Text: "hello\x1b[31m\rforged line"}
	var out, stderr bytes.Buffer
	p := &runPrinter{w: &out}
	p.notice(&stderr, evil)
	p.notice(&stderr, host.Notice{Server: "srv", Kind: host.NoticeProgress, Progress: 1, Total: 2, Text: "step\x1b[1A"})
	s := stderr.String()
	if strings.ContainsAny(s, "\x1b\x07\r") || !strings.Contains(s, "forged line") || !strings.Contains(s, "progress 1/2") {
		t.Fatalf("stderr: %q", s)
	}
	if out.Len() != 0 {
		t.Fatalf("a notice went to stdout: %q", out.String())
	}
	var js bytes.Buffer
	p = &runPrinter{w: &js, json: true}
	p.notice(&stderr, evil)
	lines := jsonLines(t, js.String())
	if len(lines) != 1 || lines[0]["event"] != "plugin_notice" || lines[0]["kind"] != "log" || strings.ContainsAny(lines[0]["text"].(string), "\x1b\r") {
		t.Fatalf("json: %v", lines)
	}
	checkJSONKeys(t, "plugin_notice", js.String())
}

// TestTerminalElicit: the person's typed answers are converted to the
// fields' types; an answer of the wrong type is asked again; decline
// passes through.
func TestTerminalElicit(t *testing.T) {
	q := host.Elicitation{Server: "everything", Message: "Please provide inputs",
		Fields: []host.ElicitField{{Name: "check", Type: "boolean"}, {Name: "name", Type: "string", Required: true}}}
	for _, tc := range []struct {
		in, action string
		content    map[string]any
	}{
		{"a\nyes\nAda\n", "accept", map[string]any{"check": true, "name": "Ada"}},
		{"a\nmaybe\nAda\na\nno\nAda\n", "accept", map[string]any{"check": false, "name": "Ada"}},
		{"d\n", "decline", nil},
	} {
		var out bytes.Buffer
		pa, _ := prompt.New(strings.NewReader(tc.in), &out, &prompt.Options{Accessible: true})
		a, err := terminalElicit(pa, &runPrinter{w: &out}, &sync.Mutex{})(context.Background(), q)
		if err != nil || a.Action != tc.action || len(a.Content) != len(tc.content) {
			t.Fatalf("%q: %+v %v\n%s", tc.in, a, err, out.String())
		}
		for k, v := range tc.content {
			if a.Content[k] != v {
				t.Errorf("%q: %s = %v, want %v", tc.in, k, a.Content[k], v)
			}
		}
	}
}
