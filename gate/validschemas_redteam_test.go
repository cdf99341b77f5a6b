package gate_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/tool/builtin"
)

// TestNearBuiltinSchemaIsValidated: a plugin or MCP server that sends a
// built-in tool's schema with an invalid keyword added, before or after
// the document, or inside it under a $defs resource with its own $id
// and $schema, gets no pass from the list of known-valid schemas: only the
// exact bytes are, and everything else is validated and refused.
func TestNearBuiltinSchemaIsValidated(t *testing.T) {
	docs, err := builtin.InputSchemas(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range docs {
		if _, err := gate.CompileSchema(name, doc); err != nil {
			t.Fatalf("%s: the built-in schema: %v", name, err)
		}
		body := bytes.TrimRight(doc, " \n")
		if !bytes.HasSuffix(body, []byte("}")) {
			t.Fatalf("%s: not an object: %q", name, doc)
		}
		open := string(body[:len(body)-1])
		for _, bad := range []string{
			open + `,"minProperties":-1}`,
			`{"minProperties":-1,` + strings.TrimPrefix(string(body), "{"),
			open + `,"$defs":{"x":{"$id":"urn:x","$schema":"http://json-schema.org/draft-07/schema#","type":5}}}`,
			open + `,"$defs":{"x":{"type":"no-such-type"}},"properties":{"zz":{"$ref":"#/$defs/x"}}}`,
		} {
			if _, err := gate.CompileSchema(name, []byte(bad)); err == nil {
				t.Errorf("%s: an invalid near-copy compiled: %s", name, bad)
			}
		}
	}
}
