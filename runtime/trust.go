package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/internal/filetrust"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/settings"
)

// TrustedFiles are the workspace's files that decide what runs and that
// the agent, a pull or a plugin could change: the workspace policy and
// the workspace and local settings files, relative to the workspace. The
// user's own settings file (in the configuration directory) and managed
// settings are not among them: they are the user's and the
// administrator's, outside the workspace (the floor denies the user's
// directory to every tool when it lies inside the workspace).
//
// Open applies such a file only as far as the user accepted it: a change
// since the accepted version (at first sight: since no file, the
// built-in defaults) that only narrows is applied, and becomes the
// accepted version; one that widens is held: the accepted version is
// applied with the parts of the change that narrow it (new deny and ask
// rules, allow rules the file dropped, a lower mode, the policy's deny
// globs and lower ceilings), Warn gets the delta, and Options.Accept may
// ask the user. Only what widens waits. `norma policy trust` ([Trust])
// accepts what the files hold now.
var TrustedFiles = []string{PolicyFile, settings.WorkspaceFile, settings.LocalFile}

// PolicyTrustFile is where the accepted versions are recorded, under
// Norma's state directory.
const PolicyTrustFile = filetrust.FileName

// FileChange is a trusted file whose content differs from the version the
// user accepted.
type FileChange struct {
	// File is the file's path relative to the workspace.
	File string `json:"file"`
	// Held says the change widens and is not applied: the accepted version
	// (or, with FirstSight, none) is, with the parts of the change that
	// narrow it.
	Held bool `json:"held"`
	// FirstSight says nothing was accepted yet: the change is from the
	// built-in defaults (no file).
	FirstSight bool `json:"first_sight,omitempty"`
	// Removed says the file no longer exists.
	Removed bool `json:"removed,omitempty"`
	// Delta is the change, classified by the manifest diff engine.
	Delta manifest.Delta `json:"delta"`

	content version // what the file held when the delta was made
}

// String is the change as a warning: what the file does now, then, for
// a held change, what of it waits and what applies now, then each change
// of the delta on its own line, escaped (the file is workspace content).
func (c FileChange) String() string {
	var b strings.Builder
	except := ""
	if c.Held && len(narrowings(c.Delta)) > 0 {
		except = ", except the parts that narrow"
	}
	switch {
	case c.Held && c.FirstSight:
		fmt.Fprintf(&b, "%s widens the built-in defaults and has not been accepted: not applied%s", c.File, except)
	case c.Held && except != "":
		fmt.Fprintf(&b, "%s changed since it was accepted and the change widens: not applied%s (they apply on top of the accepted version)", c.File, except)
	case c.Held:
		fmt.Fprintf(&b, "%s changed since it was accepted and the change widens: not applied (the accepted version is)", c.File)
	default:
		fmt.Fprintf(&b, "%s changed since it was accepted; the change only narrows and is applied", c.File)
	}
	for _, l := range deltaLines(c.Delta, c.Held) {
		b.WriteString("\n  " + l)
	}
	return b.String()
}

// DeltaLines are the changes of d, one a line, escaped: "+ " for what
// widens (added, widened), "- " for what narrows. When d widens, the
// first line says what of it waits for `norma policy trust` and what
// applies now ("held: 1 allow rule waits for `norma policy trust`; 1 deny
// rule applies now"): a run holds such a change, and applies its
// narrowing parts at once.
func DeltaLines(d manifest.Delta) []string { return deltaLines(d, d.NeedsConsent()) }

// deltaLines are the changes of d as [DeltaLines] has them, with the held
// summary first when held.
func deltaLines(d manifest.Delta, held bool) []string {
	var out []string
	if held {
		out = append(out, termtext.Escape(heldSummary(d)))
	}
	for _, l := range []struct {
		sign, what string
		list       []manifest.Change
	}{{"+", "added", d.Added}, {"+", "widened", d.Widened}, {"-", "removed", d.Removed}, {"-", "narrowed", d.Narrowed}} {
		for _, c := range l.list {
			out = append(out, l.sign+" "+l.what+" "+termtext.Escape(c.String()))
		}
	}
	return out
}

// version is a trusted file's content: its bytes, or no file.
type version struct {
	data   []byte
	absent bool
}

func (v version) digest() string { return filetrust.Digest(v.data, v.absent) }

