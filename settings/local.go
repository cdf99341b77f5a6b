package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/norma-run/norma/internal/filetrust"
	"github.com/norma-run/norma/manifest"
)

// ErrRuleNotFound is returned by [RemoveLocalAllow] for a rule the local
// settings file does not allow.
var ErrRuleNotFound = errors.New("settings: the rule is not in the local settings file's permissions.allow")

// AddLocalAllow adds rules to permissions.allow of the workspace's
// .norma/settings.local.yaml ([LocalFile]), creating the file (and
// .norma) when missing; rules it already allows are not repeated. It is
// what "always" at an approval prompt writes.
//
// The file stays valid and nothing else in it changes: the new content is
// written to a temporary file next to it, read back and parsed with
// [Parse] (and checked to differ from the old content in the allow list
// only), then renamed over it, so a reader sees the old file or the new
// one, never a mix. Comments and layout survive when the file already has
// an allow list or a block-style mapping; otherwise the file is written
// anew from its values (its comments are lost). Writers of one workspace
// are serialized by a lock on the .norma directory. A rule that does not
// parse, an existing file that is invalid or not a regular file, is an
// error and nothing is written.
func AddLocalAllow(workspace string, rules ...string) error {
	for _, r := range rules {
		if err := checkRule(r); err != nil {
			return fmt.Errorf("settings: %q is not a permission rule: %w", r, err)
		}
	}
	return editLocal(workspace, true, func(cur []string) ([]string, error) {
		want := slices.Clone(cur)
		for _, r := range rules {
			if !slices.Contains(want, r) {
				want = append(want, r)
			}
		}
		return want, nil
	})
}

// WithLocalAllow returns data, a version of the local settings file at
// path (nil: none), with rules added to its allow list as [AddLocalAllow]
// adds them. Package workspace applies it to the version the user
// accepted, so that the accepted version grows by the rules the user said
// "always" to and by nothing else the file may hold.
func WithLocalAllow(path string, data []byte, rules ...string) ([]byte, error) {
	var cur []string
	if len(data) > 0 {
		f, err := Parse(path, data, ScopeLocal, filepath.Dir(filepath.Dir(path)))
		if err != nil {
			return nil, err
		}
		cur = allowOf(f)
	}
	want := slices.Clone(cur)
	for _, r := range rules {
		if err := checkRule(r); err != nil {
			return nil, fmt.Errorf("settings: %q is not a permission rule: %w", r, err)
		}
		if !slices.Contains(want, r) {
			want = append(want, r)
		}
	}
	return withAllow(path, data, want)
}

// AcceptLocalAllow records, in the state directory home, that the user
// accepted rules for the local file of workspace (an "always" answer at an
// approval prompt, which [AddLocalAllow] wrote to the file): the rules are
// added to the version the user accepted before, not the file's whole
// content, so that a change of the file still held stays held (package
// workspace applies the files as far as they were accepted).
func AcceptLocalAllow(home, workspace string, rules ...string) error {
	store, err := filetrust.Open(home)
	if err != nil {
		return err
	}
	path := filepath.Join(workspace, LocalFile)
	return store.Update(workspace, LocalFile, "approval", func(old []byte, absent bool) ([]byte, bool, error) {
		if absent {
			old = nil
		}
		b, err := WithLocalAllow(path, old, rules...)
		return b, false, err
	})
}

// RemoveLocalAllow removes every occurrence of rule from permissions.allow
// of the workspace's .norma/settings.local.yaml, written as
// [AddLocalAllow] writes. A rule that is not there (or a missing file) is
// an error wrapping [ErrRuleNotFound]; rules of the other lists and of the
// other files are never touched.
func RemoveLocalAllow(workspace, rule string) error {
	return editLocal(workspace, false, func(cur []string) ([]string, error) {
		want := slices.DeleteFunc(slices.Clone(cur), func(s string) bool { return s == rule })
		if len(want) == len(cur) {
			return nil, fmt.Errorf("%w: %q", ErrRuleNotFound, rule)
		}
		return want, nil
	})
}

// editLocal runs edit on the allow list of the local file under the
// directory lock and writes the result atomically.
func editLocal(workspace string, create bool, edit func(cur []string) ([]string, error)) error {
	if workspace == "" {
		return errors.New("settings: no workspace")
	}
	path := filepath.Join(workspace, LocalFile)
	dir := filepath.Dir(path)
	if create {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("settings: %w", err)
		}
	}
	unlock, err := lockDir(dir)
	if errors.Is(err, fs.ErrNotExist) && !create {
		_, err = edit(nil)
		return err
	}
	if err != nil {
		return err
	}
	defer unlock()

	data, mode, err := readLocal(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && create:
		data, mode = nil, 0o644
	case errors.Is(err, fs.ErrNotExist):
		_, err = edit(nil)
		return err
	case err != nil:
		return err
	}
	var cur []string
	if len(data) > 0 {
		f, err := Parse(path, data, ScopeLocal, workspace)
		if err != nil {
			return fmt.Errorf("settings: %s is not valid, fix it first: %w", path, err)
		}
		cur = allowOf(f)
	}
	want, err := edit(cur)
	if err != nil {
		return err
	}
	if slices.Equal(want, cur) && len(data) > 0 {
		return nil
	}
	out, err := withAllow(path, data, want)
	if err != nil {
		return err
	}
	return writeChecked(path, dir, out, mode, workspace, want)
}

