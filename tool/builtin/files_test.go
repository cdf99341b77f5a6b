package builtin_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/tool/builtin"
)

func TestRead(t *testing.T) {
	f := newFixture(t, fixtureOpts{cfg: builtin.Config{MaxReadBytes: 1 << 16}})
	var long strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&long, "line %d\n", i)
	}
	f.write(t, map[string]string{
		"a.txt":           "alpha\r\nbeta\ngamma",
		"long.txt":        long.String(),
		"bin.dat":         "ab\x00cd",
		"big.txt":         strings.Repeat("x", 1<<16+1),
		"empty.txt":       "",
		".env":            "TOKEN=hunter2",
		"sub/.env.local":  "TOKEN=hunter2",
		"private/key.txt": "TOKEN=hunter2",
	})
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "o.txt"), []byte("TOKEN=hunter2"), 0o644)
	os.Symlink(filepath.Join(outside, "o.txt"), filepath.Join(f.dir, "escape"))
	os.Symlink(".env", filepath.Join(f.dir, "envlink"))

	tests := []struct {
		name   string
		input  string
		reason capability.Reason
		ran    bool
		want   []string
		not    []string
	}{
		{name: "numbered", input: `{"path":"a.txt"}`, want: []string{"     1\talpha\n", "     2\tbeta\n", "     3\tgamma\n"}, not: []string{"\r"}},
		{name: "offset limit", input: `{"path":"long.txt","offset":10,"limit":2}`, want: []string{"    10\tline 10\n    11\tline 11\n", "continue with offset 12", "showing lines 10-11"}, not: []string{"line 9\n", "line 12\n"}},
		{name: "default limit", input: `{"path":"long.txt"}`, want: []string{"showing lines 1-2000; 500 more lines follow", "     1\tline 1\n"}, not: []string{"line 2001"}},
		{name: "past end", input: `{"path":"a.txt","offset":9}`, want: []string{"offset 9 is past the end"}},
		{name: "empty", input: `{"path":"empty.txt"}`, want: []string{"empty"}},
		{name: "binary", input: `{"path":"bin.dat"}`, reason: capability.ReasonFileBinary, ran: true},
		{name: "too large", input: `{"path":"big.txt"}`, reason: capability.ReasonFileTooLarge, ran: true},
		{name: "directory", input: `{"path":"sub"}`, reason: capability.ReasonInvalidRequest, ran: true},
		{name: "missing", input: `{"path":"nope.txt"}`, reason: capability.ReasonFileNotFound, ran: true},
		{name: "dotenv denied", input: `{"path":".env"}`, reason: capability.ReasonFilesystemReadDenied},
		{name: "nested dotenv denied", input: `{"path":"sub/.env.local"}`, reason: capability.ReasonFilesystemReadDenied},
		{name: "workspace deny", input: `{"path":"private/key.txt"}`, reason: capability.ReasonFilesystemReadDenied},
		{name: "dotdot escape", input: `{"path":"../x"}`, reason: capability.ReasonPathEscape},
		{name: "absolute", input: `{"path":"/etc/passwd"}`, reason: capability.ReasonPathEscape},
		{name: "symlink out", input: `{"path":"escape"}`, reason: capability.ReasonPathEscape},
		{name: "symlink to dotenv", input: `{"path":"envlink"}`, reason: capability.ReasonFilesystemReadDenied},
		{name: "unknown field", input: `{"path":"a.txt","x":1}`, reason: capability.ReasonSchemaInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.call(t, "Read", tt.input)
			if tt.reason != "" {
				wantReason(t, r, tt.reason)
				if got := f.ran(r); got != tt.ran {
					t.Errorf("Read(%s): handler ran = %v, want %v", tt.input, got, tt.ran)
				}
				if strings.Contains(r.Content, "hunter2") {
					t.Fatalf("Read(%s) leaked the secret: %q", tt.input, r.Content)
				}
				return
			}
			wantOK(t, r)
			for _, w := range tt.want {
				if !strings.Contains(r.Content, w) {
					t.Errorf("Read(%s) = %q, want it to contain %q", tt.input, short(r.Content), w)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(r.Content, w) {
					t.Errorf("Read(%s) = %q, must not contain %q", tt.input, short(r.Content), w)
				}
			}
		})
	}
}

