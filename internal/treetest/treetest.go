// Package treetest records a directory tree so that a security test can
// assert that an attack changed nothing on disk: every entry's path, type,
// permission bits, identity (device and inode), link count, and a file's
// content digest or a link's target.
package treetest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// Snapshot returns one line per entry under root (root itself included,
// as "."), sorted. It reads as root would: a test that runs as a user who
// cannot read part of the tree fails.
func Snapshot(t testing.TB, root string) []string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		line := fmt.Sprintf("%s %v dev=%d ino=%d nlink=%d", filepath.ToSlash(rel), fi.Mode(), st.Dev, st.Ino, st.Nlink)
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			line += " sha256=" + hex.EncodeToString(sum[:])
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			line += " -> " + target
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatalf("treetest.Snapshot(%s): %v", root, err)
	}
	slices.Sort(lines)
	return lines
}

// Equal fails t with the lines that differ when the tree under root is not
// what before recorded.
func Equal(t testing.TB, root string, before []string) {
	t.Helper()
	after := Snapshot(t, root)
	if slices.Equal(before, after) {
		return
	}
	var gone, added []string
	for _, l := range before {
		if !slices.Contains(after, l) {
			gone = append(gone, l)
		}
	}
	for _, l := range after {
		if !slices.Contains(before, l) {
			added = append(added, l)
		}
	}
	t.Errorf("the tree under %s changed:\n\tbefore only:\n\t\t%s\n\tafter only:\n\t\t%s", root,
		strings.Join(gone, "\n\t\t"), strings.Join(added, "\n\t\t"))
}
