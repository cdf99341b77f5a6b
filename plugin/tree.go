package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/norma-run/norma/capability"
)

// Digest is a SHA-256 digest. Its text form is "sha256:<64 hex digits>".
type Digest [32]byte

// String returns "sha256:<hex>".
func (d Digest) String() string { return "sha256:" + hex.EncodeToString(d[:]) }

// MarshalText implements encoding.TextMarshaler.
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler; it accepts only the
// lower-case "sha256:<hex>" form.
func (d *Digest) UnmarshalText(b []byte) error {
	v, err := ParseDigest(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ParseDigest parses "sha256:<64 lower-case hex digits>".
func ParseDigest(s string) (Digest, error) {
	var d Digest
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(h) != 64 || strings.ToLower(h) != h {
		return d, fmt.Errorf("plugin: malformed digest %q (want sha256:<64 lower-case hex digits>)", s)
	}
	if _, err := hex.Decode(d[:], []byte(h)); err != nil {
		return d, fmt.Errorf("plugin: malformed digest %q: %w", s, err)
	}
	return d, nil
}

// Canonical file modes of package files. Packing, hashing and verification
// reduce a file's permission bits to one of these two, so a package means
// the same thing on every machine; installed copies are made read-only.
const (
	ModeFile fs.FileMode = 0o644
	ModeExec fs.FileMode = 0o755
)

func canonicalMode(m fs.FileMode) fs.FileMode {
	if m&0o111 != 0 {
		return ModeExec
	}
	return ModeFile
}

// File is one leaf of a package: a regular file at a clean relative Path,
// with its canonical Mode, Size and the SHA-256 of its content.
type File struct {
	Path   string      `json:"path"`
	Mode   fs.FileMode `json:"mode"`
	Size   int64       `json:"size"`
	SHA256 Digest      `json:"sha256"`
}

// Leaf returns the domain-separated Merkle leaf hash of f:
// SHA-256(0x00 ‖ u32be(len(path)) ‖ path ‖ u32be(mode) ‖ sha256(content)).
func (f File) Leaf() Digest {
	h := sha256.New()
	var b [4]byte
	h.Write([]byte{0x00})
	binary.BigEndian.PutUint32(b[:], uint32(len(f.Path)))
	h.Write(b[:])
	h.Write([]byte(f.Path))
	binary.BigEndian.PutUint32(b[:], uint32(f.Mode.Perm()))
	h.Write(b[:])
	h.Write(f.SHA256[:])
	var d Digest
	h.Sum(d[:0])
	return d
}

// Tree is the file set of a package, sorted by path, without package.sig.
type Tree struct {
	Files []File
}

// Size is the total size of the files in bytes.
func (t *Tree) Size() int64 {
	var n int64
	for _, f := range t.Files {
		n += f.Size
	}
	return n
}

// Lookup returns the file at p.
func (t *Tree) Lookup(p string) (File, bool) {
	i, ok := slices.BinarySearchFunc(t.Files, p, func(f File, p string) int { return strings.Compare(f.Path, p) })
	if !ok {
		return File{}, false
	}
	return t.Files[i], true
}

// Root returns the Merkle root of the tree. See [MerkleRoot].
func (t *Tree) Root() Digest { return MerkleRoot(t.Files) }

// MerkleRoot returns the Merkle root over files, which must be sorted by path
// with unique paths. Leaves are [File.Leaf]; an inner node is
// SHA-256(0x01 ‖ left ‖ right); the tree splits n leaves at the largest power
// of two below n (the RFC 6962 shape). The root of no files is SHA-256 of the
// empty string, which no valid package has (it always holds the manifest).
func MerkleRoot(files []File) Digest {
	if len(files) == 0 {
		return sha256.Sum256(nil)
	}
	level := make([]Digest, len(files))
	for i, f := range files {
		level[i] = f.Leaf()
	}
	return merkle(level)
}

func merkle(leaves []Digest) Digest {
	if len(leaves) == 1 {
		return leaves[0]
	}
	k := 1
	for k<<1 < len(leaves) {
		k <<= 1
	}
	l, r := merkle(leaves[:k]), merkle(leaves[k:])
	var buf [1 + 64]byte
	buf[0] = 0x01
	copy(buf[1:], l[:])
	copy(buf[33:], r[:])
	return sha256.Sum256(buf[:])
}

// Limits bounds what a package may contain. A zero field means the default.
type Limits struct {
	// MaxFiles is the maximum number of entries (default 100,000).
	MaxFiles int
	// MaxFileSize is the maximum size of one file (default 512 MiB).
	MaxFileSize int64
	// MaxTotalSize is the maximum total size of all files (default 2 GiB).
	MaxTotalSize int64
}

func (l *Limits) norm() Limits {
	var v Limits
	if l != nil {
		v = *l
	}
	if v.MaxFiles <= 0 {
		v.MaxFiles = 100_000
	}
	if v.MaxFileSize <= 0 {
		v.MaxFileSize = 512 << 20
	}
	if v.MaxTotalSize <= 0 {
		v.MaxTotalSize = 2 << 30
	}
	return v
}

// Progress is called while long work proceeds with the bytes done so far and
// the total. It is called from one goroutine at a time.
type Progress func(done, total int64)

// HashOptions configures [HashDir].
type HashOptions struct {
	Limits   *Limits
	Progress Progress
	// Workers is the number of files hashed in parallel (default GOMAXPROCS).
	Workers int
}

type scanned struct {
	path string
	size int64
	// link: path is a symbolic link to a regular file inside the tree;
	// the package holds a regular-file copy of its target under path.
	link bool
}

// scanDir lists the regular files under root, the one walk of a package
// source tree (Pack, Stage, HashDir, so Sign and Verify too). It refuses
// special files, invalid names and limit violations. A symbolic link is
// resolved: one whose target, followed link by link, stays inside root and
// is a regular file (npm's node_modules/.bin/x -> ../pkg/dist/index.js)
// becomes a regular file with its target's content and mode; one that is
// absolute, leaves root on the way, dangles or names a directory is
// refused (PLUGIN_LINK). package.sig at the root is left out unless
// withSig is set.
func scanDir(root *os.Root, op string, lim Limits, withSig bool) ([]scanned, error) {
	var out []scanned
	var total int64
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return newErr(capability.ReasonPluginState, op, p, "cannot read package directory", err)
		}
		if p == "." {
			return nil
		}
		if err := validPath(op, p); err != nil {
			return err
		}
		t := d.Type()
		link := t&fs.ModeSymlink != 0
		switch {
		case link:
		case d.IsDir():
			return nil
		case !t.IsRegular():
			return newErr(capability.ReasonPluginSpecialFile, op, p, "not a regular file ("+t.String()+")", nil)
		}
		if p == SignatureName && !withSig {
			return nil
		}
		var info fs.FileInfo
		if link {
			info, err = linkTarget(root, op, p)
		} else {
			info, err = d.Info()
		}
		if err != nil {
			if _, ok := err.(*capability.Error); ok {
				return err
			}
			return newErr(capability.ReasonPluginState, op, p, "cannot stat", err)
		}
		if info.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
			return newErr(capability.ReasonPluginSpecialFile, op, p, "setuid, setgid or sticky bit refused", nil)
		}
		if len(out) >= lim.MaxFiles {
			return newErr(capability.ReasonPluginArchiveLimit, op, p, fmt.Sprintf("more than %d files", lim.MaxFiles), nil)
		}
		if info.Size() > lim.MaxFileSize {
			return newErr(capability.ReasonPluginArchiveLimit, op, p, fmt.Sprintf("file larger than %d bytes", lim.MaxFileSize), nil)
		}
		total += info.Size()
		if total > lim.MaxTotalSize {
			return newErr(capability.ReasonPluginArchiveLimit, op, p, fmt.Sprintf("package larger than %d bytes", lim.MaxTotalSize), nil)
		}
		out = append(out, scanned{path: p, size: info.Size(), link: link})
		return nil
	})
	if err != nil {
		return nil, err
	}
	// WalkDir visits in lexical order per directory, which is not the same
	// as sorting full paths ("a/b" vs "a.txt"); sort explicitly.
	slices.SortFunc(out, func(a, b scanned) int { return strings.Compare(a.path, b.path) })
	return out, nil
}