// lockDir takes an exclusive advisory lock on dir until unlock.
func lockDir(dir string) (unlock func(), err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX); err != nil {
		d.Close()
		return nil, fmt.Errorf("settings: lock %s: %w", dir, err)
	}
	return func() {
		syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
		d.Close()
	}, nil
}

// readLocal reads the local file, which must be a regular file (not a
// symbolic link: the rename would replace the link, not what it names).
func readLocal(path string) ([]byte, fs.FileMode, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("settings: %s is not a regular file; not changing it", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, manifest.MaxFileSize+1))
	if err != nil {
		return nil, 0, err
	}
	return data, fi.Mode().Perm(), nil
}

func allowOf(f *File) []string {
	var out []string
	for _, r := range f.Rules {
		if r.List == "allow" {
			out = append(out, r.Text)
		}
	}
	return out
}

// withAllow returns data with permissions.allow set to want, keeping
// everything else: by editing the document in place when it can, else by
// writing its values anew. Each candidate is checked by sameButAllow.
func withAllow(path string, data []byte, want []string) ([]byte, error) {
	if out, ok := editInPlace(data, want); ok && sameButAllow(data, out, want) {
		return out, nil
	}
	out, err := rewrite(data, want)
	if err != nil {
		return nil, fmt.Errorf("settings: %s: %w", path, err)
	}
	if !sameButAllow(data, out, want) {
		return nil, fmt.Errorf("settings: %s: the new content would change more than permissions.allow; not written", path)
	}
	return out, nil
}

// quoted is rule as a YAML double-quoted scalar (a JSON string is one).
func quoted(rule string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(rule) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// editInPlace edits the document's syntax tree (comments kept) or, where
// the allow list is missing, inserts lines of text.
func editInPlace(data []byte, want []string) ([]byte, bool) {
	if len(bytes.TrimSpace(data)) == 0 {
		return []byte(blockAllow("", want)), true
	}
	f, err := parser.ParseBytes(data, parser.ParseComments)
	if err != nil || len(f.Docs) != 1 {
		return nil, false
	}
	body := f.Docs[0].Body
	root, isMap := body.(*ast.MappingNode)
	if body == nil || isComment(body) {
		return append(withNewline(data), blockAllow("", want)...), true
	}
	if !isMap {
		if mv, ok := body.(*ast.MappingValueNode); ok {
			root = &ast.MappingNode{Values: []*ast.MappingValueNode{mv}}
		} else {
			return nil, false
		}
	}
	perm := valueOf(root, "permissions")
	if perm == nil {
		if root.IsFlowStyle {
			return nil, false
		}
		return append(withNewline(data), blockAllow("", want)...), true
	}
	pm, ok := asMapping(perm)
	if !ok {
		return nil, false
	}
	allow := valueOf(pm, "allow")
	if allow == nil {
		if pm.IsFlowStyle || len(pm.Values) == 0 {
			return nil, false
		}
		// Insert before the first key of the permissions mapping, at its
		// indentation.
		first := pm.Values[0].Key.GetToken().Position
		line := strings.Split(string(data), "\n")
		at := first.Line - 1
		if at < 0 || at >= len(line) || first.Column < 2 || len(line[at]) < first.Column-1 ||
			strings.TrimLeft(line[at][:first.Column-1], " ") != "" {
			return nil, false
		}
		ins := blockAllow(strings.Repeat(" ", first.Column-1), want)
		lines := slices.Insert(line, at, strings.TrimSuffix(ins, "\n"))
		return []byte(strings.Join(lines, "\n")), true
	}
	seq, ok := allow.(*ast.SequenceNode)
	if !ok {
		return nil, false
	}
	// Keep the entries still wanted (with their comments), then append
	// the new ones.
	kept := make([]ast.Node, 0, len(seq.Values))
	var keptComments []*ast.CommentGroupNode
	aligned := len(seq.ValueHeadComments) == len(seq.Values)
	var have []string
	for i, v := range seq.Values {
		s, ok := scalarText(v)
		if !ok {
			return nil, false
		}
		if slices.Contains(want, s) && !slices.Contains(have, s) {
			kept = append(kept, v)
			have = append(have, s)
			if aligned {
				keptComments = append(keptComments, seq.ValueHeadComments[i])
			}
		}
	}
	for _, r := range want {
		if slices.Contains(have, r) {
			continue
		}
		n, ok := quotedNode(r)
		if !ok {
			return nil, false
		}
		kept = append(kept, n)
		have = append(have, r)
		if aligned {
			keptComments = append(keptComments, nil)
		}
	}
	if len(kept) == 0 && !seq.IsFlowStyle {
		return nil, false // an empty block sequence is null; rewrite it
	}
	seq.Values = kept
	if aligned {
		seq.ValueHeadComments = keptComments
	}
	return []byte(f.String()), true
}

func isComment(n ast.Node) bool {
	_, ok := n.(*ast.CommentGroupNode)
	return ok
}

func withNewline(b []byte) []byte {
	out := slices.Clone(b)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return out
}

// blockAllow is a permissions.allow block at indent (or, with indent "",
// a whole permissions mapping).
func blockAllow(indent string, want []string) string {
	var b strings.Builder
	inner := indent
	if indent == "" {
		b.WriteString("permissions:\n")
		inner = "  "
	}
	b.WriteString(inner + "allow:")
	if len(want) == 0 {
		b.WriteString(" []\n")
		return b.String()
	}
	b.WriteString("\n")
	for _, r := range want {
		b.WriteString(inner + "  - " + quoted(r) + "\n")
	}
	return b.String()
}

func asMapping(n ast.Node) (*ast.MappingNode, bool) {
	switch m := n.(type) {
	case *ast.MappingNode:
		return m, true
	case *ast.MappingValueNode:
		return &ast.MappingNode{Values: []*ast.MappingValueNode{m}, IsFlowStyle: false}, true
	}
	return nil, false
}

// valueOf returns the value of key in m, or nil.
func valueOf(m *ast.MappingNode, key string) ast.Node {
	for _, mv := range m.Values {
		if k, ok := scalarText(mv.Key); ok && k == key {
			if _, null := mv.Value.(*ast.NullNode); null {
				return nil
			}
			return mv.Value
		}
	}
	return nil
}

// scalarText is the value of a string-like scalar node.
func scalarText(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.MappingKeyNode:
		return scalarText(v.Value)
	case *ast.LiteralNode:
		return v.Value.Value, true
	}
	return "", false
}

