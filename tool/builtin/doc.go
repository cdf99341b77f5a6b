// Package tools holds Norma's built-in tools — files (Read, Write, Edit,
// MultiEdit, LS, Glob, Grep), web (WebFetch, WebSearch) and session tools
// (TodoWrite, AskUser, EnterPlanMode, ExitPlanMode, Memory, Skill,
// SearchExtraTools, ExecuteExtraTool) — and the built-in manifest that puts
// them, and the shell tools of package tools/shell, under the same policy
// layers as any plugin.
//
// # Building the built-in registry
//
// [Build] (or [Builtins]) parses the embedded manifest.yaml with
// manifest.Parse, adds the network rules of [Config.Network] and of the
// search backend, parses the result again, and returns the manifest and the
// tools. The host compiles the built-in policy from that manifest (plus its
// grant, workspace and run layers), registers the tools as built-in
// (tool.Plugin{}) in a tool.Registry, creates the gate, and binds it with
// [GateRef.Bind]:
//
//	ref := &tools.GateRef{}
//	b, err := tools.Build(tools.Config{Gate: ref, Registry: reg, Catalog: cat,
//		Search: brave, Network: []manifest.NetRule{tools.AnyPath("https://go.dev", 4)},
//		Todos: tools.FileTodoStore{Dir: stateDir}, Ask: ask, ConsentExitPlan: consent,
//		Shell: &shell.Config{...}, Policy: compileBuiltinPolicy})
//	for _, t := range b.Tools { reg.Register(tool.Registration{Tool: t}) }
//	g, err := gate.New(gate.Options{Registry: reg, ...})
//	ref.Bind(g)
//	defer b.Shell.Close()
//
// A misconfigured backend or network rule is an error from Build, never a
// silently missing tool.
//
// # Capabilities only
//
// Every handler works on the Env the gate hands it: files through env.FS
// (the file guard; Glob and Grep need its WalkDir and refuse without it),
// requests through env.HTTP (the network guard's client; never another
// client), secrets as handles. Each tool declares its accesses (fs.read,
// fs.write with the path, net.request with the URL, secret.use), so the
// gate's policy step and argument rules decide before the handler runs,
// and the guards check every operation again inside it. Grep and Glob
// never enter a directory the policy denies: the guard's walker does not
// report it.
//
// # Errors
//
// A tool's own failures are *capability.Error values with layer "tool" and
// a stable code (FILE_TOO_LARGE, FILE_BINARY, EDIT_NO_MATCH,
// EDIT_AMBIGUOUS, WEB_CONTENT_UNSUPPORTED, HOST_UNAVAILABLE, …; see
// capability/reason_tools.go); guard refusals keep the guard's code.
//
// # What this package does not do
//
// WebFetch reaches only destinations listed in the built-in manifest's
// network section (the manifest's path templates have no wildcard; see
// [AnyPath]). The search backend's key given as a secret name is injected
// by the egress broker, not by the tool. SearchExtraTools can describe
// deferred tools only when they were registered through a [Catalog] (a
// registry view does not describe a locked tool).
package builtin
