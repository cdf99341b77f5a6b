package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/textdiff"
	"github.com/norma-run/norma/tool"
)

// File limits of the built-in file tools.
const (
	// DefaultMaxReadBytes is the size above which Read refuses a file.
	DefaultMaxReadBytes = 32 << 20
	// DefaultReadLines is how many lines Read returns without a limit.
	DefaultReadLines = 2000
	// MaxLineChars is where Read cuts a long line.
	MaxLineChars = 2000
	// binarySniff is how much of a file is searched for a NUL byte.
	binarySniff = 8 << 10
	// maxEditBytes bounds the file Edit and MultiEdit load into memory.
	maxEditBytes = 32 << 20
	// maxLSEntries bounds LS output.
	maxLSEntries = 1000
)

const pathProp = `"path":{"type":"string","minLength":1,"maxLength":4096,"description":"workspace-relative path (or workspace://...)"}`

func readTool(maxBytes int64) tool.Spec {
	return tool.Spec{
		Name:        "Read",
		Description: "Read a text file of the workspace, with line numbers.",
		Prompt: "Reads a text file through the workspace file guard and returns it in `cat -n` form: a right-aligned line number, a tab, the line. " +
			"Paths are workspace-relative; absolute paths, `..` out of the workspace and denied files (such as .env) are refused with a reason code. " +
			"By default the first 2000 lines are returned; use offset (1-based first line) and limit for more. Lines longer than 2000 characters are cut. " +
			"Binary files (a NUL byte in the first 8 KiB) are refused with FILE_BINARY and files over the size cap with FILE_TOO_LARGE. Use LS for directories.",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path"],"properties":{` + pathProp +
			`,"offset":{"type":"integer","minimum":1,"description":"first line to return, 1-based"},"limit":{"type":"integer","minimum":1,"maximum":1048576,"description":"number of lines"}}}`),
		ReadOnly:         yes,
		ConcurrencySafe:  yes,
		CheckPermissions: allow,
		Accesses:         readAccess("path"),
		Call: func(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
			var a struct {
				Path          string
				Offset, Limit int
			}
			if err := in.Decode(&a); err != nil {
				return tool.Result{}, fail(capability.ReasonInvalidRequest, "%v", err)
			}
			out, err := readFile(ctx, env, a.Path, a.Offset, a.Limit, maxBytes)
			return tool.Result{Content: out}, err
		},
	}
}

// readFile is Read's handler: open through the guard, refuse directories,
// oversized and binary files, and number the lines.
func readFile(ctx context.Context, env tool.Env, name string, offset, limit int, maxBytes int64) (string, error) {
	fsys, err := needFS(env)
	if err != nil {
		return "", err
	}
	f, err := fsys.Open(ctx, name)
	if err != nil {
		if capability.ReasonOf(err) == "" {
			if fi, serr := fsys.Stat(ctx, name); serr == nil && fi.IsDir() {
				return "", fail(capability.ReasonInvalidRequest, "%s is a directory; use LS", name)
			}
		}
		return "", fsErr(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return "", fail(capability.ReasonInvalidRequest, "%s is a directory; use LS", name)
	}
	if fi.Size() > maxBytes {
		return "", fail(capability.ReasonFileTooLarge, "%s is %d bytes; Read refuses files over %d bytes (use Grep to find what you need)", name, fi.Size(), maxBytes)
	}
	data := make([]byte, fi.Size()+1)
	n, err := io.ReadFull(f, data)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return "", err
	}
	if int64(n) > fi.Size() {
		return "", fail(capability.ReasonFileTooLarge, "%s grew while it was read", name)
	}
	data = data[:n]
	if isBinary(data) {
		return "", fail(capability.ReasonFileBinary, "%s looks binary (a NUL byte in its first 8 KiB); Read returns text only", name)
	}
	if len(data) == 0 {
		return "(the file is empty)", nil
	}
	return numberLines(data, offset, limit), nil
}

func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0
}

// numberLines renders lines [offset, offset+limit) of data as cat -n does.
func numberLines(data []byte, offset, limit int) string {
	if offset < 1 {
		offset = 1
	}
	if limit <= 0 {
		limit = DefaultReadLines
	}
	var b bytes.Buffer
	b.Grow(min(len(data)+len(data)/8+64, 64<<20))
	line, shown := 1, 0
	var num [24]byte
	for len(data) > 0 && shown < limit {
		i := bytes.IndexByte(data, '\n')
		var l []byte
		if i < 0 {
			l, data = data, nil
		} else {
			l, data = data[:i], data[i+1:]
		}
		if line >= offset {
			l = bytes.TrimSuffix(l, []byte{'\r'})
			d := strconv.AppendInt(num[:0], int64(line), 10)
			for pad := 6 - len(d); pad > 0; pad-- {
				b.WriteByte(' ')
			}
			b.Write(d)
			b.WriteByte('\t')
			if len(l) > MaxLineChars {
				b.WriteString(truncRunes(string(l), MaxLineChars))
			} else {
				b.Write(l)
			}
			b.WriteByte('\n')
			shown++
		}
		line++
	}
	if shown == 0 {
		return fmt.Sprintf("(the file has %d lines; offset %d is past the end)", line-1, offset)
	}
	if len(data) > 0 {
		rest := bytes.Count(data, []byte{'\n'})
		if data[len(data)-1] != '\n' {
			rest++
		}
		// The note goes first: the gate may cap the end of a long result.
		return fmt.Sprintf("(showing lines %d-%d; %d more lines follow: continue with offset %d)\n", offset, line-1, rest, line) + b.String()
	}
	return b.String()
}