// readCurrent reads a trusted file as a run would: the policy when it is a
// regular file (else none, as [LoadPolicy]), a settings file with the
// checks of settings.ReadData.
func readCurrent(dir, rel string) (version, error) {
	p := filepath.Join(dir, rel)
	if rel == PolicyFile {
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			return version{absent: true}, nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return version{}, err
		}
		return version{data: b}, nil
	}
	b, err := settings.ReadData(p, settingsScope(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return version{absent: true}, nil
	}
	if err != nil {
		return version{}, err
	}
	return version{data: b}, nil
}

func settingsScope(rel string) settings.Scope {
	if rel == settings.LocalFile {
		return settings.ScopeLocal
	}
	return settings.ScopeWorkspace
}

// parsePolicy parses a version of the policy file; nil for none.
func parsePolicy(dir string, v version) (*manifest.Layer, error) {
	if v.absent {
		return nil, nil
	}
	return manifest.ParseLayer(filepath.Join(dir, PolicyFile), v.data)
}

// parseSettings parses a version of a settings file; nil for none.
func parseSettings(dir, rel string, v version) (*settings.File, error) {
	if v.absent {
		return nil, nil
	}
	return settings.Parse(filepath.Join(dir, rel), v.data, settingsScope(rel), dir)
}

var errAcceptedUnparsable = errors.New("workspace: the accepted version does not parse")

// fileDelta is what changes from old to new of the trusted file rel.
func fileDelta(dir, rel string, old, new version) (manifest.Delta, error) {
	if rel == PolicyFile {
		o, err := parsePolicy(dir, old)
		if err != nil {
			return manifest.Delta{}, errAcceptedUnparsable
		}
		n, err := parsePolicy(dir, new)
		if err != nil {
			return manifest.Delta{}, err
		}
		return manifest.DiffCeiling(o, n), nil
	}
	o, err := parseSettings(dir, rel, old)
	if err != nil {
		return manifest.Delta{}, errAcceptedUnparsable
	}
	n, err := parseSettings(dir, rel, new)
	if err != nil {
		return manifest.Delta{}, err
	}
	return SettingsDelta(o, n), nil
}

// modeOrder ranks the permission modes by what runs without the user's
// yes: plan runs nothing that mutates, dontAsk what the rules allow,
// default also read-only calls, acceptEdits also the policy's file edits,
// bypassPermissions everything.
var modeOrder = []string{gate.ModePlan.String(), gate.ModeDontAsk.String(), gate.ModeDefault.String(),
	gate.ModeAcceptEdits.String(), gate.ModeBypass.String()}

// SettingsDelta is what changes from one version of a settings file to
// another (nil: no file), in the terms of the manifest diff engine: allow
// rules, additional directories and environment entries grant; ask and
// deny rules restrict; hooks decide either way (a new one may allow, a
// dropped one may have blocked); the default mode is ranked by modeOrder;
// the network section is compared as the request list it is (the
// built-in web tools' destinations).
func SettingsDelta(old, new *settings.File) manifest.Delta {
	o, n := fileSettings(old), fileSettings(new)
	var d manifest.Delta
	rules := func(s *settings.Settings, list string) []string {
		var out []string
		for _, r := range s.Rules {
			if r.List == list {
				out = append(out, r.Text)
			}
		}
		return out
	}
	d.Join(manifest.DiffList("permissions.allow", rules(o, "allow"), rules(n, "allow"), manifest.Grants))
	d.Join(manifest.DiffList("permissions.ask", rules(o, "ask"), rules(n, "ask"), manifest.Restricts))
	d.Join(manifest.DiffList("permissions.deny", rules(o, "deny"), rules(n, "deny"), manifest.Restricts))
	mode := func(s *settings.Settings) string {
		if s.DefaultMode == "" {
			return gate.ModeDefault.String()
		}
		if m, err := gate.ParseMode(s.DefaultMode); err == nil {
			return m.String()
		}
		return s.DefaultMode
	}
	d.Join(manifest.DiffRank("permissions.defaultMode", mode(o), mode(n), modeOrder))
	d.Join(manifest.DiffList("permissions.additionalDirectories", o.AdditionalDirs, n.AdditionalDirs, manifest.Grants))
	d.Join(manifest.DiffList("env", o.EnvList(), n.EnvList(), manifest.Grants))
	hooks := func(s *settings.Settings) []string {
		var out []string
		for _, h := range s.Hooks {
			out = append(out, fmt.Sprintf("%s %q %s", h.Event, h.Matcher, h.Command))
		}
		return out
	}
	d.Join(manifest.DiffList("hook", hooks(o), hooks(n), manifest.Decides))
	d.Join(manifest.DiffPermissions(manifest.Permissions{Network: o.Network}, manifest.Permissions{Network: n.Network}))
	return d
}

