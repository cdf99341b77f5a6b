// Package seccompgen assembles the sandbox's seccomp filter. The sandbox
// does not link it: it embeds the assembled filters (sandbox/seccomp_*.bpf),
// which TestSeccompFiltersCurrent in package sandbox rebuilds with this
// package and compares (-update rewrites them). go-seccomp-bpf's package
// initializer builds syscall tables for every architecture; this way no
// norma process pays it (issue 20).
package seccompgen
