package shell

import (
	"strings"
	"testing"

	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/sandbox/sandboxpolicy"
)

// TestBashMemoryLimit: a Bash command whose pipeline holds 600 MB (tail -c
// keeps what it will print) runs under a 256 MiB limit and never gets
// there. With a memory cgroup the tool result says the memory limit was
// exceeded, even though the pipeline's last command exits 0; under
// RLIMIT_AS tail reports that its allocation failed.
func TestBashMemoryLimit(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, fixtureOpts{
		rules: policy.Rules{Allow: []string{"Bash(head:*)", "Bash(tail:*)", "Bash(wc:*)"}},
		runner: func(c *sandboxpolicy.RunnerConfig) {
			c.Limits = sandboxpolicy.DefaultLimits
			c.Limits.Memory = 256 << 20
		},
	})
	const cmd = "head -c 600000000 /dev/zero | tail -c 600000000 | wc -c"
	res, err := f.call(t, "Bash", map[string]any{"command": cmd})
	if err != nil {
		t.Fatalf("Bash(%q) error = %v", cmd, err)
	}
	if strings.Contains(res.Content, "600000000\n") {
		t.Fatalf("Bash(%q) = %q: the pipeline held 600 MB under a 256 MiB limit", cmd, res.Content)
	}
	if sandbox.Probe().Memory == sandbox.MemoryRlimitAS {
		if !strings.Contains(res.Content, "tail:") {
			t.Fatalf("Bash(%q) under RLIMIT_AS = %q, want tail's allocation failure", cmd, res.Content)
		}
		return
	}
	if !res.IsError || !strings.Contains(res.Content, "[memory limit exceeded; the kernel killed a process of the command]") {
		t.Fatalf("Bash(%q) = %q (error %v), want the memory limit reported as an error", cmd, res.Content, res.IsError)
	}
}
