// Package workspace assembles the whole runtime of a run from a workspace
// directory and Norma's state directory: the workspace policy, the built-in
// tools and their policy (compiled once), the installed plugins under the
// plugin host, and the agent options that bind them to one gate.
//
// Every door calls [Open]: `norma run`, `norma policy explain`, and Go
// embedders that want the built-in tools and installed plugins. None of
// them wires tools, policies or plugins of its own, so what explain reports
// is what a run decides.
//
// A [Runtime] serves one session: [Runtime.Session] for a run, or
// [Runtime.Explain] for decisions without a run. Close it when done.
package runtime