// fileSettings is one file's settings alone.
func fileSettings(f *settings.File) *settings.Settings {
	if f == nil {
		return settings.Merge(nil)
	}
	return settings.Merge([]*settings.File{f})
}

// applied are the versions of the trusted files Open applies, and the
// changes it found. A held settings file's version in force is in files
// (the accepted version with the narrowing parts of the change, which
// has no bytes of its own); a held policy's is in versions, rendered.
type applied struct {
	versions map[string]version
	files    map[string]*settings.File
	changes  []FileChange
}

// compare reads the trusted file rel of dir and compares it with the
// version accepted in store (nil: none). same says they are equal; else
// the change's delta is made. An accepted version that no longer parses
// (a record of another Norma) counts as nothing accepted: the change is
// then judged against the built-in defaults.
func compare(store *filetrust.Store, dir, rel string) (c FileChange, acc version, same bool, err error) {
	cur, err := readCurrent(dir, rel)
	if err != nil {
		return c, acc, false, err
	}
	acc = version{absent: true}
	seen := false
	if store != nil {
		rec, ok, err := store.Get(dir, rel)
		if err != nil {
			return c, acc, false, err
		}
		if ok {
			acc, seen = version{data: rec.Content, absent: rec.Absent}, true
		}
	}
	if cur.digest() == acc.digest() {
		return FileChange{File: rel, content: cur}, acc, true, nil
	}
	d, err := fileDelta(dir, rel, acc, cur)
	if errors.Is(err, errAcceptedUnparsable) {
		acc, seen = version{absent: true}, false
		d, err = fileDelta(dir, rel, acc, cur)
	}
	if err != nil {
		return c, acc, false, err
	}
	return FileChange{File: rel, Held: d.NeedsConsent(), FirstSight: !seen, Removed: cur.absent, Delta: d, content: cur}, acc, false, nil
}

// resolve decides, for each trusted file of dir, which version Open
// applies (see [TrustedFiles]). Without a state directory nothing can be
// accepted: a widening change is held, with nothing to accept it by.
// skipPolicy leaves the policy file out (Options.Policy replaces it).
func resolve(dir string, o *Options, skipPolicy bool) (applied, error) {
	a := applied{versions: map[string]version{}, files: map[string]*settings.File{}}
	var store *filetrust.Store
	if o.Home != "" {
		s, err := filetrust.Open(o.Home)
		if err != nil {
			return a, err
		}
		store = s
	}
	for _, rel := range TrustedFiles {
		if skipPolicy && rel == PolicyFile {
			continue
		}
		c, acc, same, err := compare(store, dir, rel)
		if err != nil {
			return a, err
		}
		by := "narrowing"
		switch {
		case same:
			a.versions[rel] = c.content
			continue
		case c.Held && (store == nil || o.Accept == nil || !o.Accept(c)):
			if err := a.hold(dir, rel, acc, c); err != nil {
				return a, err
			}
			a.changes = append(a.changes, c)
			continue
		case c.Held:
			by, c.Held = "terminal", false
		}
		a.versions[rel] = c.content
		if !c.Delta.Empty() {
			a.changes = append(a.changes, c)
		}
		if store != nil && !o.ReadOnly && !o.Describe {
			if err := store.Accept(dir, rel, c.content.data, c.content.absent, by); err != nil {
				return a, err
			}
		}
	}
	return a, nil
}

