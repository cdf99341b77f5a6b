package deptest

import (
	"os/exec"
	"strings"
	"testing"
)

// frontBad are what the front build of norma (cmd/norma built with
// -tags norma_front, the binary that starts at every hook, explain and
// sandbox exec) must not link: their package initializers and size are
// its start-up cost (BENCHMARKS.md, "Cold start — issue 20"). The
// commands that need them run in norma-full.
var frontBad = map[string]string{
	"github.com/openai/openai-go/...":            "model SDK: norma run",
	"github.com/anthropics/anthropic-sdk-go/...": "model SDK: norma run",
	"github.com/charmbracelet/...":               "terminal UI: norma run",
	"go.opentelemetry.io/otel/sdk/...":           "trace export: norma run",
	m("team/..."):                                "team server: norma serve --team",
	m("provider/anthropic"):                      "model provider: norma run",
	m("provider/openai"):                         "model provider: norma run",
	m("demo"):                                    "norma demo",
	m("plugin/mcpadd"):                           "norma mcp",
	m("audit/metrics"):                           "norma serve --team",
	"github.com/elastic/go-seccomp-bpf/...":      "the seccomp filter is assembled by sandbox/seccompgen at go generate time and embedded",
}

func TestFrontDeps(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to read the import graph: %v", err)
	}
	for _, g := range goos {
		cmd := exec.Command(goBin, "list", "-tags", "norma_front", "-deps", "./cmd/norma")
		cmd.Dir = "../.."
		cmd.Env = append(cmd.Environ(), "GOOS="+g, "GOFLAGS=-mod=readonly")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("GOOS=%s go list -tags norma_front: %v\n%s", g, err, out)
		}
		for dep := range strings.FieldsSeq(string(out)) {
			for bad, why := range frontBad {
				if matches(bad, dep) {
					t.Errorf("GOOS=%s: the front build links %s (%s)", g, dep, why)
				}
			}
		}
	}
}
