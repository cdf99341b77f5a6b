package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/norma-run/norma/internal/jsonschema"
)

// Schema is a compiled JSON Schema (2020-12, formats asserted) of another
// YAML format of Norma's, with the format's field names for "did you mean".
type Schema struct {
	s      *jsonschema.Schema
	fields []string
}

// CompileSchema compiles the JSON Schema doc, published at url. fields are
// the format's field names, suggested for a misspelt key.
func CompileSchema(url string, doc []byte, fields []string) (*Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("manifest: schema %s: %w", url, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(url, v); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("manifest: compile schema %s: %w", url, err)
	}
	return &Schema{s: s, fields: fields}, nil
}

// Document is a YAML file parsed with the limits and the strict rules of
// manifests (size, depth, aliases, UTF-8, no duplicate keys), for the other
// file formats of Norma (settings files). It knows the position of every
// value, so a format's own checks report problems as manifests do.
type Document struct{ t *tree }

// ParseDocument parses data (read from filename), validates it against
// schema and decodes it strictly into out. The error is [Errors]: every
// problem as FILE:LINE:COL: field.path: message.
func ParseDocument(filename string, data []byte, schema *Schema, out any) (*Document, error) {
	t, err := loadTree(filename, data)
	if err != nil {
		return nil, err
	}
	if probs := validateAgainst(t, schema.s, schema.fields); len(probs) > 0 {
		sortProblems(probs)
		return nil, Errors(probs)
	}
	if err := yaml.NodeToValue(t.doc, out, yaml.Strict()); err != nil {
		return nil, Errors{yamlProblem(filename, err)}
	}
	return &Document{t: t}, nil
}

// File returns the document's file name.
func (d *Document) File() string { return d.t.file }

// Pos returns the line and column of the value at the JSON pointer ptr (or
// of its nearest ancestor); 0, 0 when unknown.
func (d *Document) Pos(ptr string) (line, col int) {
	p := d.t.problem(ptr, false, "")
	return p.Line, p.Col
}

// Problem returns a problem about the value at ptr.
func (d *Document) Problem(ptr, msg string) Problem { return d.t.problem(ptr, false, msg) }

// KeyProblem returns a problem about the key of the mapping entry at ptr
// (at the key's position; the value's when the key has none).
func (d *Document) KeyProblem(ptr, msg string) Problem { return d.t.problem(ptr, true, msg) }

// DecodeYAML reads a small YAML document that has no schema of its own
// (a skill's front matter) with the same parser and limits as manifests:
// no tags, no complex keys, bounded aliases. Keys out does not name are
// ignored; a value of the wrong type is an error.
func DecodeYAML(filename string, data []byte, out any) error {
	t, err := loadTree(filename, data)
	if err != nil {
		return err
	}
	b, err := json.Marshal(t.root)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return Errors{t.problem("/"+strings.ReplaceAll(te.Field, ".", "/"), false, "has the wrong type: want "+te.Type.String())}
		}
		return Errors{{File: filename, Msg: err.Error()}}
	}
	return nil
}
