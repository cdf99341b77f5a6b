package plugin

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

var large = flag.Bool("large", false, "run the 200 MB / 20,000 file verify comparison against sha256sum")

// makeBigPackage writes a signed package of n files of size bytes each
// (plus the issue-helper fixture) under a temporary directory.
func makeBigPackage(tb testing.TB, n, size int) (string, ed25519Key) {
	tb.Helper()
	dir := copyFixture(tb, "issue-helper-1.4.0")
	buf := make([]byte, size)
	for i := range n {
		sub := filepath.Join(dir, "data", fmt.Sprintf("%03d", i%100))
		if i < 100 {
			os.MkdirAll(sub, 0o755)
		}
		// Distinct, incompressible-enough content per file.
		h := sha256.Sum256([]byte(fmt.Sprint(i)))
		for j := 0; j < size; j += len(h) {
			copy(buf[j:], h[:])
			h = sha256.Sum256(h[:])
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%05d.bin", i)), buf, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	key := testKey(5)
	if _, err := Sign(tb.Context(), dir, key, &SignOptions{Now: fixedNow}); err != nil {
		tb.Fatal(err)
	}
	return dir, key
}

type ed25519Key = []byte

// TestVerifyThroughputVsSha256sum verifies a 200 MB package of 20,000
// files and compares the time with `sha256sum` over the same files in the
// same run (warm page cache for both: each is run twice, best time kept).
// Run with: go test ./plugin -run ThroughputVsSha256sum -large -v
func TestVerifyThroughputVsSha256sum(t *testing.T) {
	if !*large {
		t.Skip("pass -large")
	}
	if _, err := exec.LookPath("sha256sum"); err != nil {
		t.Skip("no sha256sum")
	}
	dir, key := makeBigPackage(t, 20000, 10*1024)
	total := int64(20000 * 10 * 1024)
	best := func(f func() error) time.Duration {
		var b time.Duration
		for i := range 3 {
			start := time.Now()
			if err := f(); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); i == 0 || d < b {
				b = d
			}
		}
		return b
	}
	sum := best(func() error {
		cmd := exec.Command("sh", "-c", "find . -type f ! -name package.sig -print0 | xargs -0 sha256sum > /dev/null")
		cmd.Dir = dir
		return cmd.Run()
	})
	ver := best(func() error {
		_, err := Verify(t.Context(), dir, &VerifyOptions{PublicKey: pub(key)})
		return err
	})
	ver1 := best(func() error {
		_, err := HashDir(t.Context(), dir, &HashOptions{Workers: 1})
		return err
	})
	mbps := func(d time.Duration) float64 { return float64(total) / d.Seconds() / 1e6 }
	ratio := ver.Seconds() / sum.Seconds()
	t.Logf("sha256sum:            %v (%.0f MB/s)", sum, mbps(sum))
	t.Logf("Verify (parallel):    %v (%.0f MB/s), %.2f× sha256sum time", ver, mbps(ver), ratio)
	t.Logf("HashDir (1 worker):   %v (%.0f MB/s), %.2f× sha256sum time", ver1, mbps(ver1), ver1.Seconds()/sum.Seconds())
	if ratio > 1.5 {
		t.Errorf("Verify took %.2f× the time of sha256sum, want ≤ 1.5×", ratio)
	}
}

func BenchmarkMerkleRoot(b *testing.B) {
	for _, n := range []int{10, 1000, 20000} {
		files := make([]File, n)
		for i := range files {
			files[i] = File{Path: fmt.Sprintf("data/f%05d.bin", i), Mode: ModeFile, Size: 10240, SHA256: sha256.Sum256([]byte{byte(i)})}
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				MerkleRoot(files)
			}
		})
	}
}

func BenchmarkVerify(b *testing.B) {
	dir, key := makeBigPackage(b, 1000, 10*1024)
	b.SetBytes(1000 * 10 * 1024)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Verify(b.Context(), dir, &VerifyOptions{PublicKey: pub(key)}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnpack(b *testing.B) {
	dir, _ := makeBigPackage(b, 1000, 10*1024)
	var archive bytes.Buffer
	if err := Pack(b.Context(), dir, &archive, nil); err != nil {
		b.Fatal(err)
	}
	work := b.TempDir()
	b.SetBytes(1000 * 10 * 1024)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		dst := filepath.Join(work, fmt.Sprint(i))
		if _, err := Unpack(b.Context(), bytes.NewReader(archive.Bytes()), dst, nil); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.RemoveAll(dst)
		b.StartTimer()
	}
}

func BenchmarkPack(b *testing.B) {
	dir, _ := makeBigPackage(b, 1000, 10*1024)
	b.SetBytes(1000 * 10 * 1024)
	b.ReportAllocs()
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := Pack(b.Context(), dir, &buf, nil); err != nil {
			b.Fatal(err)
		}
	}
}
