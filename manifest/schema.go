package manifest

import (
	"bytes"
	"embed"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/norma-run/norma/internal/jsonschema"
	"github.com/norma-run/norma/internal/jsonschema/kind"
	"github.com/norma-run/norma/internal/suggest"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

//go:embed schema/v2.json schema/layer-v2.json
var schemaFS embed.FS

const (
	manifestSchemaURL = "https://norma.dev/schema/manifest/v2.json"
	layerSchemaURL    = "https://norma.dev/schema/manifest/layer-v2.json"
)

// SchemaJSON returns the embedded manifest JSON Schema (for editors and
// `norma manifest schema`).
func SchemaJSON() []byte {
	b, _ := schemaFS.ReadFile("schema/v2.json")
	return b
}

var compiledSchemas = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	for url, name := range map[string]string{manifestSchemaURL: "schema/v2.json", layerSchemaURL: "schema/layer-v2.json"} {
		b, err := schemaFS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("manifest: embedded schema %s: %w", name, err)
		}
		if err := c.AddResource(url, doc); err != nil {
			return nil, err
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, url := range []string{manifestSchemaURL, layerSchemaURL} {
		s, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("manifest: compile schema: %w", err)
		}
		out[url] = s
	}
	return out, nil
})

var printer = message.NewPrinter(language.English)

// validateSchema validates t against the schema at url and appends one
// problem per failing leaf keyword.
func validateSchema(t *tree, url string) []Problem {
	schemas, err := compiledSchemas()
	if err != nil {
		return []Problem{{File: t.file, Msg: err.Error()}}
	}
	return validateAgainst(t, schemas[url], knownFields)
}

// validateAgainst validates t against s; fields are the format's field
// names, for "did you mean".
func validateAgainst(t *tree, s *jsonschema.Schema, fields []string) []Problem {
	err := s.Validate(t.root)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []Problem{{File: t.file, Msg: err.Error()}}
	}
	var out []Problem
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		ptr := ""
		for _, s := range e.InstanceLocation {
			ptr += "/" + escapePtr(s)
		}
		for _, p := range schemaProblems(t, ptr, e.ErrorKind, fields) {
			k := p.String()
			if !seen[k] {
				seen[k] = true
				out = append(out, p)
			}
		}
	}
	walk(ve)
	return out
}

func schemaProblems(t *tree, ptr string, k jsonschema.ErrorKind, fields []string) []Problem {
	switch k := k.(type) {
	case *kind.AdditionalProperties:
		var out []Problem
		for _, name := range k.Properties {
			msg := fmt.Sprintf("unknown field %q", name)
			if name == "allow_private" {
				msg = "allow_private belongs in a workspace or run policy, not in a manifest or grant"
			} else if s := suggest.Closest(name, fields); s != "" && s != name {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			out = append(out, t.problem(ptr+"/"+escapePtr(name), true, msg))
		}
		return out
	case *kind.Required:
		var out []Problem
		for _, name := range k.Missing {
			out = append(out, t.problem(ptr, false, fmt.Sprintf("missing required field %q", name)))
		}
		return out
	case *kind.Enum:
		want := make([]string, 0, len(k.Want))
		for _, w := range k.Want {
			want = append(want, fmt.Sprint(w))
		}
		return []Problem{t.problem(ptr, false, fmt.Sprintf("must be one of %s", strings.Join(want, ", ")))}
	case *kind.Const:
		return []Problem{t.problem(ptr, false, fmt.Sprintf("must be %v", k.Want))}
	case *kind.Pattern:
		return []Problem{t.problem(ptr, false, fmt.Sprintf("%q is not in the expected form %s", k.Got, k.Want))}
	}
	return []Problem{t.problem(ptr, false, k.LocalizedString(printer))}
}

// knownFields is every field name of the format, for "did you mean".
var knownFields = []string{
	"schema_version", "id", "version", "description", "entrypoint", "tools", "permissions",
	"name", "effects", "risk", "approval", "data", "external_state",
	"filesystem", "read", "write", "deny", "network", "requests", "origin", "methods", "paths",
	"allow_private", "secrets", "purpose", "scopes", "inject_as", "header", "env",
	"process", "spawn", "external_writes", "default", "kind",
}

func sortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Line != ps[j].Line {
			return ps[i].Line < ps[j].Line
		}
		return ps[i].Col < ps[j].Col
	})
}