// hold records the version in force of the trusted file rel of dir while
// its change c from the accepted version acc is held: acc with the parts
// of c that narrow it (see held.go). The result is asked of the diff
// engine once more: should it widen acc, which would be a fault of the
// composition, Open fails rather than apply it.
func (a applied) hold(dir, rel string, acc version, c FileChange) error {
	a.versions[rel] = acc
	if len(narrowings(c.Delta)) == 0 {
		return nil
	}
	if rel == PolicyFile {
		old, err := parsePolicy(dir, acc)
		if err != nil {
			return err
		}
		cur, err := parsePolicy(dir, c.content)
		if err != nil {
			return err
		}
		// Rendered and parsed again: the version in force passes the
		// checks of every policy file.
		data, err := heldLayer(old, cur, c.Delta).Marshal()
		if err != nil {
			return fmt.Errorf("workspace: %s: composing the held version: %w", rel, err)
		}
		v := version{data: data}
		eff, err := parsePolicy(dir, v)
		if err != nil {
			return fmt.Errorf("workspace: %s: composing the held version: %w", rel, err)
		}
		if d := manifest.DiffCeiling(old, eff); d.NeedsConsent() {
			return fmt.Errorf("workspace: %s: the narrowing parts of its held change would widen the accepted version (%s): not applied", rel, strings.Join(deltaLines(d, false), "; "))
		}
		a.versions[rel] = v
		return nil
	}
	old, err := parseSettings(dir, rel, acc)
	if err != nil {
		return err
	}
	cur, err := parseSettings(dir, rel, c.content)
	if err != nil {
		return err
	}
	eff := heldSettings(old, cur, c.Delta)
	if d := SettingsDelta(old, eff); d.NeedsConsent() {
		return fmt.Errorf("workspace: %s: the narrowing parts of its held change would widen the accepted version (%s): not applied", rel, strings.Join(deltaLines(d, false), "; "))
	}
	a.files[rel] = eff
	return nil
}

// readWorkspace is the settings loader's reader of the workspace files:
// the versions resolve chose.
func (a applied) readWorkspace(dir string) func(string, settings.Scope) (*settings.File, error) {
	return func(path string, scope settings.Scope) (*settings.File, error) {
		rel := settings.WorkspaceFile
		if scope == settings.ScopeLocal {
			rel = settings.LocalFile
		}
		if f, ok := a.files[rel]; ok {
			return f, nil
		}
		return parseSettings(dir, rel, a.versions[rel])
	}
}

// Changes reports the trusted files of dir that differ from the versions
// accepted in the state directory home, with their deltas, as Open would
// find them; nothing is recorded. A file that does not parse is an error.
func Changes(dir, home string) ([]FileChange, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	store, err := filetrust.Open(home)
	if err != nil {
		return nil, err
	}
	var out []FileChange
	for _, rel := range TrustedFiles {
		c, _, same, err := compare(store, dir, rel)
		if err != nil {
			return nil, err
		}
		if !same {
			out = append(out, c)
		}
	}
	return out, nil
}

// Trust records the content of each change, as [Changes] read it (the
// content whose delta the user was shown, not what the file holds by
// now), as accepted in the state directory home (`norma policy trust`).
// by says how the user accepted it.
func Trust(dir, home, by string, changes []FileChange) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	store, err := filetrust.Open(home)
	if err != nil {
		return err
	}
	for _, c := range changes {
		if !slices.Contains(TrustedFiles, c.File) {
			return fmt.Errorf("workspace: %s is not a trusted file", c.File)
		}
		if err := store.Accept(dir, c.File, c.content.data, c.content.absent, by); err != nil {
			return err
		}
	}
	return nil
}

// heldNote is the note for a held change's Warn.
func heldNote(dir string, c FileChange) error {
	return errors.New(c.String() + "\n  review and accept with: norma policy trust --workspace " + termtext.Escape(dir))
}

// AcceptContent records data as the accepted version of the trusted file
// rel of dir, in the state directory home: for a command of the user's
// that wrote the file with that content (`norma settings import --out`).
func AcceptContent(dir, home, rel string, data []byte, by string) error {
	if !slices.Contains(TrustedFiles, rel) {
		return fmt.Errorf("workspace: %s is not a trusted file", rel)
	}
	store, err := filetrust.Open(home)
	if err != nil {
		return err
	}
	return store.Accept(dir, rel, data, false, by)
}

// TrustedFileOf returns which trusted file of dir path is, if any.
func TrustedFileOf(dir, path string) (string, bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	for _, rel := range TrustedFiles {
		if abs == filepath.Join(d, rel) {
			return rel, true
		}
	}
	return "", false
}