// quotedNode is a double-quoted scalar node holding rule.
func quotedNode(rule string) (ast.Node, bool) {
	f, err := parser.ParseBytes([]byte(quoted(rule)), 0)
	if err != nil || len(f.Docs) != 1 {
		return nil, false
	}
	s, ok := f.Docs[0].Body.(*ast.StringNode)
	if !ok || s.Value != rule {
		return nil, false
	}
	return s, true
}

// rewrite encodes the document's values anew with permissions.allow set
// to want (comments are lost).
func rewrite(data []byte, want []string) ([]byte, error) {
	var doc yaml.MapSlice
	if len(bytes.TrimSpace(data)) > 0 {
		if err := yaml.UnmarshalWithOptions(data, &doc, yaml.UseOrderedMap()); err != nil {
			return nil, err
		}
	}
	allow := want
	if allow == nil {
		allow = []string{}
	}
	set := false
	for i := range doc {
		if doc[i].Key != "permissions" {
			continue
		}
		pm, _ := doc[i].Value.(yaml.MapSlice)
		done := false
		for j := range pm {
			if pm[j].Key == "allow" {
				pm[j].Value, done = allow, true
			}
		}
		if !done {
			pm = append(pm, yaml.MapItem{Key: "allow", Value: allow})
		}
		doc[i].Value, set = pm, true
	}
	if !set {
		doc = append(doc, yaml.MapItem{Key: "permissions", Value: yaml.MapSlice{{Key: "allow", Value: allow}}})
	}
	return yaml.MarshalWithOptions(doc, yaml.IndentSequence(true))
}

// sameButAllow reports whether out decodes to the values of old with
// permissions.allow replaced by want.
func sameButAllow(old, out []byte, want []string) bool {
	var a, b any
	if len(bytes.TrimSpace(old)) > 0 {
		if err := yaml.Unmarshal(old, &a); err != nil {
			return false
		}
	}
	if err := yaml.Unmarshal(out, &b); err != nil {
		return false
	}
	am, _ := a.(map[string]any)
	if am == nil {
		am = map[string]any{}
	}
	pm, _ := am["permissions"].(map[string]any)
	if pm == nil {
		pm = map[string]any{}
	}
	w := make([]any, len(want))
	for i, r := range want {
		w[i] = r
	}
	pm["allow"] = w
	am["permissions"] = pm
	return reflect.DeepEqual(normalize(am), normalize(b))
}

// normalize makes decoded values comparable (an empty sequence is an
// empty []any whatever decoded it).
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}

// writeChecked writes data to a temporary file in dir, reads it back and
// parses it (it must be valid settings whose allow list is want), then
// renames it over path and syncs dir.
func writeChecked(path, dir string, data []byte, mode fs.FileMode, workspace string, want []string) (err error) {
	tmp, err := os.CreateTemp(dir, ".settings.local.yaml.tmp-*")
	if err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	name := tmp.Name()
	defer func() {
		if err != nil {
			os.Remove(name)
		}
	}()
	if _, err = tmp.Write(data); err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("settings: write %s: %w", name, err)
	}
	back, err := os.ReadFile(name)
	if err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	f, err := Parse(path, back, ScopeLocal, workspace)
	if err != nil {
		return fmt.Errorf("settings: the new %s would not be valid; not written: %w", path, err)
	}
	if got := allowOf(f); !slices.Equal(got, want) {
		return fmt.Errorf("settings: the new %s would allow %q, not %q; not written", path, got, want)
	}
	if err = os.Rename(name, path); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