func TestWriteEditMultiEdit(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.write(t, map[string]string{
		"e.txt":         "one two two three\n",
		"m.txt":         "a b c\n",
		".env":          "TOKEN=hunter2\n",
		"private/p.txt": "keep\n",
		"exec.sh":       "echo hi\n",
	})
	os.Chmod(filepath.Join(f.dir, "exec.sh"), 0o755)
	tests := []struct {
		name   string
		tool   string
		input  string
		reason capability.Reason
		file   string
		want   string // content of file afterwards
	}{
		{name: "write new nested", tool: "Write", input: `{"path":"out/r/new.md","content":"hello\n"}`, file: "out/r/new.md", want: "hello\n"},
		{name: "write overwrite keeps mode", tool: "Write", input: `{"path":"exec.sh","content":"echo bye\n"}`, file: "exec.sh", want: "echo bye\n"},
		{name: "write dotenv denied", tool: "Write", input: `{"path":".env","content":"X"}`, reason: capability.ReasonFilesystemWriteDenied, file: ".env", want: "TOKEN=hunter2\n"},
		{name: "write new dotenv denied", tool: "Write", input: `{"path":"sub/.env","content":"X"}`, reason: capability.ReasonFilesystemWriteDenied, file: "sub/.env"},
		{name: "write private denied", tool: "Write", input: `{"path":"private/p.txt","content":"X"}`, reason: capability.ReasonFilesystemWriteDenied, file: "private/p.txt", want: "keep\n"},
		{name: "write escape", tool: "Write", input: `{"path":"../evil.txt","content":"X"}`, reason: capability.ReasonPathEscape},
		{name: "edit unique", tool: "Edit", input: `{"path":"e.txt","old_string":"one","new_string":"1"}`, file: "e.txt", want: "1 two two three\n"},
		{name: "edit ambiguous", tool: "Edit", input: `{"path":"e.txt","old_string":"two","new_string":"2"}`, reason: capability.ReasonEditAmbiguous, file: "e.txt", want: "1 two two three\n"},
		{name: "edit replace all", tool: "Edit", input: `{"path":"e.txt","old_string":"two","new_string":"2","replace_all":true}`, file: "e.txt", want: "1 2 2 three\n"},
		{name: "edit no match", tool: "Edit", input: `{"path":"e.txt","old_string":"four","new_string":"4"}`, reason: capability.ReasonEditNoMatch, file: "e.txt", want: "1 2 2 three\n"},
		{name: "edit same", tool: "Edit", input: `{"path":"e.txt","old_string":"1","new_string":"1"}`, reason: capability.ReasonInvalidRequest, file: "e.txt", want: "1 2 2 three\n"},
		{name: "edit dotenv denied", tool: "Edit", input: `{"path":".env","old_string":"hunter2","new_string":"x"}`, reason: capability.ReasonFilesystemReadDenied, file: ".env", want: "TOKEN=hunter2\n"},
		{name: "edit missing", tool: "Edit", input: `{"path":"nope","old_string":"a","new_string":"b"}`, reason: capability.ReasonFileNotFound, file: "nope"},
		{name: "multiedit all", tool: "MultiEdit", input: `{"path":"m.txt","edits":[{"old_string":"a","new_string":"A"},{"old_string":"A b","new_string":"AB"}]}`, file: "m.txt", want: "AB c\n"},
		{name: "multiedit atomic", tool: "MultiEdit", input: `{"path":"m.txt","edits":[{"old_string":"c","new_string":"C"},{"old_string":"zzz","new_string":"y"}]}`, reason: capability.ReasonEditNoMatch, file: "m.txt", want: "AB c\n"},
		{name: "multiedit private denied", tool: "MultiEdit", input: `{"path":"private/p.txt","edits":[{"old_string":"keep","new_string":"x"}]}`, reason: capability.ReasonFilesystemReadDenied, file: "private/p.txt", want: "keep\n"},
		{name: "multiedit empty edits", tool: "MultiEdit", input: `{"path":"m.txt","edits":[]}`, reason: capability.ReasonSchemaInvalid, file: "m.txt", want: "AB c\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.call(t, tt.tool, tt.input)
			if tt.reason != "" {
				wantReason(t, r, tt.reason)
			} else {
				wantOK(t, r)
			}
			if tt.file == "" {
				return
			}
			if tt.want == "" {
				if f.exists(tt.file) {
					t.Fatalf("%s(%s) created %s", tt.tool, tt.input, tt.file)
				}
				return
			}
			if got := f.read(t, tt.file); got != tt.want {
				t.Fatalf("%s(%s): %s = %q, want %q", tt.tool, tt.input, tt.file, got, tt.want)
			}
		})
	}
	if fi, _ := os.Stat(filepath.Join(f.dir, "exec.sh")); fi.Mode().Perm() != 0o755 {
		t.Errorf("Write changed exec.sh's mode to %v", fi.Mode().Perm())
	}
	if f.exists("sub") || f.exists("../evil.txt") {
		t.Errorf("a denied write created a directory or escaped")
	}
}

