// Package mcpadd builds a Norma plugin package from the command line a
// user would give an MCP client (`claude mcp add NAME -- npx -y @scope/pkg`),
// for `norma mcp add` and `norma mcp import`.
//
// [Build] installs the server ahead of time on the host, because the
// sandbox it will run in has no network:
//
//   - npx PKG: `npm install --prefix DIR --no-audit --no-fund --ignore-scripts`.
//     Install scripts are not run: they would run unconfined on the host, as
//     the user, before anything was reviewed. The entrypoint is the
//     package's own `bin` target (from its package.json; never a .bin
//     link, and the .bin link directories are dropped), which keeps its
//     `#!/usr/bin/env node` line.
//   - uvx PKG and python3 -m MODULE: `uv pip install --target DIR/lib` when
//     uv is on PATH, else `/usr/bin/python3 -m pip install --target DIR/lib`,
//     with a generated launcher bin/NAME (#!/usr/bin/python3) that puts
//     ../lib first on sys.path and calls the console_scripts entry point
//     of the distribution (uvx) or runs the module (-m).
//   - node FILE: FILE's directory is copied to app/ and a launcher bin/NAME
//     imports it.
//   - a plain program (a path, relative or absolute, or a name in PATH):
//     copied to bin/NAME.
//
// The resolved version becomes the manifest's version, and the source —
// kind, package, version, digest (npm's integrity from package-lock.json,
// sha256 of a python dist's RECORD, sha256 of a copied file) and the
// command — is written to [SourceFile] inside the package, so the tree
// digest the install pins covers it.
//
// The server is then started once in the sandbox ([host.Wrap]) to list its
// tools, and Wrap proposes the manifest: effects from the server's MCP
// annotations as untrusted suggestions, its arguments (an argument equal
// to the workspace root becomes ${workspace}), its environment and
// secrets. npm and python servers always get a data directory of their
// own (data_dir: true) with the XDG base directories pointed into it; a
// server that wants another location is told so by --env
// (MEMORY_FILE_PATH=${data}/memory.jsonl).
//
// Secrets are declared, never written: a secret K=ORIGIN becomes a
// permissions.secrets entry whose placeholder reaches the server in K; the
// value goes to the vault ([SecretName]).
package mcpadd
