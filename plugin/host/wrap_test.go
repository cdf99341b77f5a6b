package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/norma-run/norma/manifest"
)

func ptr[T any](v T) *T { return &v }

// TestWrapAnnotationsToEffects: the server's annotations become proposed
// effects, each with a comment that names them as the server's untrusted
// claims; a tool without annotations stays an external write with approval.
func TestWrapAnnotationsToEffects(t *testing.T) {
	tools := []*mcp.Tool{
		{Name: "read_graph", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}},
		{Name: "search", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "delete", Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}},
		{Name: "add", Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)}},
		{Name: "plain"},
	}
	b, err := wrapManifest([]string{"/x/srv"}, WrapOptions{ID: "local.mcp.t", Args: []string{"${workspace}"}, DataDir: true, Env: map[string]string{"F": "${data}/f"}}, tools)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse("m.yaml", b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	want := map[string]struct {
		eff      manifest.Effects
		approval string
	}{
		"read_graph": {manifest.Effects{Data: "read", ExternalState: "none"}, "never"},
		"search":     {manifest.Effects{Data: "send", ExternalState: "none"}, "never"},
		"delete":     {manifest.Effects{Data: "read", ExternalState: "write"}, "per_action"},
		"add":        {manifest.Effects{Data: "read", ExternalState: "write"}, "per_action"},
		"plain":      {manifest.Effects{Data: "send", ExternalState: "write"}, "per_action"},
	}
	for _, tl := range m.Tools {
		w := want[tl.Name]
		if *tl.Effects != w.eff || tl.Approval != w.approval {
			t.Errorf("%s: effects %+v approval %s, want %+v %s", tl.Name, *tl.Effects, tl.Approval, w.eff, w.approval)
		}
	}
	text := string(b)
	for _, s := range []string{"untrusted", "# the server claims (untrusted): readOnlyHint=false destructiveHint=false idempotentHint=true openWorldHint=false", "# no annotations from the server"} {
		if !strings.Contains(text, s) {
			t.Errorf("manifest lacks %q:\n%s", s, text)
		}
	}
	if len(m.Args) != 1 || m.Args[0] != "${workspace}" || !m.DataDir || m.Env["F"] != "${data}/f" {
		t.Errorf("launch not carried: args %v env %v data_dir %v", m.Args, m.Env, m.DataDir)
	}
}

// TestWrapRelativeCommand: a relative path is resolved against the current
// directory, not looked up in PATH.
func TestWrapRelativeCommand(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "srv"), []byte("#!/bin/sh\n"), 0o755)
	t.Chdir(dir)
	argv, err := resolveCommand([]string{"./srv", "a"})
	if err != nil || argv[0] != filepath.Join(dir, "srv") || argv[1] != "a" {
		t.Fatalf("resolveCommand(./srv) = %v, %v", argv, err)
	}
	if _, err := resolveCommand([]string{"./missing"}); err == nil || strings.Contains(err.Error(), "PATH") {
		t.Fatalf("resolveCommand(./missing) = %v, want a not-found error about the path", err)
	}
	if _, err := resolveCommand([]string{"no-such-cmd-xyz"}); err == nil || !strings.Contains(err.Error(), "PATH") {
		t.Fatalf("resolveCommand(no-such-cmd-xyz) = %v", err)
	}
}
