package mcpadd

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// writeWheel writes normatest_echo-0.1.0-py3-none-any.whl into dir: the
// echo server as a distribution with a console script normatest-echo, so
// that pip installs it from dir with no index (PIP_NO_INDEX, PIP_FIND_LINKS).
func writeWheel(t *testing.T, dir string) {
	t.Helper()
	src, err := os.ReadFile("testdata/echo_server.py")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"normatest_echo/__init__.py":                      string(src),
		"normatest_echo/__main__.py":                      "from normatest_echo import main\nmain()\n",
		"normatest_echo-0.1.0.dist-info/METADATA":         "Metadata-Version: 2.1\nName: normatest-echo\nVersion: 0.1.0\n\n",
		"normatest_echo-0.1.0.dist-info/WHEEL":            "Wheel-Version: 1.0\nGenerator: norma-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"normatest_echo-0.1.0.dist-info/entry_points.txt": "[console_scripts]\nnormatest-echo = normatest_echo:main\n",
	}
	var record strings.Builder
	f, err := os.Create(filepath.Join(dir, "normatest_echo-0.1.0-py3-none-any.whl"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, body := range files {
		w, _ := zw.Create(name)
		w.Write([]byte(body))
		sum := sha256.Sum256([]byte(body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", name, base64.RawURLEncoding.EncodeToString(sum[:]), len(body))
	}
	record.WriteString("normatest_echo-0.1.0.dist-info/RECORD,,\n")
	w, _ := zw.Create("normatest_echo-0.1.0.dist-info/RECORD")
	w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestMain(m *testing.M) { sandboxtest.Main(m) }
