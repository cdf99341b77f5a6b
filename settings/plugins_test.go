package settings

import (
	"reflect"
	"testing"
	"time"
)

// TestPluginTimeouts: a higher file's plugin timeout wins a lower one's,
// managed settings cap every call and their named tools, and each value
// keeps the file and line it came from.
func TestPluginTimeouts(t *testing.T) {
	parse := func(name, body string, scope Scope) *File {
		t.Helper()
		f, err := Parse(name, []byte(body), scope, testWorkspace)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	user := parse("user.yaml", "plugins:\n  callTimeout: 60\n  toolTimeouts:\n    mcp__memory__read_graph: 10\n    mcp__fs__search: 300\n", ScopeUser)
	ws := parse("ws.yaml", "plugins:\n  toolTimeouts:\n    mcp__memory__read_graph: 20\n", ScopeWorkspace)
	managed := parse("managed.yaml", "plugins:\n  callTimeout: 120\n  toolTimeouts:\n    mcp__com.example.echo__echo: 0.5\n", ScopeManaged)

	st := Merge([]*File{managed, ws, user})
	call, tools := st.Plugins.Resolve(2 * time.Minute)
	want := map[string]time.Duration{
		"mcp__memory__read_graph":     20 * time.Second,       // the workspace's wins the user's
		"mcp__fs__search":             120 * time.Second,      // capped by managed callTimeout
		"mcp__com.example.echo__echo": 500 * time.Millisecond, // managed cap under the user's 60
	}
	if call != time.Minute || !reflect.DeepEqual(tools, want) {
		t.Errorf("Resolve = %v, %v; want 1m0s, %v", call, tools, want)
	}
	if src := st.Plugins.ToolSources["mcp__memory__read_graph"]; src.File != "ws.yaml" || src.Line != 3 || src.Scope != ScopeWorkspace {
		t.Errorf("source = %+v", src)
	}
	if src := st.Plugins.CallSource; src == nil || src.File != "user.yaml" || src.Line != 2 {
		t.Errorf("callTimeout source = %+v", src)
	}

	// Managed alone: the host's default is capped.
	call, tools = Merge([]*File{managed}).Plugins.Resolve(10 * time.Minute)
	if call != 2*time.Minute || tools["mcp__com.example.echo__echo"] != 500*time.Millisecond {
		t.Errorf("managed only: %v %v", call, tools)
	}
	// Nothing set: the default, no tool of its own.
	if call, tools = (PluginTimeouts{}).Resolve(time.Minute); call != time.Minute || tools != nil {
		t.Errorf("empty: %v %v", call, tools)
	}
}