func writeAccess(in tool.Input) ([]tool.Access, error) {
	p := str(in, "path", "")
	return []tool.Access{{Kind: capability.FSWrite, Path: p}}, nil
}

func readWriteAccess(in tool.Input) ([]tool.Access, error) {
	p := str(in, "path", "")
	return []tool.Access{{Kind: capability.FSRead, Path: p}, {Kind: capability.FSWrite, Path: p}}, nil
}

func writeTool() tool.Spec {
	return tool.Spec{
		Name:        "Write",
		Description: "Create or overwrite a file of the workspace.",
		Prompt: "Writes content to a workspace file, replacing it atomically if it exists and creating missing parent directories. " +
			"Every write goes through the file guard: paths outside the workspace and denied paths are refused with a reason code and nothing is written. " +
			"Prefer Edit for changes to an existing file.",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path","content"],"properties":{` + pathProp +
			`,"content":{"type":"string","maxLength":33554432}}}`),
		Accesses: writeAccess,
		Preview:  previewWrite,
		Call: func(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
			fsys, err := needFS(env)
			if err != nil {
				return tool.Result{}, err
			}
			p, content := str(in, "path", ""), str(in, "content", "")
			perm := fs.FileMode(0o644)
			existed := false
			if fi, err := fsys.Stat(ctx, p); err == nil {
				if fi.IsDir() {
					return tool.Result{}, fail(capability.ReasonInvalidRequest, "%s is a directory", p)
				}
				perm, existed = fi.Mode().Perm(), true
			} else if capability.ReasonOf(err) != "" {
				return tool.Result{}, err
			}
			if dir := path.Dir(strings.TrimPrefix(p, "workspace://")); !existed && dir != "." && dir != "/" {
				if err := fsys.MkdirAll(ctx, dir, 0o755); err != nil {
					return tool.Result{}, fsErr(err)
				}
			}
			if err := fsys.WriteFile(ctx, p, []byte(content), perm); err != nil {
				return tool.Result{}, fsErr(err)
			}
			verb := "created"
			if existed {
				verb = "overwrote"
			}
			return tool.Result{Content: fmt.Sprintf("%s %s (%d bytes)", verb, p, len(content))}, nil
		},
	}
}