// linkTarget returns the file the symbolic link p under root resolves to,
// following links only inside root (os.Root refuses an absolute target and
// any step out of root), or a PLUGIN_LINK error.
func linkTarget(root *os.Root, op, p string) (fs.FileInfo, error) {
	info, err := root.Stat(p)
	switch {
	case err != nil:
		return nil, newErr(capability.ReasonPluginLink, op, p, "symbolic link refused: its target is outside the package or does not exist", nil)
	case info.IsDir():
		return nil, newErr(capability.ReasonPluginLink, op, p, "symbolic link to a directory refused", nil)
	case !info.Mode().IsRegular():
		return nil, newErr(capability.ReasonPluginLink, op, p, "symbolic link to a special file refused", nil)
	}
	return info, nil
}

// openScanned opens the file s of a scan: a resolved link through root
// (its target still inside root), anything else as [openRegular] does.
// Either way the result is checked to be a regular file again.
func openScanned(root *os.Root, op string, s scanned) (*os.File, fs.FileInfo, error) {
	if !s.link {
		return openRegular(root, op, s.path)
	}
	if _, err := linkTarget(root, op, s.path); err != nil {
		return nil, nil, err
	}
	f, err := root.Open(s.path)
	if err != nil {
		return nil, nil, newErr(capability.ReasonPluginLink, op, s.path, "symbolic link refused: its target is outside the package or does not exist", nil)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, newErr(capability.ReasonPluginState, op, s.path, "cannot stat", err)
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, newErr(capability.ReasonPluginLink, op, s.path, "symbolic link to a special file refused", nil)
	}
	return f, info, nil
}

