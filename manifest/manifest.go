package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
	"github.com/gowebpki/jcs"
)

// Manifest is a normalized plugin manifest. Construct it with Parse or
// ParseFile; a Manifest built by hand is not validated.
type Manifest struct {
	SchemaVersion int    `json:"schema_version" yaml:"schema_version"`
	ID            string `json:"id" yaml:"id"`
	Version       string `json:"version" yaml:"version"`
	Description   string `json:"description,omitempty" yaml:"description,omitempty"`
	Entrypoint    string `json:"entrypoint" yaml:"entrypoint"`
	// Args follow the entrypoint on its command line and Env is added to
	// its environment. Both may use the templates of [Expand]: ${package},
	// ${data}, ${workspace} and ${secret:NAME} (a declared secret, which
	// reaches the server as its broker placeholder, never its value).
	Args []string          `json:"args,omitempty" yaml:"args,omitempty"`
	Env  map[string]string `json:"env,omitempty" yaml:"env,omitempty"`
	// DataDir asks for a writable directory of the plugin's own, kept
	// across runs outside the workspace and the package (STATE/plugins/ID/data).
	// It holds the server's state (server-memory's graph), not the user's
	// files, so it is shown on the install screen and in a diff but is not
	// a permission on anything of the user's.
	DataDir     bool        `json:"data_dir,omitempty" yaml:"data_dir,omitempty"`
	Tools       []Tool      `json:"tools" yaml:"tools"`
	Permissions Permissions `json:"permissions" yaml:"permissions"`

	digestOnce sync.Once
	digest     string
}

// Tool is one tool a plugin offers.
type Tool struct {
	Name        string   `json:"name" yaml:"name"`
	Description string   `json:"description,omitempty" yaml:"description,omitempty"`
	Effects     *Effects `json:"effects" yaml:"effects,omitempty"`
	// Risk is the seed shorthand (read | external_write); Parse expands it
	// into Effects and clears it.
	Risk     string `json:"-" yaml:"risk,omitempty"`
	Approval string `json:"approval" yaml:"approval,omitempty"`
}

// Effects says what a tool does with data and with the outside world.
type Effects struct {
	Data          string `json:"data" yaml:"data"`                     // none | read | send
	ExternalState string `json:"external_state" yaml:"external_state"` // none | write
}

// WritesExternal reports whether the tool changes state outside the host.
func (t Tool) WritesExternal() bool { return t.Effects == nil || t.Effects.ExternalState == "write" }

// NeedsApproval reports whether each call needs an approval.
func (t Tool) NeedsApproval() bool { return t.Approval != "never" }

// Permissions is the capability section shared by manifests and layer files.
type Permissions struct {
	Filesystem     *Filesystem     `json:"filesystem,omitempty" yaml:"filesystem,omitempty"`
	Network        *Network        `json:"network,omitempty" yaml:"network,omitempty"`
	Secrets        []Secret        `json:"secrets" yaml:"secrets,omitempty"`
	Process        *Process        `json:"process,omitempty" yaml:"process,omitempty"`
	ExternalWrites *ExternalWrites `json:"external_writes,omitempty" yaml:"external_writes,omitempty"`
}

// Filesystem holds workspace:// globs (doublestar semantics).
//
// In a manifest or grant a nil list and an empty one mean the same (nothing
// granted) and Parse makes every list non-nil. In a workspace or run layer a
// nil list does not constrain and a present one (even empty) is a ceiling, so
// the difference is kept, and shows in the digest as null versus [].
type Filesystem struct {
	Read  []string `json:"read" yaml:"read,omitempty"`
	Write []string `json:"write" yaml:"write,omitempty"`
	Deny  []string `json:"deny" yaml:"deny,omitempty"`
	// DenyWrite are globs that may be read but not written: a deny of
	// fs.write alone, which the sandbox shows read-only. Norma's runtime
	// sets it on the workspace layer from the Write and Edit deny rules
	// (a deny on one verb denies that verb); a layer file cannot name it.
	DenyWrite []string `json:"deny_write,omitempty" yaml:"deny_write,omitempty"`
}

// Network lists the requests a plugin may make.
type Network struct {
	Requests []NetRule `json:"requests" yaml:"requests,omitempty"`
	// AllowPrivate admits private address ranges (workspace and run layers only).
	AllowPrivate []string `json:"allow_private,omitempty" yaml:"allow_private,omitempty"`
}

// NetRule admits Methods on Paths (templates) of one normalized Origin.
type NetRule struct {
	Origin   string   `json:"origin" yaml:"origin"`
	Methods  []string `json:"methods" yaml:"methods"`
	Paths    []string `json:"paths" yaml:"paths"`
	Approval string   `json:"approval,omitempty" yaml:"approval,omitempty"` // never (default) | per_action
}

// Secret is a reference to a credential; its value never appears in a manifest.
type Secret struct {
	Name     string   `json:"name" yaml:"name"`
	Purpose  string   `json:"purpose" yaml:"purpose"` // normalized origin
	Scopes   []string `json:"scopes,omitempty" yaml:"scopes,omitempty"`
	InjectAs string   `json:"inject_as" yaml:"inject_as"`
	Header   string   `json:"header,omitempty" yaml:"header,omitempty"` // default Authorization (Bearer)
	Env      string   `json:"env,omitempty" yaml:"env,omitempty"`       // variable that receives the placeholder
}

// Process says whether the plugin may spawn processes.
type Process struct {
	Spawn string `json:"spawn" yaml:"spawn"` // deny | approval_required | allow
}

