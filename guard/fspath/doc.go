// Package fspath cleans workspace path names without touching the disk:
// the one normalization of a name that the policy, the gate and the file
// guard share. It is a leaf (it imports only capability, for the reason
// codes), so the declarative policy can clean names without importing the
// guard that opens files.
package fspath
