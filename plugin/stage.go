package plugin

import (
	"context"
	"io"
	"os"

	"github.com/norma-run/norma/capability"
)

// IsArchive reports whether the file at p starts with the gzip magic bytes.
func IsArchive(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var magic [2]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil {
		return false, nil
	}
	return magic == [2]byte{0x1f, 0x8b}, nil
}

// Stage materializes the package at src — a directory or a .tar.gz — into
// dst, which must not exist, and returns the tree of what was written. A
// directory is copied file by file with the same checks as [Unpack] (no
// special files, valid names, limits; a symbolic link to a file inside the
// package is stored as a copy of it, any other refused: see scanDir), so later verification and
// installation work on a private copy that the source can no longer change.
// On error dst is removed.
func Stage(ctx context.Context, src, dst string, opts *UnpackOptions) (*Tree, error) {
	info, err := os.Stat(src)
	if err != nil {
		return nil, newErr(capability.ReasonPluginState, "stage", src, "cannot read package", err)
	}
	if !info.IsDir() {
		f, err := os.Open(src)
		if err != nil {
			return nil, newErr(capability.ReasonPluginState, "stage", src, "cannot read package", err)
		}
		defer f.Close()
		return Unpack(ctx, f, dst, opts)
	}
	return copyDir(ctx, src, dst, opts)
}

func copyDir(ctx context.Context, src, dst string, opts *UnpackOptions) (tree *Tree, err error) {
	if opts == nil {
		opts = &UnpackOptions{}
	}
	lim := opts.Limits.norm()
	sroot, err := os.OpenRoot(src)
	if err != nil {
		return nil, newErr(capability.ReasonPluginState, "stage", src, "cannot open package directory", err)
	}
	defer sroot.Close()
	list, err := scanDir(sroot, "stage", lim, true)
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(dst, 0o700); err != nil {
		return nil, newErr(capability.ReasonPluginState, "stage", dst, "cannot create staging directory (it must not exist)", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dst)
		}
	}()
	droot, err := os.OpenRoot(dst)
	if err != nil {
		return nil, newErr(capability.ReasonPluginState, "stage", dst, "cannot open staging directory", err)
	}
	defer droot.Close()
	u := unpacker{root: droot, lim: lim, files: map[string]bool{}, dirs: map[string]bool{}}
	var done int64
	for _, s := range list {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, info, err := openScanned(sroot, "stage", s)
		if err != nil {
			return nil, err
		}
		_, err = u.writeFile(s.path, canonicalMode(info.Mode()), info.Size(), f)
		f.Close()
		if err != nil {
			if capability.ReasonOf(err) == capability.ReasonPluginArchiveInvalid {
				return nil, newErr(capability.ReasonPluginState, "stage", s.path, "file changed while copying", nil)
			}
			return nil, err
		}
		done += info.Size()
		if opts.Progress != nil {
			opts.Progress(done, -1)
		}
	}
	slicesSortFiles(u.out)
	return &Tree{Files: u.out}, nil
}
