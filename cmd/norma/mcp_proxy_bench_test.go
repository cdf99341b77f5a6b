package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMCPProxyCallDoor: the cost of a tools/call through the built
// `norma mcp proxy` beside the same call made directly, interleaved in
// one run (each iteration calls the fixture's echo directly, then
// through the proxy; then 20 calls of its 1 MiB "big" both ways): the medians of
// each, the proxy's overhead at the median, and the proxy process's own
// CPU time per echo call (user + system, from /proc: what the proxy
// costs, apart from the waits a loaded machine adds). The proxied call goes
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
	cpu0 := procCPU(b, pc.Process.Pid)
	n := 0
	for b.Loop() {
		de = append(de, call(direct, "echo"))
		pe = append(pe, call(proxied, "echo"))
		n++
	}
	cpu := procCPU(b, pc.Process.Pid) - cpu0
	for range 20 {
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
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(n), "echo-proxy-cpu-ms")
	b.ReportMetric(med(db), "1MiB-direct-ms")
	b.ReportMetric(med(pb), "1MiB-proxy-ms")
	b.ReportMetric(0, "ns/op")
}

// procCPU is the user + system CPU time of process pid so far.
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command's closing parenthesis: utime is the
	// 12th, stime the 13th (fields 14 and 15 of proc(5)), in ticks.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}
