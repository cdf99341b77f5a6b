package plugin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
)

// Stopper stops the running processes of a plugin (package plugin/host
// implements it). Nil means no process is running.
type Stopper interface {
	Stop(ctx context.Context, id string) error
}

// Options configures a [Manager]. Home is required; a nil Trust opens
// HOME/trust; a nil Audit fails every operation that must be audited.
type Options struct {
	Home      string
	Trust     *TrustStore
	Audit     audit.Sink
	Consenter Consenter
	// Workspace is the workspace policy; nil means none.
	Workspace *manifest.Layer
	// Out receives the install and consent screens (default io.Discard).
	Out      io.Writer
	Now      func() time.Time
	Progress Progress
	Limits   *Limits
	Stopper  Stopper
	// Consents, when set, receives a [ConsentRecord] for every change of
	// a grant (install, update, consent, revoke), recorded by Who on Host
	// (see [DefaultWho], [DefaultHost]).
	Consents  ConsentBackend
	Who, Host string
}

// Manager installs, updates, consents to and removes plugins. State lives
// under HOME/plugins:
//
//	plugins/<id>/<version>/  the verified files, read-only (0444/0555)
//	plugins/<id>/state.json  the active version, a held version, per
//	                         version its digests, signer and trust, and
//	                         the Merkle root of every version installed
//	plugins/<id>/grant.yaml  the user grant (a policy layer of kind grant)
//	plugins/<id>/grant.json  what the grant is bound to: plugin id,
//	                         version range, permission digest
//	plugins/<id>/data/       the plugin's data directory (data_dir: true),
//	                         created by the plugin host on first start
//	plugins/.staging/        work directories; renamed into place
//
// Operations on one HOME are serialized with a flock on plugins/.lock.
type Manager struct {
	o    Options
	root string
}

