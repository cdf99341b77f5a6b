//go:build !linux

package fsguard

import (
	"context"

	"github.com/norma-run/norma/capability"
	"io/fs"
	"os"
)

// On every platform but Linux, New fails with ErrUnsupportedPlatform, so the
// methods below are never reached with a usable FS; they fail closed anyway.

func (f *FS) initSys() error { return ErrUnsupportedPlatform }

func (f *FS) resolve(string, bool) (string, error) { return "", ErrUnsupportedPlatform }

func (f *FS) sysOpen(string, int, fs.FileMode) (*os.File, error) {
	return nil, ErrUnsupportedPlatform
}

// sysOpenNoLinks always reports a link: the fast path is Linux-only.
func (f *FS) sysOpenNoLinks(string) (int, error, bool) { return -1, ErrUnsupportedPlatform, true }

func readFD(int, string) ([]byte, string, error) { return nil, "read", ErrUnsupportedPlatform }

func closeFD(int) {}

func (f *FS) sysReadFile(string) ([]byte, string, error) {
	return nil, "open", ErrUnsupportedPlatform
}

func (f *FS) sysWriteFile(context.Context, string, []byte, fs.FileMode) error {
	return ErrUnsupportedPlatform
}

func (f *FS) sysMkdirAll(context.Context, string, fs.FileMode) error {
	return ErrUnsupportedPlatform
}

func (f *FS) sysRemove(string) error { return ErrUnsupportedPlatform }

func (f *FS) sysRename(context.Context, string, string) error { return ErrUnsupportedPlatform }

func (f *FS) sysLstat(string) (fs.FileInfo, error) { return nil, ErrUnsupportedPlatform }

func (f *FS) sysReadDir(context.Context, string) ([]fs.DirEntry, error) {
	return nil, ErrUnsupportedPlatform
}

func (f *FS) sysWalk(context.Context, string, fs.WalkDirFunc) error {
	return ErrUnsupportedPlatform
}

func useErr(err error) error { return err }

func (f *FS) reach(capability.Kind, string) error { return ErrUnsupportedPlatform }
