// Package sandboxinit, imported for its side effect, turns a re-executed
// binary into the sandbox init as early as Go allows: from a package
// initializer rather than from main.
//
// Go initializes packages in import-path order once their dependencies are
// done, so this package (under github.com/norma-run/) runs before the
// initializers of most heavy third-party packages a full binary links —
// santhosh-tekuri/jsonschema compiles every metaschema at init, the model
// SDKs, modernc's libc, prometheus — which would otherwise run, for nothing,
// in every sandboxed process the binary starts (tens of milliseconds per
// launch). A binary that links package sandbox and re-executes itself as the
// init should import it:
//
//	import _ "github.com/norma-run/norma/sandbox/sandboxinit"
//
// When the process is not a sandbox init it does nothing.
package sandboxinit

import "github.com/norma-run/norma/sandbox"

func init() {
	if sandbox.IsInit() {
		sandbox.InitMain() // never returns
	}
}
