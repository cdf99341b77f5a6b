package plugin

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/norma-run/norma/capability"
)

// PackOptions configures [Pack].
type PackOptions struct {
	Limits   *Limits
	Progress Progress
}

// Pack writes the package in directory dir to w as a reproducible .tar.gz:
// regular files only (directories are implied by paths), sorted by path,
// with modification time 0, owner and group 0 and empty names, modes reduced
// to 0644 or 0755, and a gzip header without name or time. package.sig is
// included when present. Packing the same files twice gives the same bytes.
// A symbolic link to a file inside dir is packed as a regular file with
// its target's content. It refuses what [HashDir] refuses.
func Pack(ctx context.Context, dir string, w io.Writer, opts *PackOptions) error {
	if opts == nil {
		opts = &PackOptions{}
	}
	lim := opts.Limits.norm()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return newErr(capability.ReasonPluginState, "pack", dir, "cannot open package directory", err)
	}
	defer root.Close()
	list, err := scanDir(root, "pack", lim, true)
	if err != nil {
		return err
	}
	var total, done int64
	for _, s := range list {
		total += s.size
	}
	zw, err := gzip.NewWriterLevel(w, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	for _, s := range list {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := packOne(root, tw, s); err != nil {
			return err
		}
		done += s.size
		if opts.Progress != nil {
			opts.Progress(done, total)
		}
	}
	if err := tw.Close(); err != nil {
		return newErr(capability.ReasonPluginState, "pack", "", "cannot write archive", err)
	}
	if err := zw.Close(); err != nil {
		return newErr(capability.ReasonPluginState, "pack", "", "cannot write archive", err)
	}
	return nil
}

func packOne(root *os.Root, tw *tar.Writer, s scanned) error {
	p := s.path
	f, info, err := openScanned(root, "pack", s)
	if err != nil {
		return err
	}
	defer f.Close()
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     p,
		Mode:     int64(canonicalMode(info.Mode())),
		Size:     info.Size(),
		ModTime:  time.Unix(0, 0),
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return newErr(capability.ReasonPluginState, "pack", p, "cannot write archive", err)
	}
	n, err := io.Copy(tw, io.LimitReader(f, info.Size()))
	if err != nil || n != info.Size() {
		return newErr(capability.ReasonPluginState, "pack", p, "file changed while packing", err)
	}
	return nil
}

// UnpackOptions configures [Unpack].
type UnpackOptions struct {
	Limits   *Limits
	Progress Progress // total is -1: the size is known only at the end
}

// countingReader counts bytes and fails once more than max were read, so a
// gzip bomb stops at the limit instead of filling the disk.
type countingReader struct {
	r   io.Reader
	n   int64
	max int64
}

var errInflateLimit = errors.New("decompressed stream exceeds the size limit")

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n > c.max {
		return 0, errInflateLimit
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		return n, errInflateLimit
	}
	return n, err
}

// Unpack reads a .tar.gz package from r into dst, which must not exist; it
// is created with mode 0700. It returns the tree of the unpacked files
// (package.sig excluded), hashed while writing.
//
// Unpack refuses, with a *capability.Error and its own code: entries whose
// names are not valid ([ValidPath]); symbolic and hard links (PLUGIN_LINK);
// devices, FIFOs and setuid/setgid/sticky modes (PLUGIN_SPECIAL_FILE); two
// entries for one path or a file used as a directory
// (PLUGIN_DUPLICATE_ENTRY); archives over the [Limits], including a
// decompressed stream longer than the total limit (PLUGIN_ARCHIVE_LIMIT);
// and anything that is not a well-formed gzip-compressed tar
// (PLUGIN_ARCHIVE_INVALID). Writes go through an
// [os.Root] opened on dst, so no entry can reach outside it even if a check
// above were wrong. On any error dst is removed: nothing is half-unpacked.
func Unpack(ctx context.Context, r io.Reader, dst string, opts *UnpackOptions) (tree *Tree, err error) {
	if opts == nil {
		opts = &UnpackOptions{}
	}
	lim := opts.Limits.norm()
	if err := os.Mkdir(dst, 0o700); err != nil {
		return nil, newErr(capability.ReasonPluginState, "unpack", dst, "cannot create staging directory (it must not exist)", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dst)
		}
	}()
	root, err := os.OpenRoot(dst)
	if err != nil {
		return nil, newErr(capability.ReasonPluginState, "unpack", dst, "cannot open staging directory", err)
	}
	defer root.Close()

	zr, err := gzip.NewReader(bufio.NewReaderSize(r, 64<<10))
	if err != nil {
		return nil, newErr(capability.ReasonPluginArchiveInvalid, "unpack", "", "not a gzip stream", err)
	}
	// Tar headers cost at least 512 bytes per entry; allow them on top of
	// the content limit.
	cr := &countingReader{r: zr, max: lim.MaxTotalSize + int64(lim.MaxFiles+4)*1536 + 1<<20}
	tr := tar.NewReader(cr)
	u := unpacker{root: root, lim: lim, files: map[string]bool{}, dirs: map[string]bool{}}
	var done int64
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if errors.Is(err, errInflateLimit) {
				return nil, newErr(capability.ReasonPluginArchiveLimit, "unpack", "", "archive bomb", err)
			}
			return nil, newErr(capability.ReasonPluginArchiveInvalid, "unpack", "", "malformed tar stream", err)
		}
		f, err := u.entry(tr, hdr)
		if err != nil {
			if errors.Is(err, errInflateLimit) {
				return nil, newErr(capability.ReasonPluginArchiveLimit, "unpack", hdr.Name, "archive bomb", err)
			}
			return nil, err
		}
		if f != nil {
			done += f.Size
			if opts.Progress != nil {
				opts.Progress(done, -1)
			}
		}
	}
	if err := zr.Close(); err != nil {
		return nil, newErr(capability.ReasonPluginArchiveInvalid, "unpack", "", "malformed gzip stream", err)
	}
	slicesSortFiles(u.out)
	return &Tree{Files: u.out}, nil
}

