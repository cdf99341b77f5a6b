package mcpadd

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// SystemPython is the interpreter pip falls back to and python launchers run with.
const SystemPython = "/usr/bin/python3"

// installPython installs the distribution c.Package into dir/lib (uv when
// on PATH, else pip of SystemPython) and writes the launcher bin/NAME.
// Only wheels are installed (--only-binary :all:): building a source
// distribution runs its setup.py or build backend on the host, unconfined
// — npm's install scripts, which --ignore-scripts keeps from running.
func installPython(ctx context.Context, b *builder, c Command) (Source, string, error) {
	spec := c.Package
	if c.Version != "" {
		spec += "==" + c.Version
	}
	lib := filepath.Join(b.dir, "lib")
	installer := "pip"
	var err error
	if uv, lerr := exec.LookPath("uv"); lerr == nil {
		installer = "uv"
		err = b.run(ctx, uv, "pip", "install", "--python", SystemPython, "--only-binary", ":all:", "--target", lib, spec)
	} else {
		err = b.run(ctx, SystemPython, "-m", "pip", "install", "--disable-pip-version-check", "--no-compile", "--only-binary", ":all:", "--target", lib, spec)
	}
	if err != nil {
		return Source{}, "", err
	}
	info, err := findDistInfo(lib, c.Package)
	if err != nil {
		return Source{}, "", err
	}
	ver, err := metadataVersion(filepath.Join(info, "METADATA"))
	if err != nil {
		return Source{}, "", err
	}
	call, err := pythonCall(info, c)
	if err != nil {
		return Source{}, "", err
	}
	entry := "bin/" + b.launcherName()
	if err := writeFile(filepath.Join(b.dir, "bin", b.launcherName()), pythonLauncher(call), 0o755); err != nil {
		return Source{}, "", err
	}
	digest, err := fileSHA256(filepath.Join(info, "RECORD"))
	if err != nil {
		return Source{}, "", err
	}
	os.RemoveAll(filepath.Join(lib, "bin")) // pip's console scripts name the host's interpreter
	return Source{Kind: KindPython, Package: c.Package, Version: ver, Integrity: "record-sha256:" + digest, Installer: installer}, entry, nil
}

var pySeparators = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[-_.]+`) })

// normalizePython is the PEP 503 normalized name.
func normalizePython(s string) string {
	return strings.ToLower(pySeparators().ReplaceAllString(s, "-"))
}

// findDistInfo is lib's NAME-VERSION.dist-info of the distribution name.
func findDistInfo(lib, name string) (string, error) {
	ents, err := os.ReadDir(lib)
	if err != nil {
		return "", fmt.Errorf("python: %w", err)
	}
	for _, e := range ents {
		base, ok := strings.CutSuffix(e.Name(), ".dist-info")
		if !ok || !e.IsDir() {
			continue
		}
		dist, _, _ := strings.Cut(base, "-")
		if normalizePython(dist) == normalizePython(name) {
			return filepath.Join(lib, e.Name()), nil
		}
	}
	return "", fmt.Errorf("python: no .dist-info of %s after the install", name)
}

func metadataVersion(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("python: %w", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "Version:"); ok {
			return strings.TrimSpace(v), nil
		}
		if s.Text() == "" {
			break
		}
	}
	return "", fmt.Errorf("python: %s has no Version", file)
}

// pythonCall is what the launcher runs: the module of -m, or the
// console_scripts entry point named after the package (or the only one).
func pythonCall(info string, c Command) (string, error) {
	if c.Module != "" {
		return fmt.Sprintf("import runpy\nrunpy.run_module(%q, run_name=\"__main__\", alter_sys=True)\n", c.Module), nil
	}
	eps, err := consoleScripts(filepath.Join(info, "entry_points.txt"))
	if err != nil {
		return "", err
	}
	ep, ok := eps[normalizePython(c.Package)]
	if !ok && len(eps) == 1 {
		for _, v := range eps {
			ep, ok = v, true
		}
	}
	if !ok {
		return "", fmt.Errorf("python: %s has no console script named %s (it has %d)", c.Package, c.Package, len(eps))
	}
	mod, attr, _ := strings.Cut(ep, ":")
	mod, attr = strings.TrimSpace(mod), strings.TrimSpace(strings.Fields(attr + " ")[0])
	if !pyDotted().MatchString(mod) || (attr != "" && !pyDotted().MatchString(attr)) {
		return "", fmt.Errorf("python: console script %q is not module:function", ep)
	}
	return fmt.Sprintf("import importlib\nf = importlib.import_module(%q)\nfor a in %q.split(\".\"):\n    f = getattr(f, a) if a else f\nsys.exit(f())\n", mod, attr), nil
}

var pyDotted = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
})

// consoleScripts reads the [console_scripts] section of entry_points.txt,
// keyed by normalized script name.
func consoleScripts(file string) (map[string]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("python: the distribution has no entry points (not a command-line server): %w", err)
	}
	out := map[string]string{}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		case section == "console_scripts":
			if k, v, ok := strings.Cut(line, "="); ok {
				out[normalizePython(strings.TrimSpace(k))] = strings.TrimSpace(v)
			}
		}
	}
	return out, nil
}

// pythonLauncher is bin/NAME: the system interpreter, with the package's
// lib first on sys.path.
func pythonLauncher(call string) []byte {
	return []byte("#!" + SystemPython + "\n# Generated by norma mcp add.\nimport os, sys\n" +
		"sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), \"..\", \"lib\"))\n" + call)
}

func fileSHA256(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
