// Package demo is `norma demo`: an offline, end-to-end showcase that builds
// and signs the example plugins, serves a local TLS issue API (the name
// api.example.invalid mapped to loopback for the demo only), installs
// issue-helper with a narrowed grant, runs a scripted agent session through
// the gate — allowed calls, an approved external write, denials with their
// reasons, the hostile mallory plugin — then updates issue-helper to a
// version that asks for more (held until re-consent), verifies the audit
// chain and prints a summary. Everything happens in a temporary state
// directory and workspace.
package demo