// edit is one replacement of Edit and MultiEdit.
type edit struct {
	Old        string `json:"old_string"`
	New        string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

const editProps = `"old_string":{"type":"string","minLength":1},"new_string":{"type":"string"},"replace_all":{"type":"boolean","default":false}`

// apply replaces e.Old in s: exactly once, or every occurrence with
// ReplaceAll. which names the edit in errors.
func (e edit) apply(s, which string) (string, int, error) {
	if e.Old == e.New {
		return "", 0, fail(capability.ReasonInvalidRequest, "%sold_string and new_string are the same", which)
	}
	n := strings.Count(s, e.Old)
	switch {
	case n == 0:
		return "", 0, fail(capability.ReasonEditNoMatch, "%sold_string was not found in the file (it must match exactly, including whitespace and indentation)", which)
	case n > 1 && !e.ReplaceAll:
		return "", 0, fail(capability.ReasonEditAmbiguous, "%sold_string has %s in the file; add surrounding context to make it unique, or set replace_all", which, plural(n, "match", "matches"))
	}
	if e.ReplaceAll {
		return strings.ReplaceAll(s, e.Old, e.New), n, nil
	}
	return strings.Replace(s, e.Old, e.New, 1), 1, nil
}

// loadForEdit reads a text file to edit and the permission bits to keep.
func loadForEdit(ctx context.Context, fsys tool.FS, p string) (string, fs.FileMode, error) {
	fi, err := fsys.Stat(ctx, p)
	if err != nil {
		return "", 0, fsErr(err)
	}
	if fi.IsDir() {
		return "", 0, fail(capability.ReasonInvalidRequest, "%s is a directory", p)
	}
	if fi.Size() > maxEditBytes {
		return "", 0, fail(capability.ReasonFileTooLarge, "%s is %d bytes; edits are limited to %d bytes", p, fi.Size(), maxEditBytes)
	}
	data, err := fsys.ReadFile(ctx, p)
	if err != nil {
		return "", 0, fsErr(err)
	}
	if isBinary(data) {
		return "", 0, fail(capability.ReasonFileBinary, "%s looks binary; it cannot be edited as text", p)
	}
	return string(data), fi.Mode().Perm(), nil
}

// fileChange is what an Edit or MultiEdit call would write: the file's
// content now and after the call. Call and Preview compute it with the
// same function, so the diff a human approves is the change the call
// makes.
type fileChange struct {
	path     string
	old, new string
	perm     fs.FileMode
	edits    int
	replaced int
}

// planEdit reads the file of an Edit call through the guard and applies
// the edit in memory.
func planEdit(ctx context.Context, fsys tool.FS, in tool.Input) (fileChange, error) {
	var a struct {
		Path string `json:"path"`
		edit
	}
	if err := in.Decode(&a); err != nil {
		return fileChange{}, fail(capability.ReasonInvalidRequest, "%v", err)
	}
	s, perm, err := loadForEdit(ctx, fsys, a.Path)
	if err != nil {
		return fileChange{}, err
	}
	out, n, err := a.edit.apply(s, "")
	if err != nil {
		return fileChange{}, err
	}
	return fileChange{path: a.Path, old: s, new: out, perm: perm, edits: 1, replaced: n}, nil
}

// planMultiEdit is planEdit for MultiEdit: every edit in order, all or
// nothing.
func planMultiEdit(ctx context.Context, fsys tool.FS, in tool.Input) (fileChange, error) {
	var a struct {
		Path  string `json:"path"`
		Edits []edit `json:"edits"`
	}
	if err := in.Decode(&a); err != nil {
		return fileChange{}, fail(capability.ReasonInvalidRequest, "%v", err)
	}
	old, perm, err := loadForEdit(ctx, fsys, a.Path)
	if err != nil {
		return fileChange{}, err
	}
	s, total := old, 0
	for i, e := range a.Edits {
		var n int
		if s, n, err = e.apply(s, fmt.Sprintf("edit %d of %d: ", i+1, len(a.Edits))); err != nil {
			return fileChange{}, err
		}
		total += n
	}
	return fileChange{path: a.Path, old: old, new: s, perm: perm, edits: len(a.Edits), replaced: total}, nil
}

// previewEdits is the approval preview of Edit and MultiEdit: the unified
// diff of the file now and after the call.
func previewEdits(plan func(context.Context, tool.FS, tool.Input) (fileChange, error)) func(context.Context, tool.Env, tool.Input) (string, error) {
	return func(ctx context.Context, env tool.Env, in tool.Input) (string, error) {
		fsys, err := needFS(env)
		if err != nil {
			return "", err
		}
		c, err := plan(ctx, fsys, in)
		if err != nil {
			return "", err
		}
		return fileDiff(strings.TrimPrefix(c.path, "workspace://"), c.old, c.new, true), nil
	}
}

// fileDiff is the preview of a change of the file name from old (absent
// when !existed) to new: their unified diff (the approval preview's bound
// cuts a long one, with its marker).
func fileDiff(name, old, new string, existed bool) string {
	from := "a/" + name
	if !existed {
		from = "/dev/null"
	}
	return textdiff.Unified(from, "b/"+name, old, new)
}

// previewWrite is the approval preview of Write: the unified diff of the
// file now (nothing, for a new file) and the content written. A file that
// is binary or too large to load is named, not shown.
func previewWrite(ctx context.Context, env tool.Env, in tool.Input) (string, error) {
	fsys, err := needFS(env)
	if err != nil {
		return "", err
	}
	p, content := str(in, "path", ""), str(in, "content", "")
	name := strings.TrimPrefix(p, "workspace://")
	fi, err := fsys.Stat(ctx, p)
	switch {
	case err != nil && capability.ReasonOf(err) != "":
		return "", err
	case err != nil:
		return fileDiff(name, "", content, false), nil
	case fi.IsDir():
		return "", fail(capability.ReasonInvalidRequest, "%s is a directory", p)
	}
	old, _, err := loadForEdit(ctx, fsys, p)
	if err != nil {
		return fmt.Sprintf("(%s now: not shown: %v)\n", name, err) + fileDiff(name, "", content, false), nil
	}
	if old == content {
		return fmt.Sprintf("(no change: %s already holds this content)", name), nil
	}
	return fileDiff(name, old, content, true), nil
}

func editTool() tool.Spec {
	return tool.Spec{
		Name:        "Edit",
		Description: "Replace an exact string in a workspace file.",
		Prompt: "Replaces old_string with new_string in a workspace file. old_string must match the file exactly (whitespace and indentation included) and, " +
			"unless replace_all is true, exactly once: no match is EDIT_NO_MATCH, several matches is EDIT_AMBIGUOUS with the count — add context to make it unique. " +
			"The file is rewritten atomically through the file guard; denied paths are refused and nothing changes.",
		Schema:   json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path","old_string","new_string"],"properties":{` + pathProp + `,` + editProps + `}}`),
		Accesses: readWriteAccess,
		Preview:  previewEdits(planEdit),
		Call: func(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
			fsys, err := needFS(env)
			if err != nil {
				return tool.Result{}, err
			}
			c, err := planEdit(ctx, fsys, in)
			if err != nil {
				return tool.Result{}, err
			}
			if err := fsys.WriteFile(ctx, c.path, []byte(c.new), c.perm); err != nil {
				return tool.Result{}, fsErr(err)
			}
			return tool.Result{Content: fmt.Sprintf("edited %s: %s replaced", c.path, plural(c.replaced, "occurrence", "occurrences"))}, nil
		},
	}
}

func multiEditTool() tool.Spec {
	return tool.Spec{
		Name:        "MultiEdit",
		Description: "Apply several exact-string replacements to one workspace file, all or nothing.",
		Prompt: "Applies a list of edits (each like Edit: old_string, new_string, replace_all) to one file, in order, each on the result of the previous one. " +
			"Either every edit applies and the file is written once, atomically, or none does and the error names the failing edit (EDIT_NO_MATCH, EDIT_AMBIGUOUS).",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path","edits"],"properties":{` + pathProp +
			`,"edits":{"type":"array","minItems":1,"maxItems":200,"items":{"type":"object","additionalProperties":false,"required":["old_string","new_string"],"properties":{` + editProps + `}}}}}`),
		Accesses: readWriteAccess,
		Preview:  previewEdits(planMultiEdit),
		Call: func(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
			fsys, err := needFS(env)
			if err != nil {
				return tool.Result{}, err
			}
			c, err := planMultiEdit(ctx, fsys, in)
			if err != nil {
				return tool.Result{}, err
			}
			if err := fsys.WriteFile(ctx, c.path, []byte(c.new), c.perm); err != nil {
				return tool.Result{}, fsErr(err)
			}
			return tool.Result{Content: fmt.Sprintf("edited %s: %s, %s replaced", c.path, plural(c.edits, "edit", "edits"), plural(c.replaced, "occurrence", "occurrences"))}, nil
		},
	}
}

