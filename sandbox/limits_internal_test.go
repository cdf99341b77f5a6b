package sandbox

import "testing"

// TestLimitCgroupWithoutCgroups: where no cgroup is writable, a memory
// limit becomes RLIMIT_AS (never above an explicit AS), and a process
// limit as root is refused rather than left unenforced.
func TestLimitCgroupWithoutCgroups(t *testing.T) {
	none := func() cgroupInfo { return cgroupInfo{} }
	tests := []struct {
		name    string
		limits  Limits
		uid     int
		wantAS  uint64
		want    MemoryLimit
		refused bool
	}{
		{"nothing", Limits{}, 1000, 0, MemoryLimit{}, false},
		{"memory becomes RLIMIT_AS", Limits{Memory: 4 << 30}, 1000, 4 << 30, MemoryLimit{4 << 30, MemoryRlimitAS}, false},
		{"a lower AS stays", Limits{Memory: 4 << 30, AS: 1 << 30}, 1000, 1 << 30, MemoryLimit{1 << 30, MemoryRlimitAS}, false},
		{"a higher AS is lowered", Limits{Memory: 1 << 30, AS: 8 << 30}, 1000, 1 << 30, MemoryLimit{1 << 30, MemoryRlimitAS}, false},
		{"AS alone", Limits{AS: 2 << 30}, 0, 2 << 30, MemoryLimit{2 << 30, MemoryRlimitAS}, false},
		{"memory as root", Limits{Memory: 4 << 30}, 0, 4 << 30, MemoryLimit{4 << 30, MemoryRlimitAS}, false},
		{"nproc as non-root is RLIMIT_NPROC", Limits{NProc: 8, Memory: 1 << 30}, 1000, 1 << 30, MemoryLimit{1 << 30, MemoryRlimitAS}, false},
		{"nproc as root needs a pids cgroup", Limits{NProc: 8, Memory: 1 << 30}, 0, 0, MemoryLimit{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &initConfig{Limits: tt.limits, UID: tt.uid}
			cg, mem, err := limitCgroup(cfg, none)
			if cg != nil {
				t.Fatalf("a cgroup without any writable hierarchy: %+v", cg)
			}
			if tt.refused {
				if err == nil {
					t.Fatalf("limitCgroup(%+v) = nil error, want a refusal", tt.limits)
				}
				return
			}
			if err != nil || cfg.Limits.AS != tt.wantAS || mem != tt.want {
				t.Fatalf("limitCgroup(%+v) = AS %d, %+v, %v; want AS %d, %+v", tt.limits, cfg.Limits.AS, mem, err, tt.wantAS, tt.want)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	good := map[string]uint64{"0": 0, "512": 512, "1B": 1, "1K": 1 << 10, "1kib": 1 << 10, "1KB": 1 << 10,
		"256M": 256 << 20, "256MiB": 256 << 20, "4G": 4 << 30, "4 GiB": 4 << 30, "1T": 1 << 40, "16777215T": 16777215 << 40}
	for in, want := range good {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
		if got, err := ParseSize(FormatSize(want)); err != nil || got != want {
			t.Errorf("ParseSize(FormatSize(%d) = %q) = %d, %v", want, FormatSize(want), got, err)
		}
	}
	for _, in := range []string{"", "G", "-1G", "+1G", "1.5G", "1 G ", "1  G", "1iB", "1X", "1GG", "0x10", "16777216T", "18446744073709551616"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
	if got := FormatSize(4 << 30); got != "4 GiB" {
		t.Errorf("FormatSize(4 GiB) = %q", got)
	}
	if got := FormatSize(1536); got != "1536 B" {
		t.Errorf("FormatSize(1536) = %q", got)
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"4G", "256MiB", "1 kb", "0", "18446744073709551615", "16777216T"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
			t.Fatalf("ParseSize(%q) = %d, but FormatSize gives %q which parses to %d, %v", s, n, FormatSize(n), back, err)
		}
	})
}

// BenchmarkRunCgroup is the host-side cost of the per-run cgroup as root:
// probe, create, set the limits and remove, with the pids limit alone
// (what NProc needed before memory was bounded) and with the memory limit.
func BenchmarkRunCgroup(b *testing.B) {
	for _, bc := range []struct {
		name       string
		nproc, mem uint64
	}{{"pids", 64, 0}, {"pids+memory", 64, 4 << 30}} {
		b.Run(bc.name, func(b *testing.B) {
			ci := probeCgroups()
			if ci.pidsParent == "" || bc.mem > 0 && ci.memParent == "" {
				b.Skip("no writable cgroup here")
			}
			for b.Loop() {
				cg, err := newCgroup(probeCgroups(), bc.nproc, bc.mem)
				if err != nil {
					b.Fatal(err)
				}
				cg.remove()
			}
		})
	}
}
