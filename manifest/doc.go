// Package manifest parses, validates, normalizes, digests and compares Norma
// plugin manifests (schema_version 2) and the policy layer files (grant,
// workspace and run policies) that share their permissions section.
//
// Parsing is strict and bounded: a file is refused when it is larger than
// MaxFileSize, not UTF-8, nested deeper than MaxDepth, or expands aliases past
// a small budget (a "billion laughs" file fails in microseconds). The YAML is
// validated against the JSON Schema 2020-12 documents in schema/ (embedded in
// the binary, additionalProperties false at every level), decoded with
// goccy/go-yaml in strict mode, and then checked for what a schema cannot
// express (normalized origins, path templates, globs that stay inside the
// workspace, inline secret values). Every problem is reported, each as
// FILE:LINE:COL: field.path: message.
//
// Later packages consume only the normalized Manifest: lists sorted and
// de-duplicated, origins as scheme://host:port, the risk shorthand expanded to
// effects, defaults made explicit. Digest is sha256 over the RFC 8785
// canonical JSON of that form, so reordering a list or re-spelling an origin
// never changes it.
package manifest