// openRegular opens p under root without following a final symbolic link and
// checks that it is still a regular file (the directory may change between
// the scan and the open).
func openRegular(root *os.Root, op, p string) (*os.File, fs.FileInfo, error) {
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, nil, newErr(capability.ReasonPluginLink, op, p, "symbolic link refused", nil)
		}
		return nil, nil, newErr(capability.ReasonPluginState, op, p, "cannot open", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, newErr(capability.ReasonPluginState, op, p, "cannot stat", err)
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, newErr(capability.ReasonPluginSpecialFile, op, p, "not a regular file", nil)
	}
	return f, info, nil
}

// HashDir hashes the package in directory dir and returns its tree. It
// refuses (with a *capability.Error) special files, invalid names,
// packages over the limits and symbolic links other than those to a
// regular file inside dir, which it hashes as that file (see scanDir);
// package.sig at the root is not a leaf. Files are hashed in parallel.
func HashDir(ctx context.Context, dir string, opts *HashOptions) (*Tree, error) {
	if opts == nil {
		opts = &HashOptions{}
	}
	lim := opts.Limits.norm()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, newErr(capability.ReasonPluginState, "hash", dir, "cannot open package directory", err)
	}
	defer root.Close()
	list, err := scanDir(root, "hash", lim, false)
	if err != nil {
		return nil, err
	}
	files := make([]File, len(list))
	var total int64
	for _, s := range list {
		total += s.size
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, max(len(list), 1))

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		next int
		mu   sync.Mutex
		done int64
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			h := sha256.New()
			buf := make([]byte, 256<<10)
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(list) || ctx.Err() != nil {
					return
				}
				f, err := hashOne(root, list[i], h, buf, lim)
				if err != nil {
					cancel(err)
					return
				}
				files[i] = f
				if opts.Progress != nil {
					mu.Lock()
					done += f.Size
					opts.Progress(done, total)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return &Tree{Files: files}, nil
}

func hashOne(root *os.Root, s scanned, h hash.Hash, buf []byte, lim Limits) (File, error) {
	p := s.path
	f, info, err := openScanned(root, "hash", s)
	if err != nil {
		return File{}, err
	}
	defer f.Close()
	h.Reset()
	n, err := io.CopyBuffer(h, io.LimitReader(f, lim.MaxFileSize+1), buf)
	if err != nil {
		return File{}, newErr(capability.ReasonPluginState, "hash", p, "cannot read", err)
	}
	if n > lim.MaxFileSize {
		return File{}, newErr(capability.ReasonPluginArchiveLimit, "hash", p, fmt.Sprintf("file larger than %d bytes", lim.MaxFileSize), nil)
	}
	out := File{Path: p, Mode: canonicalMode(info.Mode()), Size: n}
	h.Sum(out.SHA256[:0])
	return out, nil
}

func slicesSortFiles(fs []File) {
	slices.SortFunc(fs, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
}