type unpacker struct {
	root  *os.Root
	lim   Limits
	files map[string]bool
	dirs  map[string]bool
	total int64
	count int
	out   []File
}

func (u *unpacker) entry(tr *tar.Reader, hdr *tar.Header) (*File, error) {
	name := hdr.Name
	isDir := hdr.Typeflag == tar.TypeDir
	if isDir {
		name = strings.TrimSuffix(name, "/")
	}
	// Archives made with "tar -C dir ." name entries "./x"; accept exactly
	// that one prefix and the "." directory itself.
	if rest, ok := strings.CutPrefix(name, "./"); ok && rest != "" {
		name = rest
	} else if isDir && name == "." {
		return nil, nil
	}
	u.count++
	if u.count > u.lim.MaxFiles {
		return nil, newErr(capability.ReasonPluginArchiveLimit, "unpack", name, fmt.Sprintf("more than %d entries", u.lim.MaxFiles), nil)
	}
	if err := validPath("unpack", name); err != nil {
		return nil, err
	}
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeDir:
	case tar.TypeSymlink:
		return nil, newErr(capability.ReasonPluginLink, "unpack", name, "symbolic link entry refused", nil)
	case tar.TypeLink:
		return nil, newErr(capability.ReasonPluginLink, "unpack", name, "hard link entry refused", nil)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		return nil, newErr(capability.ReasonPluginSpecialFile, "unpack", name, "device or FIFO entry refused", nil)
	default:
		return nil, newErr(capability.ReasonPluginArchiveInvalid, "unpack", name, fmt.Sprintf("entry type %q refused", hdr.Typeflag), nil)
	}
	if hdr.Mode&^0o777 != 0 {
		return nil, newErr(capability.ReasonPluginSpecialFile, "unpack", name, fmt.Sprintf("mode %#o refused (setuid, setgid, sticky or type bits)", hdr.Mode), nil)
	}
	// Every parent of name must be a directory, never a file.
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		if u.files[d] {
			return nil, newErr(capability.ReasonPluginDuplicateEntry, "unpack", name, "parent "+d+" is a file", nil)
		}
	}
	if u.files[name] || (u.dirs[name] && !isDir) || (isDir && u.files[name]) {
		return nil, newErr(capability.ReasonPluginDuplicateEntry, "unpack", name, "duplicate entry", nil)
	}
	if isDir {
		if u.dirs[name] {
			return nil, newErr(capability.ReasonPluginDuplicateEntry, "unpack", name, "duplicate entry", nil)
		}
		u.markDirs(name)
		if err := u.root.MkdirAll(name, 0o755); err != nil {
			return nil, newErr(capability.ReasonPluginState, "unpack", name, "cannot create directory", err)
		}
		return nil, nil
	}
	if hdr.Size < 0 || hdr.Size > u.lim.MaxFileSize {
		return nil, newErr(capability.ReasonPluginArchiveLimit, "unpack", name, fmt.Sprintf("file larger than %d bytes", u.lim.MaxFileSize), nil)
	}
	u.total += hdr.Size
	if u.total > u.lim.MaxTotalSize {
		return nil, newErr(capability.ReasonPluginArchiveLimit, "unpack", name, fmt.Sprintf("package larger than %d bytes", u.lim.MaxTotalSize), nil)
	}
	return u.writeFile(name, canonicalMode(fs.FileMode(hdr.Mode)), hdr.Size, tr)
}

// writeFile creates name under the root with the content of r (exactly size
// bytes), sets its canonical mode and records its leaf.
func (u *unpacker) writeFile(name string, mode fs.FileMode, size int64, r io.Reader) (*File, error) {
	u.files[name] = true
	if d := path.Dir(name); d != "." {
		u.markDirs(d)
		if err := u.root.MkdirAll(d, 0o755); err != nil {
			return nil, newErr(capability.ReasonPluginState, "unpack", name, "cannot create directory", err)
		}
	}
	f, err := u.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, newErr(capability.ReasonPluginState, "unpack", name, "cannot create file", err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, size+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if errors.Is(err, errInflateLimit) {
			return nil, err
		}
		return nil, newErr(capability.ReasonPluginArchiveInvalid, "unpack", name, "truncated entry", err)
	}
	if n != size {
		return nil, newErr(capability.ReasonPluginArchiveInvalid, "unpack", name, fmt.Sprintf("entry has %d bytes, header says %d", n, size), nil)
	}
	if err := u.root.Chmod(name, mode); err != nil {
		return nil, newErr(capability.ReasonPluginState, "unpack", name, "cannot set mode", err)
	}
	if name == SignatureName {
		return nil, nil
	}
	out := File{Path: name, Mode: mode, Size: n}
	h.Sum(out.SHA256[:0])
	u.out = append(u.out, out)
	return &out, nil
}

func (u *unpacker) markDirs(d string) {
	for ; d != "."; d = path.Dir(d) {
		u.dirs[d] = true
	}
}
