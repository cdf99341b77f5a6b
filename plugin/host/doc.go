// Package host runs installed plugins: MCP servers over stdio, each inside
// the OS sandbox built from its effective capabilities and behind its own
// egress broker, with every tool it offers registered through the gate.
//
// A plugin is loaded from the plugin manager's state (its active version,
// its manifest and the user's grant); its policy Set is compiled from the
// manifest, the grant, the workspace and run policies and the host layer.
// When it starts, the host lists its tools: a tool the manifest does not
// declare makes the whole plugin fail to load (TOOL_UNDECLARED), and nothing
// of it is registered. The digest of every tool's name, description and
// input schema is pinned on first load after consent; a later change — a
// restart that serves different tools, or a tools/list_changed notification
// — holds the plugin (PLUGIN_HELD) until the user consents again. MCP tool
// annotations are ignored: effects and approval come from the signed
// manifest.
//
// The process gets nothing it was not granted: the package directory
// read-only, the granted workspace directories (with denied entries hidden),
// an environment of placeholders and broker settings only, no network but
// the broker's endpoint, resource limits, and a kill of the whole tree on
// Close, on a hung call and on host exit.
package host