// ExternalWrites caps tools that write to external systems.
type ExternalWrites struct {
	Default string `json:"default" yaml:"default"` // deny | approval_required | allow
}

// Parse parses and validates a manifest. filename is used in messages only.
// The error, when not nil, is Errors.
func Parse(filename string, data []byte) (*Manifest, error) {
	t, err := loadTree(filename, data)
	if err != nil {
		return nil, err
	}
	probs := append(precheck(t), validateSchema(t, manifestSchemaURL)...)
	var m Manifest
	if len(probs) > 0 {
		// Report the semantic problems too when the document still decodes,
		// so one lint run shows everything.
		if yaml.NodeToValue(t.doc, &m) == nil {
			c := &checker{t: t}
			c.manifest(&m)
			probs = mergeProblems(probs, c.probs)
		}
		sortProblems(probs)
		return nil, Errors(probs)
	}
	if err := yaml.NodeToValue(t.doc, &m, yaml.Strict()); err != nil {
		return nil, Errors{yamlProblem(filename, err)}
	}
	c := &checker{t: t}
	c.manifest(&m)
	if len(c.probs) > 0 {
		sortProblems(c.probs)
		return nil, Errors(c.probs)
	}
	return &m, nil
}

// ParseFile reads and parses a manifest file.
func ParseFile(path string) (*Manifest, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, Errors{{File: path, Msg: "not a regular file"}}
	}
	if fi.Size() > MaxFileSize {
		return nil, Errors{{File: path, Msg: fmt.Sprintf("file is %d bytes; the limit is %d", fi.Size(), MaxFileSize)}}
	}
	buf := make([]byte, fi.Size()+1)
	n, err := f.Read(buf)
	if n > int(fi.Size()) {
		return nil, Errors{{File: path, Msg: "file grew while being read"}}
	}
	if err != nil && n == 0 && fi.Size() > 0 {
		return nil, err
	}
	return buf[:n], nil
}

// precheck finds what deserves a clearer message than the schema would give.
func precheck(t *tree) []Problem {
	var out []Problem
	root, _ := t.root.(map[string]any)
	perms, _ := root["permissions"].(map[string]any)
	secrets, _ := perms["secrets"].([]any)
	for i, s := range secrets {
		sm, _ := s.(map[string]any)
		if _, ok := sm["value"]; ok {
			ptr := fmt.Sprintf("/permissions/secrets/%d/value", i)
			out = append(out, t.problem(ptr, true, "secrets are referenced by name, never embedded: remove the value and store it with `norma secret set NAME`"))
			delete(sm, "value") // reported once, here
		}
	}
	return out
}

// Digest returns "sha256:" + hex of the RFC 8785 canonical JSON of the
// normalized manifest.
func (m *Manifest) Digest() string {
	m.digestOnce.Do(func() { m.digest = digestOf(m) })
	return m.digest
}

// FromCanonicalJSON decodes data, a normalized manifest's RFC 8785
// canonical JSON (what CanonicalJSON returns), refusing unknown fields; the
// manifest's Digest is data's SHA-256, without canonicalizing it again. It
// is for a manifest compiled into the binary (the built-in tools'), whose
// test asserts that data is the CanonicalJSON of what Parse makes of its
// source: it runs none of Parse's checks, so never use it for a manifest
// read from a file or the network.
func FromCanonicalJSON(data []byte) (*Manifest, error) {
	var m Manifest
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest: canonical JSON: %w", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("manifest: canonical JSON: data after the manifest")
	}
	sum := sha256.Sum256(data)
	m.digestOnce.Do(func() { m.digest = "sha256:" + hex.EncodeToString(sum[:]) })
	return &m, nil
}

// CanonicalJSON returns the RFC 8785 canonical JSON of the normalized manifest.
func (m *Manifest) CanonicalJSON() ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(b)
}

func digestOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("manifest: marshal for digest: %v", err)) // types are plain data
	}
	c, err := jcs.Transform(b)
	if err != nil {
		panic(fmt.Sprintf("manifest: canonicalize for digest: %v", err))
	}
	sum := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PermissionDigest is the digest of the permissions section alone; consents
// bind to it.
func (p Permissions) Digest() string { return digestOf(p) }

// Tool returns the tool named name.
func (m *Manifest) Tool(name string) (Tool, bool) {
	i := slices.IndexFunc(m.Tools, func(t Tool) bool { return t.Name == name })
	if i < 0 {
		return Tool{}, false
	}
	return m.Tools[i], true
}

// Ref is "id@version".
func (m *Manifest) Ref() string { return m.ID + "@" + m.Version }

// WorkspaceGlob strips the workspace:// prefix of a normalized glob.
func WorkspaceGlob(g string) string { return strings.TrimPrefix(g, WorkspaceScheme) }

// BuiltinID is the id of the built-in tools' manifest. Its policy layer
// is reported as capability.LayerBuiltin, not LayerPlugin, and no plugin
// may be installed under it.
const BuiltinID = "dev.norma.builtin"

// WorkspaceScheme prefixes every file-system glob.
const WorkspaceScheme = "workspace://"

// mergeProblems appends to a those of b whose field has no problem yet.
func mergeProblems(a, b []Problem) []Problem {
	have := map[string]bool{}
	for _, p := range a {
		have[p.Field] = true
	}
	for _, p := range b {
		if !have[p.Field] {
			a = append(a, p)
		}
	}
	return a
}
