// Package atomicfile writes small state files (run state, trust files, tool
// pins, todo lists) so that a reader sees the old content or the new, never
// a mix, and a crash leaves no partial file: the data goes to a temporary
// file in the same directory, is synced, and is renamed over the target;
// the directory is then synced. It is the one implementation of that
// pattern in Norma; the secret vault and the file guard have their own
// (they also lock, or work relative to a directory descriptor).
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data, with permission perm.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: the rename is already atomic
		d.Close()
	}
	return nil
}
