package sandbox_test

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox"
)

// TestExposedIsWhatTheSandboxShows: every path Exposed reports that the
// host has is there inside a sandbox with no grants, and host paths it
// does not report are not (the host's /tmp, /root, /home, /var and the
// rest of /etc): Exposed is the list the sandbox mounts, for the callers
// that decide what a command outside the sandbox could not have reached.
func TestExposedIsWhatTheSandboxShows(t *testing.T) {
	requireSandbox(t)
	probe, err := os.CreateTemp("", "exposed-probe-")
	if err != nil {
		t.Fatal(err)
	}
	probe.Close()
	defer os.Remove(probe.Name())
	for _, m := range []sandbox.NetworkMode{sandbox.NetNone, sandbox.NetBroker} {
		var shown, hidden []string
		for _, p := range sandbox.Exposed(m) {
			if _, err := os.Lstat(p); err == nil {
				shown = append(shown, p)
			}
		}
		for _, p := range []string{probe.Name(), "/root", "/home", "/var", "/etc/shadow", "/etc/hostname", "/etc/resolv.conf", "/opt", "/srv"} {
			if _, err := os.Lstat(p); err == nil {
				hidden = append(hidden, p)
			}
		}
		script := `for p in "$@"; do case $p in +*) [ -e "${p#+}" ] || echo "missing ${p#+}";; -*) [ -e "${p#-}" ] && echo "visible ${p#-}";; esac; done; true`
		argv := []string{"sh", "-c", script, "sh"}
		for _, p := range shown {
			argv = append(argv, "+"+p)
		}
		for _, p := range hidden {
			argv = append(argv, "-"+p)
		}
		s := sandbox.Spec{Argv: argv, Env: []string{"PATH=/usr/bin:/bin"}, Network: m}
		if m == sandbox.NetBroker {
			s.Broker = func(_ context.Context, c net.Conn) { c.Close() }
		}
		res, o := run(t, s)
		if res.ExitCode != 0 || strings.TrimSpace(o.stdout.String()) != "" {
			t.Errorf("%v: exit %d\n%s%s", m, res.ExitCode, o.stdout.String(), o.stderr.String())
		}
		if len(shown) < 3 || len(hidden) < 2 {
			t.Fatalf("%v: too little to compare: shown %v hidden %v", m, shown, hidden)
		}
	}
}
