package manifest

import (
	"bytes"
	"encoding/json"

	"github.com/goccy/go-yaml"
)

// Layer kinds.
const (
	KindGrant     = "grant"
	KindWorkspace = "workspace"
	KindRun       = "run"
)

// Layer is a policy layer file: a user grant, a workspace policy or a run
// policy. In a grant what is not listed is not granted; in a workspace or run
// policy an absent section does not constrain and a present one is a ceiling.
type Layer struct {
	SchemaVersion int         `json:"schema_version" yaml:"schema_version"`
	Kind          string      `json:"kind" yaml:"kind"`
	Description   string      `json:"description,omitempty" yaml:"description,omitempty"`
	Permissions   Permissions `json:"permissions" yaml:"permissions"`
}

// ParseLayer parses and validates a layer file. The error, when not nil, is Errors.
func ParseLayer(filename string, data []byte) (*Layer, error) {
	t, err := loadTree(filename, data)
	if err != nil {
		return nil, err
	}
	probs := precheck(t)
	probs = append(probs, validateSchema(t, layerSchemaURL)...)
	var l Layer
	if len(probs) > 0 {
		if yaml.NodeToValue(t.doc, &l) == nil {
			c := &checker{t: t}
			c.permissions(&l.Permissions, "/permissions", l.Kind != KindGrant)
			probs = mergeProblems(probs, c.probs)
		}
		sortProblems(probs)
		return nil, Errors(probs)
	}
	if err := yaml.NodeToValue(t.doc, &l, yaml.Strict()); err != nil {
		return nil, Errors{yamlProblem(filename, err)}
	}
	c := &checker{t: t}
	c.permissions(&l.Permissions, "/permissions", l.Kind != KindGrant)
	if l.Kind == KindGrant {
		fillAllowList(&l.Permissions)
	}
	if len(c.probs) > 0 {
		sortProblems(c.probs)
		return nil, Errors(c.probs)
	}
	return &l, nil
}

// ParseLayerFile reads and parses a layer file.
func ParseLayerFile(path string) (*Layer, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	return ParseLayer(path, data)
}

// Marshal renders the layer as YAML that ParseLayer reads back to the same
// layer: absent lists stay absent and empty ones stay empty.
func (l *Layer) Marshal() ([]byte, error) {
	if l.SchemaVersion == 0 {
		l.SchemaVersion = 2
	}
	return marshalYAML(l)
}

// marshalYAML renders v as YAML through JSON, whose tags keep nil (null)
// apart from empty ([]), then drops the nulls: YAML then has no key where a
// list was absent.
func marshalYAML(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	// UseNumber: float64 would come out as "2.0", which no parser of ours
	// accepts as a schema_version.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	return yaml.MarshalWithOptions(dropNulls(tree), yaml.IndentSequence(true))
}

func dropNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil || (k == "description" && e == "") {
				delete(x, k)
				continue
			}
			x[k] = dropNulls(e)
		}
	case []any:
		for i, e := range x {
			x[i] = dropNulls(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

// Digest is the digest of the layer's canonical JSON.
func (l *Layer) Digest() string { return digestOf(l) }

// Marshal renders the manifest as YAML that [Parse] reads back to the
// same manifest (the same digest), as [Layer.Marshal] does for a layer.
func (m *Manifest) Marshal() ([]byte, error) { return marshalYAML(m) }
