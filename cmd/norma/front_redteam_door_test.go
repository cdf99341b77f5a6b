package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// placeBin puts a copy of the built binary src at dst (a hard link when
// they share a file system: same owner and mode, no 100 MB copy).
func placeBin(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.Link(src, dst); err == nil {
		return
	} else if !errors.Is(err, syscall.EXDEV) {
		t.Fatal(err)
	}
	copyBin(t, src, dst)
}

// copyBin copies the built binary src to a new file dst.
func copyBin(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// plantScript writes at path an executable script that, when run, writes
// the file marker: what an attacker leaves beside an installed norma.
func plantScript(t *testing.T, path, marker string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho pwned >"+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

// stickyDir is a directory like /tmp: anyone may add files, nobody may
// replace another's.
func stickyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o1777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	return dir
}

// planters are the ways a stranger can leave a file beside a binary they
// cannot change: world-writable (anyone may rewrite it later) and, as root,
// owned by another user in a sticky directory, or another user's symbolic
// link there to a file root owns (fs.protected_symlinks off).
func planters(t *testing.T) map[string]func(t *testing.T, path, marker string) {
	p := map[string]func(t *testing.T, path, marker string){
		"world-writable": func(t *testing.T, path, marker string) { plantScript(t, path, marker, 0o777) },
	}
	if os.Geteuid() == 0 {
		p["another user's"] = func(t *testing.T, path, marker string) {
			plantScript(t, path, marker, 0o755)
			if err := os.Chown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
		// Another user's symbolic link to a program root owns and
		// nobody else may change (here a script root writes in a
		// directory of its own).
		p["another user's link to root's program"] = func(t *testing.T, path, marker string) {
			target := filepath.Join(t.TempDir(), "roots-program")
			plantScript(t, target, marker, 0o755)
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
	return p
}

// TestDoorFrontRefusesPlantedFull: a front build in a shared directory
// does not execute a norma-full someone else left beside it: the command
// is refused, naming the file, and the planted program never runs.
func TestDoorFrontRefusesPlantedFull(t *testing.T) {
	for name, plant := range planters(t) {
		t.Run(name, func(t *testing.T) {
			dir, out := stickyDir(t), t.TempDir()
			front := filepath.Join(dir, "norma")
			placeBin(t, normaBin(t), front)
			marker := filepath.Join(out, "marker")
			plant(t, filepath.Join(dir, fullExe), marker)
			key := filepath.Join(out, "k")
			code, _, errs := doorCmd(t, exec.Command(front, "--home", t.TempDir(), "plugin", "keygen", "--out", key))
			if code != exitInternal || !strings.Contains(errs, filepath.Join(dir, fullExe)) || !strings.Contains(errs, "refusing") {
				t.Errorf("front beside a planted norma-full: exit %d\n%s", code, errs)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the planted norma-full ran")
			}
			if m, _ := filepath.Glob(key + "*"); len(m) != 0 {
				t.Errorf("files written: %v", m)
			}
		})
	}
}

// TestDoorFullIgnoresPlantedFront: norma-full in a shared directory does
// not tell agents to run a norma someone else left beside it: the hook
// it installs runs norma-full itself.
func TestDoorFullIgnoresPlantedFront(t *testing.T) {
	for name, plant := range planters(t) {
		t.Run(name, func(t *testing.T) {
			dir, out, project := stickyDir(t), t.TempDir(), t.TempDir()
			full := filepath.Join(dir, fullExe)
			placeBin(t, fullBin(t), full)
			marker := filepath.Join(out, "marker")
			plant(t, filepath.Join(dir, "norma"), marker)
			code, _, errs := doorCmd(t, exec.Command(full, "hook", "install", "claude-code", "--scope", "project", "--project", project, "--yes"))
			if code != 0 {
				t.Fatalf("hook install: exit %d\n%s", code, errs)
			}
			b, err := os.ReadFile(filepath.Join(project, ".claude", "settings.json"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), `"`+full+` hook claude-code"`) || strings.Contains(string(b), filepath.Join(dir, "norma ")) {
				t.Errorf("the hook runs the planted norma:\n%s", b)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the planted norma ran")
			}
		})
	}
}

// TestDoorFullNamesKeptFront: norma-full beside the front of the same
// installation (same owner and mode) still tells agents to run the front.
func TestDoorFullNamesKeptFront(t *testing.T) {
	dir, project := t.TempDir(), t.TempDir()
	full := filepath.Join(dir, fullExe)
	placeBin(t, fullBin(t), full)
	placeBin(t, normaBin(t), filepath.Join(dir, "norma"))
	code, _, errs := doorCmd(t, exec.Command(full, "hook", "install", "claude-code", "--scope", "project", "--project", project, "--yes"))
	if code != 0 {
		t.Fatalf("hook install: exit %d\n%s", code, errs)
	}
	b, err := os.ReadFile(filepath.Join(project, ".claude", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"`+filepath.Join(dir, "norma")+` hook claude-code"`) {
		t.Errorf("the hook does not run the front:\n%s", b)
	}
}

// TestDoorFrontInstalledAsFull: a front build installed as norma-full
// (alone, or beside another front) used to execute itself forever; it
// now refuses at once, with nothing done.
func TestDoorFrontInstalledAsFull(t *testing.T) {
	for _, withFront := range []bool{false, true} {
		dir, out := t.TempDir(), t.TempDir()
		// A copy, not a link: beside a front, the front executes it and
		// it is the copy that must refuse to execute itself.
		copyBin(t, normaBin(t), filepath.Join(dir, fullExe))
		bin := filepath.Join(dir, fullExe)
		if withFront {
			bin = filepath.Join(dir, "norma")
			placeBin(t, normaBin(t), bin)
		}
		key := filepath.Join(out, "k")
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		cmd := exec.CommandContext(ctx, bin, "--home", t.TempDir(), "plugin", "keygen", "--out", key)
		code, _, errs := doorCmd(t, cmd)
		timedOut := ctx.Err() != nil
		cancel()
		if timedOut || code != exitInternal || !strings.Contains(errs, "front build") {
			t.Errorf("front as norma-full (beside a front: %v): exit %d, timed out %v\n%s", withFront, code, timedOut, errs)
		}
		if m, _ := filepath.Glob(key + "*"); len(m) != 0 {
			t.Errorf("files written: %v", m)
		}
	}
}
