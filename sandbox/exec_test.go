package sandbox_test

import (
	"debug/elf"
	"path/filepath"
	"testing"

	"github.com/norma-run/norma/sandbox"
)

// interp returns the ELF interpreter of a dynamically linked program.
func interp(t *testing.T, prog string) string {
	t.Helper()
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			p.ReadAt(b, 0)
			return string(b[:len(b)-1])
		}
	}
	return ""
}

// TestExecOnly: with ExecOnly the shell itself runs, but nothing else can be
// executed — not /bin/true, not a copy written to /tmp.
func TestExecOnly(t *testing.T) {
	requireSandbox(t)
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	allow := []string{sh}
	if i := interp(t, sh); i != "" {
		allow = append(allow, i)
	}
	script := `/bin/true && echo TRUE-RAN; cp /bin/true /tmp/t && /tmp/t && echo COPY-RAN; exit 0`
	for _, tc := range []struct {
		name     string
		execOnly []string
		ran      bool
	}{
		{"unrestricted (control)", nil, true},
		{"exec only the shell", allow, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, o := run(t, sandbox.Spec{Argv: []string{sh, "-c", script}, ExecOnly: tc.execOnly, Env: []string{"PATH=/usr/bin:/bin"}})
			out := o.stdout.String()
			if res.ExitCode != 0 {
				t.Fatalf("exit %d, stderr %s", res.ExitCode, o.stderr.String())
			}
			if got := out == "TRUE-RAN\nCOPY-RAN\n"; got != tc.ran {
				t.Fatalf("stdout %q (stderr %q); want programs to run: %v", out, o.stderr.String(), tc.ran)
			}
			if !tc.ran && out != "" {
				t.Fatalf("something executed: %q", out)
			}
		})
	}
}
