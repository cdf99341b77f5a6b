package gate

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/norma-run/norma/internal/jsonschema"
	"github.com/norma-run/norma/internal/jsonschema/kind"
	"github.com/norma-run/norma/tool"
)

// Schema is a compiled tool input schema (JSON Schema 2020-12, formats
// asserted). It is immutable and safe for concurrent use.
type Schema struct {
	s *jsonschema.Schema
}

// CompileSchema compiles a tool's input schema. Documents that name no
// $schema are read as 2020-12; "format" is an assertion, not an annotation;
// nothing is loaded from the network or the file system.
//
// A document that is byte for byte one of the built-in tools' schemas,
// validated against its metaschema when validschemas.go was generated, is
// not validated again: compiling the 2020-12 metaschema to do so was most
// of what compiling one schema cost a new process (issue 20). Every other
// document, a plugin's or an MCP server's, is validated.
func CompileSchema(name string, doc []byte) (*Schema, error) {
	return compileSchema(name, doc, knownValid(doc))
}

// knownValid reports whether doc is one of the validated schemas.
func knownValid(doc []byte) bool {
	return slices.Contains(validSchemas[:], sha256.Sum256(doc))
}

func compileSchema(name string, doc []byte, valid bool) (*Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("gate: schema of %s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	if valid {
		c.AssumeValid()
	}
	url := "urn:norma:tool:" + name
	if err := c.AddResource(url, v); err != nil {
		return nil, fmt.Errorf("gate: schema of %s: %w", name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("gate: schema of %s: %w", name, err)
	}
	return &Schema{s: s}, nil
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("gate: schema loading is disabled (%s)", url)
}

// Violation is one failed keyword.
type Violation struct {
	// Keyword is the keyword's location in the schema, a JSON pointer
	// such as /properties/path/pattern.
	Keyword string
	// Instance is the location of the offending value in the input.
	Instance string
	// Message describes the failure without repeating the value.
	Message string
}

// Validate checks a decoded input (see tool.ParseInput) and returns every
// failed keyword, or nil.
func (s *Schema) Validate(in tool.Input) []Violation {
	err := s.s.Validate(in.Value())
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []Violation{{Keyword: "", Message: "validation failed"}}
	}
	var out []Violation
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		kw := e.SchemaURL
		if i := strings.IndexByte(kw, '#'); i >= 0 {
			kw = kw[i+1:]
		} else {
			kw = ""
		}
		if kp := e.ErrorKind.KeywordPath(); len(kp) > 0 {
			kw += "/" + strings.Join(kp, "/")
		}
		out = append(out, Violation{Keyword: kw, Instance: "/" + strings.Join(e.InstanceLocation, "/"), Message: describe(e.ErrorKind)})
	}
	walk(ve)
	return out
}

// describe renders a failed keyword without the offending value, which may
// be long or sensitive.
func describe(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return fmt.Sprintf("must be of type %s", strings.Join(k.Want, " or "))
	case *kind.Enum:
		return "must be one of the allowed values"
	case *kind.Const:
		return "must be the constant value"
	case *kind.Pattern:
		return fmt.Sprintf("must match the pattern %s", k.Want)
	case *kind.Format:
		return fmt.Sprintf("must be a valid %s", k.Want)
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters long", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long", k.Want)
	case *kind.Required:
		return fmt.Sprintf("missing required properties %s", strings.Join(k.Missing, ", "))
	case *kind.AdditionalProperties:
		return fmt.Sprintf("properties not allowed: %s", strings.Join(k.Properties, ", "))
	case *kind.FalseSchema:
		return "no value is allowed here"
	}
	kw := k.KeywordPath()
	if len(kw) == 0 {
		return "invalid value"
	}
	return "fails " + strings.Join(kw, "/")
}

// ValidateValue validates an already decoded value (as produced by
// jsonschema.UnmarshalJSON) and returns the validator's error.
func (s *Schema) ValidateValue(v any) error { return s.s.Validate(v) }

// schemaCache holds one compiled schema per registry entry; a replaced
// tool is a new entry and compiles again.
type schemaCache struct {
	m sync.Map // *tool.Entry -> *cachedSchema
}

type cachedSchema struct {
	once sync.Once
	s    *Schema
	err  error
}

func (c *schemaCache) get(e *tool.Entry) (*Schema, error) {
	v, ok := c.m.Load(e)
	if !ok {
		v, _ = c.m.LoadOrStore(e, &cachedSchema{})
	}
	cs := v.(*cachedSchema)
	cs.once.Do(func() { cs.s, cs.err = CompileSchema(e.Name(), e.InputSchema()) })
	return cs.s, cs.err
}
