package policy_test

import (
	"syscall"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/shellcmd"
	"github.com/norma-run/norma/policy"
)

// benchBashRules are the rules of a typical imported Claude Code
// settings file, in the forms every version of the matcher reads (the
// legacy :* prefix and exact commands), so that the benchmark builds on
// an earlier commit too (bench/compare_bash.sh).
var benchBashRules = policy.Rules{
	Allow: []string{"Bash(git status:*)", "Bash(git diff:*)", "Bash(git log:*)", "Bash(npm run test:*)", "Bash(npm run lint)",
		"Bash(ls:*)", "Bash(cat:*)", "Bash(grep:*)", "Bash(find:*)", "Bash(go test:*)", "Read(docs/**)"},
	Ask:  []string{"Bash(git push:*)", "Bash(npm publish:*)"},
	Deny: []string{"Bash(curl:*)", "Bash(rm -rf:*)", "Bash(git push --force:*)", "Read(.env)", "Read(secrets/**)"},
}

// benchBashCommands are command lines the rules above decide.
var benchBashCommands = []struct{ name, cmd string }{
	{"simple", "git status -s"},
	{"pipeline", "cat README.md | grep -n policy"},
	{"wrapper", "timeout 5 git status"},
	{"global", "git -C . log -1 --oneline"},
	{"flags", "find . -name '*.go' -newer go.mod"},
}

// BenchmarkBashRules is the permission-rule part of deciding one Bash
// command: the command line parsed (shellcmd.Parse), its requests made,
// then the deny, ask and allow rules asked in the gate's order.
func BenchmarkBashRules(b *testing.B) {
	s, err := policy.CompileRules(benchBashRules)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range benchBashCommands {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			start, n := cpuTime(), 0
			for b.Loop() {
				n++
				e := shellcmd.Parse(tc.cmd)
				reqs := make([]capability.Request, 0, len(e.Spawns))
				for _, argv := range e.Spawns {
					reqs = append(reqs, capability.Request{Kind: capability.ProcessSpawn, Argv: argv})
				}
				if _, ok := s.Deny("Bash", reqs); ok {
					b.Fatal("denied")
				}
				s.Ask("Bash", reqs)
				s.Allow("Bash", reqs, e.Unknown == "")
			}
			// The process's CPU time per decision: on a loaded machine,
			// wall time also counts the waits for a core.
			b.ReportMetric(float64(cpuTime()-start)/float64(n), "cpu-ns/op")
		})
	}
}

// cpuTime is the user and system CPU time of this process, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