// NewManager validates o and returns a Manager.
func NewManager(o Options) (*Manager, error) {
	if o.Home == "" {
		return nil, errors.New("plugin: NewManager: Home is required")
	}
	if o.Trust == nil {
		ts, err := OpenTrustStore(filepath.Join(o.Home, "trust"))
		if err != nil {
			return nil, err
		}
		o.Trust = ts
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	root := filepath.Join(o.Home, "plugins")
	if err := os.MkdirAll(filepath.Join(root, ".staging"), 0o700); err != nil {
		return nil, newErr(capability.ReasonPluginState, "init", root, "", err)
	}
	f, err := os.OpenFile(filepath.Join(root, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, newErr(capability.ReasonPluginState, "init", root, "", err)
	}
	f.Close()
	return &Manager{o: o, root: root}, nil
}

// VersionState describes one installed version.
type VersionState struct {
	ManifestDigest   string `json:"manifestDigest"`
	PermissionDigest string `json:"permissionDigest"`
	MerkleRoot       Digest `json:"merkleRoot"`
	Signer           string `json:"signer,omitempty"`
	Publisher        string `json:"publisher,omitempty"`
	// Untrusted marks an unsigned --dev install: it runs with the strict
	// sandbox profile (no network, read-only workspace) unless the user
	// granted more explicitly.
	Untrusted   bool      `json:"untrusted,omitempty"`
	InstalledAt time.Time `json:"installedAt"`
}

// State is plugins/<id>/state.json.
type State struct {
	ID       string                   `json:"id"`
	Active   string                   `json:"active"`
	Held     string                   `json:"held,omitempty"`
	Versions map[string]*VersionState `json:"versions"`
	// History maps every version installed since the plugin was installed
	// (active, held or replaced; signed or --dev), without its build
	// metadata, to its Merkle root. Update refuses a version of it with
	// other contents, and one lower than its highest without
	// AllowDowngrade ([Manager.Update]). At most [MaxVersionHistory]
	// versions, the lowest forgotten first; [Manager.Remove] deletes it
	// with the state (signed versions stay in the trust store's
	// [PluginTrust.Versions]).
	History map[string]Digest `json:"history,omitempty"`
	// Name is the server name given at install ([InstallOptions.Name]).
	Name string `json:"name,omitempty"`
	// Workspace is the one workspace root the plugin loads in
	// ([InstallOptions.Workspace]); "" means every workspace.
	Workspace string `json:"workspace,omitempty"`
}

// LoadsIn reports whether the plugin is loaded by a run in workspace root
// dir: always, unless it was installed for another workspace. Both paths
// are compared with their symbolic links resolved.
func (st *State) LoadsIn(dir string) bool {
	return st.Workspace == "" || realPath(st.Workspace) == realPath(dir)
}

// realPath is the absolute, link-free form of p (p cleaned when it
// cannot be resolved).
func realPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// ServerName is the name the plugin's tools go by: mcp__NAME__TOOL.
func (st *State) ServerName() string {
	if st.Name != "" {
		return st.Name
	}
	return st.ID
}

// add records version with state vs as installed: in Versions (its files
// are on disk) and in History.
func (st *State) add(version string, vs *VersionState) {
	st.Versions[version] = vs
	if st.History == nil {
		st.History = map[string]Digest{}
	}
	if v, err := parseVersion(version); err == nil {
		remember(st.History, v, vs.MerkleRoot)
	}
}

// Binding is plugins/<id>/grant.json: the grant applies to plugin ID, to
// versions MinVersion..MaxVersion (inclusive), and only while the active
// version's permission digest is PermissionDigest.
type Binding struct {
	ID               string    `json:"id"`
	MinVersion       string    `json:"minVersion"`
	MaxVersion       string    `json:"maxVersion"`
	PermissionDigest string    `json:"permissionDigest"`
	GrantDigest      string    `json:"grantDigest"`
	Generation       uint64    `json:"generation"`
	ConsentedAt      time.Time `json:"consentedAt"`
}

// InstallOptions configures Install and Update.
type InstallOptions struct {
	// Dev admits an unsigned package, flagged untrusted.
	Dev bool
	// AllowDowngrade admits a lower version than installed before (audited).
	AllowDowngrade bool
	// AllowUnsignedReplace lets an unsigned --dev package update a plugin
	// whose active or held version is signed (audited). Without it Update
	// refuses that (PLUGIN_UNSIGNED), even when the permissions are equal
	// and nothing would be asked: leaving the publisher's signature behind
	// is a choice the user makes explicitly, not a side effect of --dev.
	AllowUnsignedReplace bool
	// Grant, when set, is the consent (headless --yes --grant FILE); no
	// question is asked. It may not exceed what the manifest requests. At
	// install it is stored as given (normalized), intersected with what
	// the manifest requests; in an update or a consent it grants, for what
	// is asked, its items with its own rule details (approvals, secret
	// scopes and injection, modes), and all its deny globs apply. The
	// stored grant is never wider than the file on any dimension.
	Grant *manifest.Layer
	// Name is the server name the plugin's tools go by on the wire
	// (mcp__NAME__TOOL), as `norma mcp add NAME` gives it; "" means the
	// plugin id. Install refuses a name another plugin already uses.
	Name string
	// Workspace, when set, limits the plugin to that workspace root
	// (`norma mcp add --scope workspace`): a run elsewhere does not load it.
	Workspace string
}

// Result reports what Install, Update or Consent did.
type Result struct {
	ID      string
	Version string
	// Held is set when an update needs re-consent ([manifest.Delta.NeedsConsent]
	// of Delta): the new version is installed but inactive until
	// [Manager.Consent].
	Held  bool
	Delta manifest.Delta
	// Widened lists, per group, the consent items of what Delta adds or
	// widens: what a held update asks for, or what Consent asked.
	Widened map[Group][]string
	Grant   *manifest.Layer
}

func (m *Manager) lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(m.root, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, newErr(capability.ReasonPluginState, "lock", m.root, "", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, newErr(capability.ReasonPluginState, "lock", m.root, "", err)
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// staged is a verified package in a staging directory.
type staged struct {
	dir      string
	manifest *manifest.Manifest
	tree     *Tree
	v        *Verified // nil for an unsigned --dev package
}

func (s *staged) cleanup() { removeTree(s.dir) }

func (m *Manager) stage(ctx context.Context, src string, o InstallOptions) (*staged, error) {
	var rnd [8]byte
	rand.Read(rnd[:])
	dir := filepath.Join(m.root, ".staging", hex.EncodeToString(rnd[:]))
	tree, err := Stage(ctx, src, dir, &UnpackOptions{Limits: m.o.Limits, Progress: m.o.Progress})
	if err != nil {
		return nil, err
	}
	s := &staged{dir: dir, tree: tree}
	v, err := Verify(ctx, dir, &VerifyOptions{Trust: m.o.Trust, Tree: tree, Limits: m.o.Limits})
	switch {
	case err == nil:
		s.v, s.manifest = v, v.Manifest
	case capability.ReasonOf(err) == capability.ReasonPluginUnsigned && o.Dev:
		mf, err := readManifest(dir, tree)
		if err == nil {
			err = checkEntrypoint(mf, tree)
		}
		if err != nil {
			s.cleanup()
			return nil, err
		}
		s.manifest = mf
	case capability.ReasonOf(err) == capability.ReasonPluginUnsigned:
		s.cleanup()
		return nil, newErr(capability.ReasonPluginUnsigned, "install", src, "the package is not signed; pass --dev to install it as untrusted", nil)
	default:
		s.cleanup()
		return nil, err
	}
	if s.manifest.ID == manifest.BuiltinID {
		s.cleanup()
		return nil, newErr(capability.ReasonPluginManifestInvalid, "install", src, "the id "+manifest.BuiltinID+" is reserved for Norma's built-in tools", nil)
	}
	return s, nil
}

// checkRollback checks a signed package against the trust store's
// rollback table ([TrustStore.CheckRollback]); unsigned ones are checked
// against the plugin's state only ([checkVersion]).
func (m *Manager) checkRollback(s *staged, allowDowngrade bool) error {
	if s.v == nil {
		return nil
	}
	st := s.v.Statement
	return m.o.Trust.CheckRollback(st.ID, st.Version, st.MerkleRoot, allowDowngrade)
}

func (m *Manager) record(ctx context.Context, e audit.Event) error {
	if m.o.Audit == nil {
		return newErr(capability.ReasonPluginState, "audit", e.Plugin, "no audit sink configured", nil)
	}
	e.Time = m.o.Now()
	// The audit record must survive a cancelled request.
	if err := m.o.Audit.Record(context.WithoutCancel(ctx), e); err != nil {
		return newErr(capability.ReasonPluginState, "audit", e.Plugin, "audit record failed; nothing changed", err)
	}
	return nil
}

// Install verifies the package at src (directory or .tar.gz), pins its
// digest, writes the install screen, asks consent per capability group (or
// takes o.Grant), stores the grant bound to plugin id + version + permission
// digest, audits consent_granted and plugin_installed, and moves the files
// into place. A workspace policy that forbids a requested capability
// rejects the install before any question. Refusals are *capability.Error.
func (m *Manager) Install(ctx context.Context, src string, o InstallOptions) (*Result, error) {
	unlock, err := m.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	s, err := m.stage(ctx, src, o)
	if err != nil {
		return nil, err
	}
	defer s.cleanup()
	mf := s.manifest
	if _, ok, err := m.state(mf.ID); err != nil {
		return nil, err
	} else if ok {
		return nil, newErr(capability.ReasonPluginState, "install", mf.ID, "already installed; use `norma plugin update`", nil)
	}
	if err := m.checkRollback(s, o.AllowDowngrade); err != nil {
		return nil, err
	}
	if err := checkWorkspace(mf, m.o.Workspace); err != nil {
		return nil, err
	}
	q, err := installQuestions(mf)
	if err != nil {
		return nil, err
	}
	m.screen(mf, s.v)
	granted, file, err := m.consent(ctx, mf, q, s.v == nil, o.Grant)
	if err != nil {
		return nil, err
	}
	grant, err := newGrant(mf, nil, granted, file)
	if err != nil {
		return nil, err
	}
	if err := m.checkName(mf.ID, o.Name); err != nil {
		return nil, err
	}
	st := &State{ID: mf.ID, Active: mf.Version, Versions: map[string]*VersionState{}, Name: o.Name}
	if o.Workspace != "" {
		st.Workspace = realPath(o.Workspace)
	}
	st.add(mf.Version, m.versionState(s))
	b := &Binding{ID: mf.ID, MinVersion: mf.Version, MaxVersion: mf.Version, PermissionDigest: mf.Permissions.Digest(), Generation: 1, ConsentedAt: m.o.Now().UTC()}
	if err := m.auditConsent(ctx, mf, s, o, grant); err != nil {
		return nil, err
	}
	if err := m.commit(ctx, ConsentInstall, s, st, grant, b); err != nil {
		return nil, err
	}
	return &Result{ID: mf.ID, Version: mf.Version, Grant: grant}, m.record(ctx, m.event(audit.TypePluginInstalled, mf, s))
}

func (m *Manager) auditConsent(ctx context.Context, mf *manifest.Manifest, s *staged, o InstallOptions, grant *manifest.Layer) error {
	e := m.event(audit.TypeConsentGranted, mf, s)
	e.Detail["grantDigest"] = grant.Digest()
	e.Detail["permissionDigest"] = mf.Permissions.Digest()
	if o.Grant != nil {
		e.Detail["source"] = "grant-file"
	} else {
		e.Detail["source"] = "interactive"
	}
	optionDetail(e, o)
	return m.record(ctx, e)
}

// optionDetail notes in e the options that lift a refusal.
func optionDetail(e audit.Event, o InstallOptions) {
	if o.AllowDowngrade {
		e.Detail["allowDowngrade"] = "true"
	}
	if o.AllowUnsignedReplace {
		e.Detail["allowUnsignedReplace"] = "true"
	}
}

func (m *Manager) event(typ string, mf *manifest.Manifest, s *staged) audit.Event {
	e := audit.Event{Type: typ, Plugin: mf.ID, PluginVersion: mf.Version, ManifestDigest: mf.Digest(), Detail: map[string]string{}}
	if s != nil {
		e.Detail["merkleRoot"] = s.tree.Root().String()
		if s.v != nil {
			e.Detail["signer"] = s.v.Signer
		} else {
			e.Detail["trust"] = "untrusted"
		}
	}
	return e
}

func (m *Manager) versionState(s *staged) *VersionState {
	vs := &VersionState{ManifestDigest: s.manifest.Digest(), PermissionDigest: s.manifest.Permissions.Digest(), MerkleRoot: s.tree.Root(), InstalledAt: m.o.Now().UTC(), Untrusted: s.v == nil}
	if s.v != nil {
		vs.Signer, vs.Publisher = s.v.Signer, s.v.Publisher
	}
	return vs
}

// screen writes the install screen.
func (m *Manager) screen(mf *manifest.Manifest, v *Verified) {
	w := m.o.Out
	switch {
	case v == nil:
		fmt.Fprintf(w, "UNTRUSTED: unsigned development package; it runs with the strict sandbox profile (no network, read-only workspace) unless you grant more below.\n\n")
	case v.Publisher != "":
		fmt.Fprintf(w, "Signed by %s (%s)%s\n\n", v.Publisher, v.Signer, rotatedNote(v))
	default:
		fmt.Fprintf(w, "Signed by %s%s\n\n", v.Signer, rotatedNote(v))
	}
	manifest.ShowData(w, mf, m.DataDir(mf.ID))
	fmt.Fprintln(w)
}

func rotatedNote(v *Verified) string {
	if v.Rotated {
		return ", a new key co-signed by the previous one"
	}
	return ""
}

// consent returns the consented items of the groups in items: asked, or
// taken from the grant file. A grant file may not give more than the
// manifest requests; for the groups asked it is the consent: its items of
// each group, every tool change (--yes after the screen listed them), and
// the lifting of every deny glob the file does not itself deny. For a grant
// file it also returns the file's permissions, normalized: [buildGrant]
// takes the rule details of the consented items from them, so the stored
// grant is never wider than the file.
func (m *Manager) consent(ctx context.Context, mf *manifest.Manifest, items map[Group][]string, untrusted bool, grant *manifest.Layer) (map[Group][]string, *manifest.Permissions, error) {
	if grant != nil {
		if grant.Kind != manifest.KindGrant {
			return nil, nil, newErr(capability.ReasonPluginGrantMismatch, "consent", mf.ID, "grant file has kind "+grant.Kind+", want grant", nil)
		}
		file, err := normalizeGrant(mf.ID, grant)
		if err != nil {
			return nil, nil, err
		}
		g := GrantItems(file.Permissions)
		if err := checkGrant(mf, g); err != nil {
			return nil, nil, err
		}
		if err := checkGrantSecrets(mf, file.Permissions); err != nil {
			return nil, nil, err
		}
		deny := file.Permissions.Filesystem.Deny
		// Only what this step asks about is taken from the file.
		out := map[Group][]string{}
		for k, asked := range items {
			switch k {
			case GroupTools:
				out[k] = asked
			case GroupDenyLifted:
				out[k] = slices.DeleteFunc(slices.Clone(asked), func(it string) bool {
					return slices.ContainsFunc(deny, func(d string) bool { return manifest.GlobCovers(d, it) })
				})
			default:
				if len(g[k]) > 0 {
					out[k] = g[k]
				}
			}
		}
		return out, &file.Permissions, nil
	}
	if len(items) == 0 {
		return map[Group][]string{}, nil, nil
	}
	if m.o.Consenter == nil {
		return nil, nil, newErr(capability.ReasonPluginConsentRequired, "consent", mf.ID, "consent needed: run interactively, or pass --yes with --grant FILE", nil)
	}
	out, err := ask(ctx, m.o.Consenter, mf, items, untrusted)
	return out, nil, err
}

// normalizeGrant returns grant as a reader of the stored grant.yaml would
// see it: marshalled and parsed back, so that origins, globs, rule order
// and absent sections have one spelling whoever built the layer.
func normalizeGrant(id string, grant *manifest.Layer) (*manifest.Layer, error) {
	c := *grant
	data, err := c.Marshal()
	if err == nil {
		var l *manifest.Layer
		if l, err = manifest.ParseLayer("grant.yaml", data); err == nil {
			return l, nil
		}
	}
	return nil, newErr(capability.ReasonPluginGrantMismatch, "consent", id, "grant file does not validate", err)
}

// newGrant builds the grant layer for mf from prev, the consented items
// and the grant file they came from, if any ([buildGrant]), and checks it
// against mf ([verifyGrant]).
func newGrant(mf *manifest.Manifest, prev *manifest.Permissions, consented map[Group][]string, file *manifest.Permissions) (*manifest.Layer, error) {
	p := buildGrant(mf, prev, consented, file)
	if err := verifyGrant(mf, p); err != nil {
		return nil, err
	}
	return &manifest.Layer{SchemaVersion: 2, Kind: manifest.KindGrant, Permissions: p}, nil
}

// commit seals the grant (recording the consent, action), moves the
// staged files into plugins/<id>/<version> (read-only), then writes grant
// and state; state.json last, as the commit point.
func (m *Manager) commit(ctx context.Context, action ConsentAction, s *staged, st *State, grant *manifest.Layer, b *Binding) error {
	var sealed []byte
	if grant != nil {
		var err error
		if sealed, err = m.sealGrant(ctx, action, s.manifest, grant, b); err != nil {
			return err
		}
	}
	pdir := filepath.Join(m.root, st.ID)
	if err := os.MkdirAll(pdir, 0o700); err != nil {
		return newErr(capability.ReasonPluginState, "install", pdir, "", err)
	}
	version := s.manifest.Version
	dst := filepath.Join(pdir, version)
	if _, err := os.Lstat(dst); err == nil {
		removeTree(dst) // a leftover of an interrupted or replaced install
	}
	os.Remove(filepath.Join(s.dir, SignatureName+".tmp"))
	if err := makeReadOnly(s.dir); err != nil {
		return newErr(capability.ReasonPluginState, "install", s.dir, "", err)
	}
	// Moving a directory to another parent rewrites its ".." entry, which
	// needs write permission on it (for any user but root): the top of the
	// tree becomes read-only once it is in place.
	if err := os.Chmod(s.dir, 0o700); err != nil {
		return newErr(capability.ReasonPluginState, "install", s.dir, "", err)
	}
	if err := os.Rename(s.dir, dst); err != nil {
		return newErr(capability.ReasonPluginState, "install", dst, "", err)
	}
	if err := os.Chmod(dst, 0o555); err != nil {
		return newErr(capability.ReasonPluginState, "install", dst, "", err)
	}
	if grant != nil {
		if err := m.storeGrant(st.ID, sealed, b); err != nil {
			return err
		}
	}
	if err := m.writeState(st); err != nil {
		return err
	}
	if s.v != nil {
		return m.o.Trust.Record(s.v.Statement.ID, s.v.Statement.Key, s.v.Statement.Version, s.v.Statement.MerkleRoot)
	}
	return nil
}

// writeGrant seals and stores grant for mf, bound by b.
func (m *Manager) writeGrant(ctx context.Context, action ConsentAction, mf *manifest.Manifest, grant *manifest.Layer, b *Binding) error {
	data, err := m.sealGrant(ctx, action, mf, grant, b)
	if err != nil {
		return err
	}
	return m.storeGrant(mf.ID, data, b)
}

// sealGrant encodes grant, binds b to the digest of what a reader will
// parse back (refusing a grant that would not parse), and records the
// consent (action) in the store: every grant Norma writes passes here
// first, before anything of the plugin's state changes.
func (m *Manager) sealGrant(ctx context.Context, action ConsentAction, mf *manifest.Manifest, grant *manifest.Layer, b *Binding) ([]byte, error) {
	data, err := grant.Marshal()
	if err != nil {
		return nil, err
	}
	parsed, err := manifest.ParseLayer("grant.yaml", data)
	if err != nil {
		return nil, newErr(capability.ReasonPluginState, "consent", mf.ID, "grant does not round-trip", err)
	}
	b.GrantDigest = parsed.Digest()
	r := ConsentRecord{Plugin: mf.ID, Version: mf.Version, ManifestDigest: mf.Digest(), PermissionDigest: mf.Permissions.Digest(),
		GrantDigest: b.GrantDigest, Generation: b.Generation, Action: action}
	if err := m.recordConsent(ctx, r, parsed); err != nil {
		return nil, err
	}
	return data, nil
}

// storeGrant writes a sealed grant and its binding.
func (m *Manager) storeGrant(id string, data []byte, b *Binding) error {
	if err := writeAtomic(filepath.Join(m.root, id, "grant.yaml"), data, 0o600); err != nil {
		return err
	}
	return writeJSON(filepath.Join(m.root, id, "grant.json"), b)
}

func (m *Manager) writeState(st *State) error {
	return writeJSON(filepath.Join(m.root, st.ID, "state.json"), st)
}

func (m *Manager) state(id string) (*State, bool, error) {
	if !idPattern().MatchString(id) {
		return nil, false, newErr(capability.ReasonPluginNotInstalled, "state", id, "malformed plugin id", nil)
	}
	var st State
	data, err := os.ReadFile(filepath.Join(m.root, id, "state.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, newErr(capability.ReasonPluginState, "state", id, "", err)
	}
	if err := decodeStrict(data, &st); err != nil || st.ID != id || st.Versions[st.Active] == nil {
		return nil, false, newErr(capability.ReasonPluginState, "state", id, "corrupt state.json", err)
	}
	return &st, true, nil
}

// Grant returns the user grant of plugin id for its active version. It
// fails closed (PLUGIN_GRANT_MISMATCH) when the binding names another
// plugin, a version outside its range or another permission digest, or
// when grant.yaml does not hash to the bound digest: a consent recorded for
// one permission digest is never applied to another.
func (m *Manager) Grant(id string) (*manifest.Layer, *Binding, error) {
	st, ok, err := m.state(id)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, newErr(capability.ReasonPluginNotInstalled, "grant", id, "not installed", nil)
	}
	return m.grantFor(st, st.Active)
}

func (m *Manager) grantFor(st *State, version string) (*manifest.Layer, *Binding, error) {
	var b Binding
	data, err := os.ReadFile(filepath.Join(m.root, st.ID, "grant.json"))
	if err == nil {
		err = decodeStrict(data, &b)
	}
	if err != nil {
		return nil, nil, newErr(capability.ReasonPluginGrantMismatch, "grant", st.ID, "no valid grant binding", err)
	}
	l, err := manifest.ParseLayerFile(filepath.Join(m.root, st.ID, "grant.yaml"))
	if err != nil {
		return nil, nil, newErr(capability.ReasonPluginGrantMismatch, "grant", st.ID, "grant.yaml does not parse", err)
	}
	vs := st.Versions[version]
	lo, err1 := CompareVersions(b.MinVersion, version)
	hi, err2 := CompareVersions(version, b.MaxVersion)
	switch {
	case b.ID != st.ID || l.Kind != manifest.KindGrant:
		return nil, nil, newErr(capability.ReasonPluginGrantMismatch, "grant", st.ID, "grant is bound to "+b.ID, nil)
	case vs == nil || err1 != nil || err2 != nil || lo > 0 || hi > 0:
		return nil, nil, newErr(capability.ReasonPluginGrantMismatch, "grant", st.ID, fmt.Sprintf("grant covers versions %s..%s, not %s", b.MinVersion, b.MaxVersion, version), nil)
	case vs.PermissionDigest != b.PermissionDigest:
		return nil, nil, newErr(capability.ReasonPluginGrantMismatch, "grant", st.ID, fmt.Sprintf("grant was given for permission digest %s, %s has %s", b.PermissionDigest, version, vs.PermissionDigest), nil)
	case l.Digest() != b.GrantDigest:
		return nil, nil, newErr(capability.ReasonPluginGrantMismatch, "grant", st.ID, "grant.yaml changed since consent", nil)
	}
	return l, &b, nil
}

// Update installs a newer (or, with AllowDowngrade, older) version of an
// installed plugin. What it asks for is [manifest.Diff] of the active
// version's manifest and the new one, and nothing else: when
// [manifest.Delta.NeedsConsent] is false the new version becomes active at
// once, without a question; when it is true the new version is installed
// as held (the old one keeps running with its grant), the result lists the
// consent items of what the delta adds or widens, and [Manager.Consent]
// activates it after the user accepts (a grant file in o.Grant is that
// consent at once). Either way the new grant is the old one restricted to
// what the new version requests, plus only what was consented to, so user
// restrictions survive and nothing widens unasked.
//
// A package with a version that is installed (active or held), or was
// installed before, with other contents is refused (PLUGIN_ROLLBACK) and
// changes nothing, even with AllowDowngrade; build metadata does not make
// another version (1.4.0+rebuild is 1.4.0). A version lower than the
// highest installed before needs AllowDowngrade. Both hold for unsigned
// --dev packages as for signed ones ([State.History]); signed ones are
// also checked against the trust store ([TrustStore.CheckRollback]). The
// very same package again changes nothing.
//
// An unsigned --dev package never replaces a signed active or held
// version without AllowUnsignedReplace (PLUGIN_UNSIGNED), whatever its
// permissions: that would drop the publisher's signature and key pin
// without a question when nothing widened.
func (m *Manager) Update(ctx context.Context, src string, o InstallOptions) (*Result, error) {
	unlock, err := m.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	s, err := m.stage(ctx, src, o)
	if err != nil {
		return nil, err
	}
	defer s.cleanup()
	mf := s.manifest
	st, ok, err := m.state(mf.ID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, newErr(capability.ReasonPluginNotInstalled, "update", mf.ID, "not installed; use `norma plugin install`", nil)
	}
	if err := checkVersion(st, mf.Version, s.tree.Root(), o.AllowDowngrade); err != nil {
		return nil, err
	}
	// The active or held package again changes nothing: no downgrade.
	again := st.Versions[mf.Version] != nil && st.Versions[mf.Version].MerkleRoot == s.tree.Root()
	if err := m.checkRollback(s, o.AllowDowngrade || again); err != nil {
		return nil, err
	}
	if err := checkWorkspace(mf, m.o.Workspace); err != nil {
		return nil, err
	}
	old, err := m.manifestOf(st.ID, st.Active)
	if err != nil {
		return nil, err
	}
	oldGrant, b, err := m.grantFor(st, st.Active)
	if err != nil {
		return nil, err
	}
	d := manifest.Diff(old, mf)
	q, err := questions(mf.ID, d)
	if err != nil {
		return nil, err
	}
	res := &Result{ID: mf.ID, Version: mf.Version, Delta: d}
	switch mf.Version {
	case st.Active: // the installed package again
		return res, nil
	case st.Held:
		res.Held, res.Widened = true, q
		return res, nil
	}
	if err := checkUnsignedReplace(st, s, o); err != nil {
		return nil, err
	}

	if d.NeedsConsent() && o.Grant == nil {
		prevHeld := st.Held
		st.Held = mf.Version
		st.add(mf.Version, m.versionState(s))
		e := m.event(audit.TypePluginHeld, mf, s)
		e.Detail["active"] = st.Active
		optionDetail(e, o)
		if err := m.record(ctx, e); err != nil {
			return nil, err
		}
		if err := m.commit(ctx, "", s, st, nil, nil); err != nil {
			return nil, err
		}
		res.Held, res.Widened = true, q
		if prevHeld != "" {
			// A newer held update replaces the one held before.
			m.dropVersion(st, prevHeld)
			return res, m.writeState(st)
		}
		return res, nil
	}
	var granted map[Group][]string
	var file *manifest.Permissions
	if o.Grant != nil {
		// Headless: the grant file is the consent for what widened.
		if granted, file, err = m.consent(ctx, mf, q, s.v == nil, o.Grant); err != nil {
			return nil, err
		}
	}
	grant, err := newGrant(mf, &oldGrant.Permissions, granted, file)
	if err != nil {
		return nil, err
	}
	prev, held := st.Active, st.Held
	st.Active, st.Held = mf.Version, ""
	st.add(mf.Version, m.versionState(s))
	if d.NeedsConsent() {
		if err := m.auditConsent(ctx, mf, s, o, grant); err != nil {
			return nil, err
		}
		res.Widened = q
	} else {
		e := m.event(audit.TypePluginUpdated, mf, s)
		e.Detail["from"] = prev
		optionDetail(e, o)
		if err := m.record(ctx, e); err != nil {
			return nil, err
		}
	}
	action := ConsentUpdate
	if d.NeedsConsent() {
		action = ConsentGrant
	}
	if err := m.commit(ctx, action, s, st, grant, m.rebind(b, mf)); err != nil {
		return nil, err
	}
	m.dropVersion(st, prev)
	if held != "" {
		m.dropVersion(st, held)
	}
	res.Grant = grant
	return res, m.writeState(st)
}

// checkUnsignedReplace refuses (PLUGIN_UNSIGNED) an unsigned package s
// that would replace a signed active or held version of st, unless
// o.AllowUnsignedReplace.
func checkUnsignedReplace(st *State, s *staged, o InstallOptions) error {
	if s.v != nil || o.AllowUnsignedReplace {
		return nil
	}
	for _, ver := range []string{st.Active, st.Held} {
		if vs := st.Versions[ver]; ver != "" && vs != nil && !vs.Untrusted {
			by := vs.Signer
			if vs.Publisher != "" {
				by = vs.Publisher + " (" + vs.Signer + ")"
			}
			return newErr(capability.ReasonPluginUnsigned, "update", st.ID,
				fmt.Sprintf("%s %s is signed by %s and this package is not: pass --allow-unsigned-replace to replace it with an untrusted one", st.ID, ver, by), nil)
		}
	}
	return nil
}

func (m *Manager) rebind(b *Binding, mf *manifest.Manifest) *Binding {
	nb := *b
	if c, err := CompareVersions(mf.Version, nb.MinVersion); err == nil && c < 0 {
		nb.MinVersion = mf.Version
	}
	if c, err := CompareVersions(mf.Version, nb.MaxVersion); err == nil && c > 0 {
		nb.MaxVersion = mf.Version
	}
	nb.PermissionDigest = mf.Permissions.Digest()
	nb.Generation++
	nb.ConsentedAt = m.o.Now().UTC()
	return &nb
}

// Pending returns the consent items of what a held update of plugin id adds
// or widens ([manifest.Diff] of the active and the held manifest), per
// group, with the held manifest; ok is false when nothing is held.
func (m *Manager) Pending(id string) (widened map[Group][]string, held *manifest.Manifest, ok bool, err error) {
	st, found, err := m.state(id)
	if err != nil || !found {
		if err == nil {
			err = newErr(capability.ReasonPluginNotInstalled, "consent", id, "not installed", nil)
		}
		return nil, nil, false, err
	}
	if st.Held == "" {
		return nil, nil, false, nil
	}
	old, err := m.manifestOf(id, st.Active)
	if err != nil {
		return nil, nil, false, err
	}
	held, err = m.manifestOf(id, st.Held)
	if err != nil {
		return nil, nil, false, err
	}
	widened, err = questions(id, manifest.Diff(old, held))
	if err != nil {
		return nil, nil, false, err
	}
	return widened, held, true, nil
}

// Consent shows only what the held update of plugin id adds or widens (as
// [Manager.Pending] derives it from [manifest.Diff]), asks the user about
// those items (or takes grant), and activates the held version with the old
// grant (restricted to what it still requests) plus what the user accepted.
// An answer of nothing for a group grants nothing new in it; declining (an
// error from the Consenter, or tool changes not accepted) keeps the old
// version active and the update held.
func (m *Manager) Consent(ctx context.Context, id string, grant *manifest.Layer) (*Result, error) {
	unlock, err := m.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	widened, held, ok, err := m.Pending(id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, newErr(capability.ReasonPluginNotInstalled, "consent", id, "no held update", nil)
	}
	st, _, err := m.state(id)
	if err != nil {
		return nil, err
	}
	oldGrant, b, err := m.grantFor(st, st.Active)
	if err != nil {
		return nil, err
	}
	w := m.o.Out
	old, err := m.manifestOf(id, st.Active)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "%s %s → %s asks for more than %s:\n", id, st.Active, held.Version, st.Active)
	d := manifest.Diff(old, held)
	for _, c := range slices.Concat(d.Added, d.Widened) {
		fmt.Fprintf(w, "  + %s\n", c)
	}
	fmt.Fprintln(w)
	vs := st.Versions[held.Version]
	granted, file, err := m.consent(ctx, held, widened, vs.Untrusted, grant)
	if err != nil {
		return nil, err
	}
	ng, err := newGrant(held, &oldGrant.Permissions, granted, file)
	if err != nil {
		return nil, err
	}
	e := m.event(audit.TypeConsentGranted, held, nil)
	e.Detail["grantDigest"] = ng.Digest()
	e.Detail["permissionDigest"] = held.Permissions.Digest()
	if err := m.record(ctx, e); err != nil {
		return nil, err
	}
	prev := st.Active
	st.Active, st.Held = held.Version, ""
	if err := m.writeGrant(ctx, ConsentGrant, held, ng, m.rebind(b, held)); err != nil {
		return nil, err
	}
	if err := m.writeState(st); err != nil {
		return nil, err
	}
	m.dropVersion(st, prev)
	if err := m.writeState(st); err != nil {
		return nil, err
	}
	if err := m.record(ctx, m.event(audit.TypePluginUpdated, held, nil)); err != nil {
		return nil, err
	}
	return &Result{ID: id, Version: held.Version, Grant: ng, Widened: widened}, nil
}

func (m *Manager) manifestOf(id, version string) (*manifest.Manifest, error) {
	data, err := readPackageFile(filepath.Join(m.root, id, version), ManifestName, 1<<20)
	if err != nil {
		return nil, err
	}
	return parseManifest(data)
}

// dropVersion deletes the files of a version that is neither active nor held.
func (m *Manager) dropVersion(st *State, version string) {
	if version == st.Active || version == st.Held {
		return
	}
	delete(st.Versions, version)
	removeTree(filepath.Join(m.root, st.ID, version))
}

// Info returns the state of plugin id.
func (m *Manager) Info(id string) (*State, error) {
	st, ok, err := m.state(id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, newErr(capability.ReasonPluginNotInstalled, "info", id, "not installed", nil)
	}
	return st, nil
}

// List returns the states of all installed plugins, sorted by id.
func (m *Manager) List() ([]*State, error) {
	ents, err := os.ReadDir(m.root)
	if err != nil {
		return nil, newErr(capability.ReasonPluginState, "list", m.root, "", err)
	}
	var out []*State
	for _, e := range ents {
		if !e.IsDir() || !idPattern().MatchString(e.Name()) {
			continue
		}
		st, ok, err := m.state(e.Name())
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, st)
		}
	}
	return out, nil
}

// Remove stops the plugin's processes, deletes its files and grant, and
// audits plugin_removed. The audit trail and the rollback table are kept:
// reinstalling an older version later is still a downgrade.
func (m *Manager) Remove(ctx context.Context, id string) error {
	unlock, err := m.lock()
	if err != nil {
		return err
	}
	defer unlock()
	st, ok, err := m.state(id)
	if err != nil {
		return err
	}
	if !ok {
		return newErr(capability.ReasonPluginNotInstalled, "remove", id, "not installed", nil)
	}
	if m.o.Stopper != nil {
		if err := m.o.Stopper.Stop(ctx, id); err != nil {
			return newErr(capability.ReasonPluginState, "remove", id, "cannot stop running processes", err)
		}
	}
	e := audit.Event{Type: audit.TypePluginRemoved, Plugin: id, PluginVersion: st.Active, ManifestDigest: st.Versions[st.Active].ManifestDigest}
	if err := m.record(ctx, e); err != nil {
		return err
	}
	if err := m.recordConsent(ctx, ConsentRecord{Plugin: id, Version: st.Active, ManifestDigest: e.ManifestDigest, Action: ConsentRevoke}, nil); err != nil {
		return err
	}
	// state.json goes first: from then on the plugin is not installed even
	// if deleting the files is interrupted.
	if err := os.Remove(filepath.Join(m.root, id, "state.json")); err != nil {
		return newErr(capability.ReasonPluginState, "remove", id, "", err)
	}
	return removeTree(filepath.Join(m.root, id))
}

// Dir returns the directory of an installed version's files.
func (m *Manager) Dir(id, version string) string { return filepath.Join(m.root, id, version) }

// DataDir returns the data directory of plugin id (manifest data_dir:
// true): plugins/<id>/data, beside the version directories (never a
// version name), so that updates keep it and [Manager.Remove] deletes it.
// The plugin host creates it on first start and mounts it read-write into
// that plugin's sandbox only.
func (m *Manager) DataDir(id string) string { return filepath.Join(m.root, id, "data") }

func makeReadOnly(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
			return nil
		}
		if d.Type()&fs.ModeType != 0 {
			return fmt.Errorf("unexpected %s", d.Type())
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o444)
		if info.Mode()&0o111 != 0 {
			mode = 0o555
		}
		return os.Chmod(p, mode)
	})
	if err != nil {
		return err
	}
	slices.Reverse(dirs)
	for _, d := range dirs {
		if err := os.Chmod(d, 0o555); err != nil {
			return err
		}
	}
	return nil
}

// removeTree deletes a tree whose directories may be read-only.
func removeTree(dir string) error {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// checkName refuses a server name that is malformed or that another
// installed plugin already goes by (as its name or its id).
func (m *Manager) checkName(id, name string) error {
	if name == "" {
		name = id
	} else if !ValidServerName(name) {
		return newErr(capability.ReasonPluginState, "install", id, fmt.Sprintf("server name %q: use letters, digits, '-' and '_' (at most 48, no \"__\")", name), nil)
	}
	all, err := m.List()
	if err != nil {
		return err
	}
	for _, st := range all {
		if st.ID != id && (st.ServerName() == name || st.ID == name) {
			return newErr(capability.ReasonPluginState, "install", id, fmt.Sprintf("server name %q is already used by %s", name, st.ID), nil)
		}
	}
	return nil
}

// ValidServerName reports whether name can be a server name: 1 to 48
// letters, digits, '-' and '_', without "__" (the separator of
// mcp__NAME__TOOL) and not starting or ending with '_'.
func ValidServerName(name string) bool {
	if name == "" || len(name) > 48 || strings.Contains(name, "__") || name[0] == '_' || name[len(name)-1] == '_' {
		return false
	}
	for _, c := range []byte(name) {
		if !(c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
