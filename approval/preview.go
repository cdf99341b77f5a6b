package approval

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// A preview is what a human approves: the full text of the action (a
// shell command line, a plugin tool's canonical JSON arguments, the diff
// of a file change), built by the gate from the same input the action
// hash covers. It is bounded so that an approval stays readable and its
// record small: at most MaxPreviewLines lines and MaxPreview bytes. What
// is left out is never dropped silently: the preview then ends in a line
// "… N more lines (M bytes) not shown".
const (
	MaxPreview      = 32 << 10
	MaxPreviewLines = 200
)

// previewMarkRoom is what BoundPreview keeps free for its marker line.
const previewMarkRoom = 80

// BoundPreview returns s bounded to MaxPreviewLines lines and MaxPreview
// bytes, cut on a line (or, for one very long line, a UTF-8) boundary and
// ending in a line that says how much was left out. A preview within the
// bounds is returned as it is.
func BoundPreview(s string) string {
	if len(s) <= MaxPreview && lineCount(s) <= MaxPreviewLines {
		return s
	}
	var b strings.Builder
	budget := MaxPreview - previewMarkRoom
	rest := s
	for n := 0; rest != "" && n < MaxPreviewLines; n++ {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		if b.Len()+len(line) > budget {
			cut := budget - b.Len()
			for cut > 0 && !utf8.RuneStart(line[cut]) {
				cut--
			}
			if cut > 0 {
				b.WriteString(line[:cut])
				b.WriteString("…\n")
				rest = rest[cut:]
			}
			break
		}
		b.WriteString(line)
		rest = rest[len(line):]
	}
	if !strings.HasSuffix(b.String(), "\n") && b.Len() > 0 {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "… %d more lines (%d bytes) not shown", lineCount(rest), len(rest))
	return b.String()
}

// lineCount is the number of lines of s: a last line without a newline
// counts too.
func lineCount(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// PreviewDigest is "sha256:" + hex of a stored preview, the form in which
// the audit log names the exact preview an approval was asked and decided
// on.
func PreviewDigest(preview string) string {
	sum := sha256.Sum256([]byte(preview))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CanonicalInput returns a tool input in the canonical form (RFC 8785)
// that [HashAction] hashes: the form in which a tool without a preview of
// its own is shown for approval, so that what is shown is what is bound.
func CanonicalInput(in json.RawMessage) (json.RawMessage, error) {
	return jcs.Transform(in)
}
