package sandboxpolicy

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"time"

	"github.com/norma-run/norma/agentfiles"
	"github.com/norma-run/norma/internal/termtext"
)

// sweep is what a command must not leave behind: the names of
// agentfiles.SweepNames that did not exist in the workspace when it
// started. The tree of a sandboxed command dies with its first process,
// so once Wait returns nothing inside can create them any more; any that
// appeared is renamed NAME.norma-quarantine-UNIXTIME, in place, and
// reported on the command's stderr. The rename keeps what the command
// made for the user to look at, under a name no agent or git loads.
type sweep struct {
	ws      string
	missing []string // workspace-relative
}

// newSweep records which sweep names are missing in ws now.
func newSweep(ws string) sweep {
	s := sweep{ws: ws}
	names := agentfiles.SweepNames()
	if home, ok := agentfiles.HomeIn(ws); ok {
		for _, f := range agentfiles.UserSandboxFiles() {
			names = append(names, path.Join(home, f))
		}
	}
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(ws, filepath.FromSlash(n))); os.IsNotExist(err) {
			s.missing = append(s.missing, n)
		}
	}
	return s
}

// run moves aside every recorded name that exists now and tells w.
// Names under one moved first (.git/commondir in a new .git) go with it.
func (s sweep) run(w io.Writer) {
	stamp := strconv.FormatInt(time.Now().Unix(), 10)
	for _, n := range s.missing {
		abs := filepath.Join(s.ws, filepath.FromSlash(n))
		if _, err := os.Lstat(abs); err != nil {
			continue
		}
		to := abs + ".norma-quarantine-" + stamp
		msg := "norma: the command created " + n + ", which an agent or git would load as code on your machine; "
		if err := os.Rename(abs, to); err != nil {
			msg += "moving it aside failed (" + err.Error() + "): remove it before you run git or an agent here"
		} else {
			msg += "moved aside to " + filepath.Base(to) + " (look at it, and rename it back if you made it)"
		}
		if w != nil {
			fmt.Fprintln(w, termtext.EscapeText(msg))
		}
	}
}