// TestWriteNeedsApproval: Write is not allowed by the tool itself; without
// an approver it is refused before anything is written.
func TestWriteNeedsApproval(t *testing.T) {
	f := newFixture(t, fixtureOpts{approver: gatetest.AuthorizerFunc(func(ctxT, approval.Request) (approval.Ticket, error) {
		return approval.Ticket{}, errDenied
	})})
	r := f.call(t, "Write", `{"path":"x.txt","content":"x"}`)
	wantReason(t, r, capability.ReasonApprovalDenied)
	if f.exists("x.txt") {
		t.Fatal("a refused Write created the file")
	}
}

func TestLS(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.write(t, map[string]string{"b.txt": "", "a.go": "", "dir/x": "", ".env": "T", "private/k": "", "skip.log": ""})
	os.Symlink("a.go", filepath.Join(f.dir, "ln"))
	r := f.call(t, "LS", `{"ignore":["*.log"]}`)
	wantOK(t, r)
	if want := "dir/\na.go\nb.txt\nln@"; r.Content != want {
		t.Fatalf("LS = %q, want %q (denied .env and private/ and ignored *.log left out)", r.Content, want)
	}
	wantReason(t, f.call(t, "LS", `{"path":"private"}`), capability.ReasonFilesystemReadDenied)
	wantReason(t, f.call(t, "LS", `{"path":".."}`), capability.ReasonPathEscape)
	wantReason(t, f.call(t, "LS", `{"path":"nope"}`), capability.ReasonFileNotFound)
}

func TestGlob(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.write(t, map[string]string{
		"src/a.go": "", "src/deep/b.go": "", "src/c.txt": "", "top.go": "",
		"private/p.go": "", ".git/x.go": "", "node_modules/m.go": "", "sub/.env.go": "",
	})
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(f.dir, "src/a.go"), old, old)
	tests := []struct {
		name, input string
		want        string
		reason      capability.Reason
	}{
		{name: "all go newest first", input: `{"pattern":"**/*.go"}`, want: "src/deep/b.go\ntop.go\nsrc/a.go"},
		{name: "literal prefix", input: `{"pattern":"src/**/*.go"}`, want: "src/deep/b.go\nsrc/a.go"},
		{name: "under path", input: `{"pattern":"*.go","path":"src"}`, want: "src/a.go"},
		{name: "no match", input: `{"pattern":"*.rs"}`, want: "no files match *.rs"},
		{name: "missing prefix", input: `{"pattern":"nope/**"}`, want: "no files match nope/**"},
		{name: "denied dir yields nothing", input: `{"pattern":"private/*.go"}`, want: "no files match private/*.go"},
		{name: "escape pattern", input: `{"pattern":"../**"}`, reason: capability.ReasonPathEscape},
		{name: "escape path", input: `{"pattern":"*","path":".."}`, reason: capability.ReasonPathEscape},
		{name: "bad pattern", input: `{"pattern":"[a"}`, reason: capability.ReasonInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.call(t, "Glob", tt.input)
			if tt.reason != "" {
				wantReason(t, r, tt.reason)
				return
			}
			wantOK(t, r)
			// b.go and top.go have near-equal mtimes: compare as sets when
			// the order between them is not defined.
			if got := sortedIfTie(r.Content); got != sortedIfTie(tt.want) {
				t.Fatalf("Glob(%s) = %q, want %q", tt.input, r.Content, tt.want)
			}
		})
	}
}

// sortedIfTie keeps the last line (the old file) last and sorts the rest.
func sortedIfTie(s string) string {
	l := strings.Split(s, "\n")
	if len(l) < 3 {
		return s
	}
	head := l[:len(l)-1]
	for i := range head {
		for j := i + 1; j < len(head); j++ {
			if head[j] < head[i] {
				head[i], head[j] = head[j], head[i]
			}
		}
	}
	return strings.Join(append(head, l[len(l)-1]), "\n")
}
