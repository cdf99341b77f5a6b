package deptest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// services are the constructors of the services the runtime assembles
// once per process (runtime.OpenStore, runtime.OpenServices and
// runtime.Open), by the package that defines each and its name.
var services = map[[2]string]string{
	{"store", "Open"}:                 "the store: runtime.OpenStore",
	{"postgres", "Open"}:              "the store: runtime.OpenStore",
	{"audit", "Open"}:                 "the audit log: runtime.OpenServices (it signs checkpoints with the state directory's key)",
	{"approval", "NewService"}:        "the approval service: runtime.OpenServices (previews pass the run's redactor)",
	{"secret", "NewRedactor"}:         "the redactor: runtime.OpenServices (it knows the vault's values)",
	{"broker", "New"}:                 "the egress broker: built per plugin by plugin/host, for the runtime",
	{"sandboxpolicy", "NewRunner"}:    "the sandbox runner: runtime.Open",
	{"builtin", "Build"}:              "the built-in tools: runtime.Open",
	{"sandboxpolicy", "RunnerConfig"}: "the sandbox runner: runtime.Open",
}

// servicesBuiltBy are the packages (module-relative directories) that may
// call a constructor besides the one that defines it, with why.
var servicesBuiltBy = map[string]string{
	"runtime":         "the one assembly",
	"plugin/host":     "starts a broker for each plugin process it supervises, and defaults its redactor for embedders who use the host alone",
	"gate":            "defaults its redactor when an embedder builds a gate without one",
	"broker":          "defaults its redactor when an embedder builds a broker without one",
	"door/mcpadd":     "scans a server's arguments for token formats before they are written to a manifest: a detector, not a service (it stores nothing)",
	"store/storetest": "the cases every store passes: test code in a package of its own, opening logs over the store under test",
}

// TestServicesBuiltOnce: outside the runtime (and the listed packages), no
// production code constructs a service: a door that built its own approval
// service once stored previews unredacted, and one that built its own
// audit log signed no checkpoint.
func TestServicesBuiltOnce(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules" || rel == "bench" || rel == "internal/jsonschema") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		if _, ok := servicesBuiltBy[dir]; ok {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			if what, ok := services[[2]string{id.Name, sel.Sel.Name}]; ok && filepath.Base(dir) != id.Name {
				t.Errorf("%s: %s.%s builds %s", fset.Position(sel.Pos()), id.Name, sel.Sel.Name, what)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
