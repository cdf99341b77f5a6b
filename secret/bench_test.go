package secret

import (
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRedact measures the redactor on tool results of 4 KiB and
// 1 MiB, clean or with secrets in them, against the unredacted baseline
// (copying the text, which every redaction also does when it finds a
// match), with the token formats only and with ten vault values
// (55 distinct value forms). Recorded in BENCHMARKS.md.
func BenchmarkRedact(b *testing.B) {
	tokensOnly := NewRedactor()
	vault, _ := newTestRedactor(b)
	for i := range 8 {
		vault.AddValue(fmt.Sprintf("v%d", i), NewValue([]byte(fmt.Sprintf("value-%d-7Hq2xLp9Zr", i))))
	}
	lorem := strings.Repeat("lorem ipsum dolor sit amet, consectetur adipiscing elit; ", 72)[:4096]
	withSecrets := lorem[:1000] + canary + lorem[1000:2000] + ghClassic + lorem[2000:3000] + jwt + lorem[3000:]
	for _, size := range []struct {
		name string
		n    int
	}{{"4KiB", 1}, {"1MiB", 256}} {
		clean := strings.Repeat(lorem, size.n)
		dirty := strings.Repeat(withSecrets, size.n)
		for _, bc := range []struct {
			name string
			in   string
			f    func(string) string
		}{
			{"baseline copy", clean, func(s string) string { return strings.Clone(s) }},
			{"tokens only/clean", clean, tokensOnly.Redact},
			{"10 values/clean", clean, vault.Redact},
			{"10 values/3 secrets per 4KiB", dirty, vault.Redact},
		} {
			b.Run(size.name+"/"+bc.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(bc.in)))
				for b.Loop() {
					bc.f(bc.in)
				}
			})
		}
	}
	// The pattern set and text of the benchmark before the token formats
	// (main's BenchmarkRedact/clean and /one secret), for comparison.
	small, _ := newTestRedactor(b)
	old := strings.Repeat("lorem ipsum dolor sit amet ", 150)
	for _, bc := range []struct{ name, in string }{{"clean", old}, {"one secret", old[:2000] + canary + old[2000:]}} {
		b.Run("previous set/"+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.in)))
			for b.Loop() {
				small.Redact(bc.in)
			}
		})
	}
	b.Run("1MiB/writer 32KiB writes", func(b *testing.B) {
		in := []byte(strings.Repeat(withSecrets, 256))
		b.ReportAllocs()
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			w := vault.Writer(io.Discard)
			for i := 0; i < len(in); i += 32 << 10 {
				w.Write(in[i:min(len(in), i+32<<10)])
			}
			w.Close()
		}
	})
	b.Run("mask reader 1MiB", func(b *testing.B) {
		in := strings.Repeat(lorem, 256)
		b.ReportAllocs()
		b.SetBytes(int64(len(in)))
		buf := make([]byte, 32<<10)
		for b.Loop() {
			io.CopyBuffer(io.Discard, vault.MaskReader(strings.NewReader(in)), buf)
		}
	})
}

// BenchmarkDetect measures the egress detector (every detector and every
// normalization layer) on a 4 KiB JSON request body and on 4 KiB of
// prose, clean, with the token formats and ten vault values, beside the
// redactor's scan of the same text (the reference: one pass of the
// matcher). The bound is 1 µs per 100 bytes at the median
// (41 µs for 4 KiB). Recorded in BENCHMARKS.md.
func BenchmarkDetect(b *testing.B) {
	r, _ := newTestRedactor(b)
	for i := range 9 {
		r.AddValue(fmt.Sprintf("v%d", i), NewValue([]byte(fmt.Sprintf("value-%d-7Hq2xLp9Zr", i))))
	}
	lorem := strings.Repeat("lorem ipsum dolor sit amet, consectetur adipiscing elit; ", 72)[:4096]
	var js strings.Builder
	js.WriteString(`{"messages":[`)
	for i := 0; js.Len() < 4100; i++ {
		fmt.Fprintf(&js, `{"role":"user","id":"msg_%06d","content":"Please summarise the report for quarter %d and list the open issues."},`, i, i%4+1)
	}
	body := js.String()[:4094] + "]}"
	for _, bc := range []struct{ name, in string }{{"json 4KiB", body}, {"prose 4KiB", lorem}} {
		b.Run(bc.name+"/redact (reference)", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.in)))
			cpu0, n := cpuNow(), 0
			for b.Loop() {
				r.Redact(bc.in)
				n++
			}
			reportCPU(b, cpu0, n)
		})
		b.Run(bc.name+"/detect", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.in)))
			cpu0, n := cpuNow(), 0
			for b.Loop() {
				if r.DetectString(bc.in) != nil {
					b.Fatal("finding in clean text")
				}
				n++
			}
			reportCPU(b, cpu0, n)
		})
	}
}

// cpuNow is the process's CPU time (user and system). On a shared
// machine wall ns/op swings with other load; cpu-ns/op is what the work
// costs.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, cpu0 time.Duration, n int) {
	if n > 0 {
		b.ReportMetric(float64(cpuNow()-cpu0)/float64(n), "cpu-ns/op")
	}
}
