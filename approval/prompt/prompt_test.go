package prompt_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/internal/syncbuf"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/approval/prompt"
)

var now = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

var rec = approval.Record{Request: approval.Request{
	ID: "apr_1", Tool: "issues.comment", Plugin: "com.example.issue-helper", PluginVersion: "1.4.0",
	Effect: "external_write", Target: "example-org/demo-repo#42", Preview: "Comment: LGTM",
	Credential: "issue_api_token", Scope: approval.ScopeOnce, Expires: now.Add(5 * time.Minute),
}}

func newPrompt(t *testing.T, in io.Reader, out io.Writer, accessible bool) *prompt.Approver {
	t.Helper()
	p, err := prompt.New(in, out, &prompt.Options{Accessible: accessible, Who: "alice", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestApproveAccessible(t *testing.T) {
	rules := []string{"Write(out/a.md)"}
	tests := []struct {
		name     string
		input    string
		rules    []string
		approve  bool
		remember approval.Remember
		why      string
		keys     string
	}{
		{name: "yes", input: "y\n", approve: true, keys: "[y/N]"},
		{name: "YES word", input: "YES\n", approve: true, keys: "[y/N]"},
		{name: "no", input: "n\n\n", keys: "[y/N]"},
		{name: "default is no", input: "\n", keys: "[y/N]"},
		{name: "end of input", input: "", keys: "[y/N]"},
		{name: "session not offered without rules", input: "s\na\nz\n", keys: "[y/N]"},
		{name: "once with rules", input: "y\n", rules: rules, approve: true, keys: "[y/s/a/N]"},
		{name: "session", input: "s\n", rules: rules, approve: true, remember: approval.RememberSession, keys: "[y/s/a/N]"},
		{name: "always", input: "always\n", rules: rules, approve: true, remember: approval.RememberAlways, keys: "[y/s/a/N]"},
		{name: "no with a reason", input: "n\n  write it to docs/ instead  \n", rules: rules, why: "write it to docs/ instead", keys: "[y/s/a/N]"},
		{name: "asked again", input: "maybe\ns\n", rules: rules, approve: true, remember: approval.RememberSession, keys: "Answer one of y/s/a/N"},
		{name: "CRLF", input: "a\r\n", rules: rules, approve: true, remember: approval.RememberAlways, keys: "[y/s/a/N]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			p := newPrompt(t, strings.NewReader(tt.input), &out, true)
			v, err := p.Approve(approval.WithRules(t.Context(), tt.rules), rec)
			if err != nil {
				t.Fatalf("Approve(%q) err = %v", tt.input, err)
			}
			if v.Approve != tt.approve || v.Remember != tt.remember || v.By != "terminal:alice" {
				t.Errorf("Approve(%q) = %+v, want Approve %v Remember %v by terminal:alice", tt.input, v, tt.approve, tt.remember)
			}
			if !tt.approve && v.Why != tt.why {
				t.Errorf("Approve(%q).Why = %q, want %q", tt.input, v.Why, tt.why)
			}
			want := []string{"external_write", "example-org/demo-repo#42", "Comment: LGTM", "issue_api_token", "in 5m0s", tt.keys}
			if len(tt.rules) > 0 {
				want = append(want, "yes for this session: allow Write(out/a.md)", "always: add Write(out/a.md) to .norma/settings.local.yaml")
			}
			for _, s := range want {
				if !strings.Contains(out.String(), s) {
					t.Errorf("prompt output lacks %q:\n%s", s, out.String())
				}
			}
			if len(tt.rules) == 0 && strings.Contains(out.String(), "this session") {
				t.Errorf("session offered without rules:\n%s", out.String())
			}
		})
	}
}

// The reason of a no is bounded.
func TestApproveReasonBounded(t *testing.T) {
	var out bytes.Buffer
	p := newPrompt(t, strings.NewReader("n\n"+strings.Repeat("é", 400)+"\n"), &out, true)
	v, err := p.Approve(t.Context(), rec)
	if err != nil || v.Approve || len(v.Why) > prompt.MaxReason || !strings.HasPrefix(v.Why, "éé") {
		t.Fatalf("Approve = %+v (%d bytes), %v", v, len(v.Why), err)
	}
}

// Two prompts on one reader take one answer each, in order.
func TestApproveSequential(t *testing.T) {
	var out bytes.Buffer
	p := newPrompt(t, strings.NewReader("s\nn\nno thanks\n"), &out, true)
	ctx := approval.WithRules(t.Context(), []string{"Bash(git status)"})
	v1, err1 := p.Approve(ctx, rec)
	v2, err2 := p.Approve(ctx, rec)
	if err1 != nil || err2 != nil || v1.Remember != approval.RememberSession || v2.Approve || v2.Why != "no thanks" {
		t.Fatalf("Approve = %+v, %v; %+v, %v", v1, err1, v2, err2)
	}
}

// A prompt honours its context; a line typed after it gave up is not
// taken as the answer to the next prompt.
func TestApproveContext(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	var out bytes.Buffer
	p := newPrompt(t, pr, &out, true)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := p.Approve(ctx, rec); err == nil {
		t.Fatal("Approve returned no error after its context ended")
	}
	if time.Since(start) > 2*time.Second {
		t.Fatal("Approve did not return at its deadline")
	}
	if _, err := io.WriteString(pw, "y\n"); err != nil { // too late for the first prompt
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	done := make(chan approval.Verdict, 1)
	go func() {
		v, err := p.Approve(t.Context(), rec)
		if err != nil {
			t.Error(err)
		}
		done <- v
	}()
	time.Sleep(50 * time.Millisecond)
	io.WriteString(pw, "n\n\n")
	select {
	case v := <-done:
		if v.Approve {
			t.Error("a late yes for an earlier prompt approved the next one")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second prompt did not finish")
	}
}

// The full screen form starts on No; arrows (or k) move up to the yes
// choices; a no asks for its reason in the same form.
// waitFor marks a step of a key script that waits until the screen shows
// the text after it.
const waitFor = "\x00wait:"

func TestApproveForm(t *testing.T) {
	tests := []struct {
		name     string
		keys     []string
		approve  bool
		remember approval.Remember
		why      string
	}{
		{name: "enter is no", keys: []string{"\r", "\r"}},
		// The reason is typed only once its field is on screen: keys that
		// arrive while huh switches groups would go to the select.
		{name: "no with a reason", keys: []string{"\r", waitFor + "Why not?", "busy", "\r"}, why: "busy"},
		{name: "always", keys: []string{"k", "\r"}, approve: true, remember: approval.RememberAlways},
		{name: "session", keys: []string{"\x1b[A", "\x1b[A", "\r"}, approve: true, remember: approval.RememberSession},
		{name: "once", keys: []string{"k", "k", "k", "\r"}, approve: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out syncbuf.Buffer
			pr, pw := io.Pipe()
			defer pw.Close()
			go func() {
				for _, k := range tt.keys {
					if want, ok := strings.CutPrefix(k, waitFor); ok {
						for !strings.Contains(out.String(), want) {
							time.Sleep(10 * time.Millisecond)
						}
						continue
					}
					time.Sleep(150 * time.Millisecond)
					if _, err := pw.Write([]byte(k)); err != nil {
						return
					}
				}
			}()
			p := newPrompt(t, pr, &out, false)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			v, err := p.Approve(approval.WithRules(ctx, []string{"Write(out/a.md)"}), rec)
			if err != nil {
				t.Fatalf("Approve = %v\n%q", err, out.String())
			}
			if v.Approve != tt.approve || v.Remember != tt.remember || (!tt.approve && v.Why != tt.why) {
				t.Errorf("Approve = %+v, want Approve %v Remember %v Why %q", v, tt.approve, tt.remember, tt.why)
			}
		})
	}
}

// TestBoxEscapes: the box shows every line of a hostile preview — a
// statement hidden by SGR conceal, a cursor move that would overwrite the
// line above, an OSC 52 clipboard write, a bidi override — escaped, and no
// field leaves a raw control byte for the terminal. Empty fields are left
// out, never shown as "-".
func TestBoxEscapes(t *testing.T) {
	r := approval.Record{Request: approval.Request{
		ID: "apr_2", Tool: "Bash\x1b[2J", Target: "process.spawn echo hi\u202e",
		Preview: "echo hi; \x1b[8mrm -rf docs\x1b[0m\nls\x1b[1A\x1b[2K\n\x1b]52;c;cm0gLXJmIH4=\x07\tdone\n",
		Scope:   approval.ScopeOnce, Expires: now.Add(time.Minute),
	}}
	box := prompt.Box(r, now)
	for _, want := range []string{`Bash\x1b[2J`, `process.spawn echo hi\u202e`, `echo hi; \x1b[8mrm -rf docs\x1b[0m`,
		`ls\x1b[1A\x1b[2K`, `\x1b]52;c;cm0gLXJmIH4=\x07    done`} {
		if !strings.Contains(box, want) {
			t.Errorf("the box lacks %q:\n%s", want, box)
		}
	}
	for _, bad := range []string{"\x1b", "\x07", "\u202e", " - "} {
		if strings.Contains(box, bad) {
			t.Errorf("the box holds %q:\n%q", bad, box)
		}
	}
	if strings.Contains(box, "Credential") || strings.Contains(box, "Plugin") {
		t.Errorf("empty fields are shown:\n%s", box)
	}
}
