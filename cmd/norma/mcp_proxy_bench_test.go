package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMCPProxyCallDoor: the cost of a tools/call through the built
// `norma mcp proxy` beside the same call made directly, interleaved in
// one run (each iteration calls the fixture's echo directly, then
// through the proxy, then its 1 MiB "big" both ways): the medians of
// each, and the proxy's overhead at the median. The proxied call goes
// through the gate (policy, audit with its fsync, redaction, the output
// cap that spills a large result) and the plugin's sandbox.
//
//	go test -run '^$' -bench BenchmarkMCPProxyCallDoor -benchtime 200x ./cmd/norma/
func BenchmarkMCPProxyCallDoor(b *testing.B) {
	mf := fixturePackageWith(b, fixtureManifest)
	home, ws := b.TempDir(), b.TempDir()
	bin := b.TempDir()
	build := exec.Command("scripts/build", bin)
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("scripts/build: %v\n%s", err, out)
	}
	connect := func(cmd *exec.Cmd) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		s, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}
	direct := connect(exec.Command(filepath.Join(filepath.Dir(mf), "mcpfixture")))
	pc := exec.Command(filepath.Join(bin, "norma"), "--home", home, "mcp", "proxy", "--manifest", mf, "--", "./mcpfixture")
	pc.Dir = ws
	proxied := connect(pc)
	ctx := context.Background()
	call := func(s *mcp.ClientSession, tool string) time.Duration {
		start := time.Now()
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "hello"}})
		d := time.Since(start)
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %v", tool, err, res)
		}
		return d
	}
	// Warm both (the proxy's first call starts nothing: the server runs).
	for range 5 {
		call(direct, "echo")
		call(proxied, "echo")
	}
	var de, pe, db, pb []time.Duration
	for b.Loop() {
		de = append(de, call(direct, "echo"))
		pe = append(pe, call(proxied, "echo"))
		db = append(db, call(direct, "big"))
		pb = append(pb, call(proxied, "big"))
	}
	med := func(ds []time.Duration) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[len(s)/2].Microseconds()) / 1000
	}
	b.ReportMetric(med(de), "echo-direct-ms")
	b.ReportMetric(med(pe), "echo-proxy-ms")
	b.ReportMetric(med(pe)-med(de), "echo-overhead-ms")
	b.ReportMetric(med(db), "1MiB-direct-ms")
	b.ReportMetric(med(pb), "1MiB-proxy-ms")
	b.ReportMetric(0, "ns/op")
}
