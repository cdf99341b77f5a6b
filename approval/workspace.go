package approval

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/norma-run/norma/internal/fileid"
)

// WorkspaceID returns the identity of the workspace directory dir that an
// action hash binds ([Action].Workspace): "wsid:" and a hash of the
// directory's resolved absolute path (symbolic links evaluated) and its
// device and inode numbers.
//
// Both halves matter. The path alone would let a directory replaced at the
// same place (rm -r ws && mkdir ws, or a copy moved there) inherit the
// approvals of the old one; the device and inode alone would let a moved
// workspace keep them. With both, a workspace that is moved, copied or
// recreated is another workspace and asks again, while two paths that
// resolve to the same directory (a symbolic link) are one. Nothing is
// stored in the workspace, so nothing a tool can write there forges it.
func WorkspaceID(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("approval: empty workspace directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("approval: workspace: %w", err)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", fmt.Errorf("approval: workspace: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("approval: workspace: %w", err)
	}
	id, ok := fileid.Of(fi)
	if !ok || !fi.IsDir() {
		return "", fmt.Errorf("approval: workspace %s is not a directory with an inode", abs)
	}
	h := sha256.New()
	h.Write([]byte("norma-workspace-v1\x00"))
	h.Write([]byte(abs))
	h.Write([]byte{0})
	h.Write([]byte(strconv.FormatUint(id.Dev, 10)))
	h.Write([]byte{0})
	h.Write([]byte(strconv.FormatUint(id.Ino, 10)))
	return "wsid:" + hex.EncodeToString(h.Sum(nil))[:40], nil
}
