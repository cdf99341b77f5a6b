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
// input schema is pinned on first load after consent. A start or a
// tools/list_changed is admitted when every served tool is declared and
// matches its pin or is seen for the first time (then pinned, and offered
// from the next Load: a session's registry is fixed when it starts);
// anything else — an undeclared tool, a pinned tool changed — holds the
// plugin (PLUGIN_HELD) until the user consents again. At run time MCP
// tool annotations are ignored: effects and approval come from the
// manifest (Wrap only proposes them from annotations, as untrusted
// suggestions the user reviews before consent).
//
// [Host.LoadDev] runs a plugin that is not installed, for development
// (`norma mcp proxy --manifest FILE -- CMD ARGS...`): its manifest's
// directory is its package and CMD ARGS replace the entrypoint and args;
// everything else (policy, sandbox spec, broker, tool checks) is the code
// that runs an installed plugin, and nothing is written to the plugin
// state (pins and a hold last for the run, a data directory is
// temporary).
//
// Beyond tools: a server's resources and prompts are offered through
// [Host.FeatureTools], behind the gate; its logging messages and progress
// notifications are audited and handed to Config.Notify, never to the
// model; its elicitations go to Config.Elicit (declined without one) and
// its sampling requests to Config.Sampling (refused without one), on both
// protocol generations (2025-11-25 requests, 2026-07-28 input requests).
//
// A plugin tool is called only through the CoreTools of [Plugin.Tools],
// which the session registers with the gate: the method that talks to the
// server is unexported, so no caller outside this package can reach a
// plugin tool without manifest, policy, approval and audit.
//
// The process gets nothing it was not granted: the package directory
// read-only, the granted workspace directories (with denied entries hidden;
// derived by package sandbox/sandboxpolicy, as for the built-in shell), an
// environment of placeholders and broker settings only, no network but the
// broker's endpoint, resource limits (sandboxpolicy.DefaultLimits unless
// Config.Limits says otherwise), and a kill of the whole tree on Close, on
// a hung call and on host exit.
//
// A call that outlives its timeout (Config.ToolTimeouts for its tool, else
// Config.CallTimeout) ends with TIMEOUT; the tree is killed and the next
// call starts a fresh process. A process that dies during a call ends it
// with PLUGIN_CRASHED, carrying the last lines of its stderr (redacted,
// escaped), which the crash's audit event records too; the next call waits
// out a backoff that doubles with each consecutive crash, then starts a
// fresh process.
//
// # Files
//
//   - host.go: Config, Host (New, Close, Stop), Plugin and Load, which
//     compiles the plugin's policy through the host's cache.
//   - lifecycle.go: starting (sandbox spec), stopping, crash
//     backoff and restart, the no-spawn exec list, the stderr ring.
//   - tools.go: the registry CoreTools, the unexported call, result bounds,
//     and the tools/list check (at start and on tools/list_changed)
//     against the manifest and the pins.
//   - dev.go: LoadDev, the development plugin's package check, command,
//     working directory and temporary data directory.
//   - pins.go: tool pins (tools.pin.json) and holds (tools.held.json, Hold,
//     ReleaseHold).
//   - listener.go: the plugin's egress broker, its approval credits, and the
//     net.Listener over the sandbox's broker connections.
//   - wrap.go: Wrap, the one engine that starts an existing MCP server once
//     in the sandbox and proposes its manifest (effects from its annotations,
//     marked untrusted); `plugin wrap` and door/mcpadd use it.
//   - client.go: ClientOptions (the one set of client capabilities and
//     handlers, for Load and Wrap), connect, notices.
//   - features.go: the resource and prompt tools.
//   - elicit.go, sampling.go: elicitation and sampling requests.
package host