func lsTool() tool.Spec {
	return tool.Spec{
		Name:        "LS",
		Description: "List a workspace directory.",
		Prompt: "Lists the entries of a workspace directory (default: the workspace root), directories first marked with a trailing /, symbolic links with @. " +
			"Entries the policy denies are not shown. ignore takes glob patterns matched against entry names. At most 1000 entries are listed.",
		Schema:           json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"path":{"type":"string","minLength":1,"maxLength":4096},"ignore":{"type":"array","maxItems":64,"items":{"type":"string","minLength":1,"maxLength":256}}}}`),
		ReadOnly:         yes,
		ConcurrencySafe:  yes,
		CheckPermissions: allow,
		Accesses:         readAccess("path"),
		Call: func(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
			fsys, err := needFS(env)
			if err != nil {
				return tool.Result{}, err
			}
			var a struct {
				Path   string
				Ignore []string
			}
			if err := in.Decode(&a); err != nil {
				return tool.Result{}, fail(capability.ReasonInvalidRequest, "%v", err)
			}
			for _, g := range a.Ignore {
				if !doublestar.ValidatePattern(g) {
					return tool.Result{}, fail(capability.ReasonInvalidRequest, "ignore pattern %q is not a valid glob", g)
				}
			}
			p := pathOr(in, "path")
			ents, err := fsys.ReadDir(ctx, p)
			if err != nil {
				return tool.Result{}, fsErr(err)
			}
			var dirs, files []string
			for _, e := range ents {
				if slices.ContainsFunc(a.Ignore, func(g string) bool { ok, _ := doublestar.Match(g, e.Name()); return ok }) {
					continue
				}
				switch {
				case e.IsDir():
					dirs = append(dirs, e.Name()+"/")
				case e.Type()&fs.ModeSymlink != 0:
					files = append(files, e.Name()+"@")
				default:
					files = append(files, e.Name())
				}
			}
			all := append(dirs, files...)
			if len(all) == 0 {
				return tool.Result{Content: "(empty directory)"}, nil
			}
			more := ""
			if len(all) > maxLSEntries {
				more = fmt.Sprintf("\n(%d more entries not shown)", len(all)-maxLSEntries)
				all = all[:maxLSEntries]
			}
			return tool.Result{Content: joinLines(all) + more}, nil
		},
	}
}
