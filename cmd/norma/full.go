//go:build !norma_front

package main

// completesInFull is false in the full build: it completes itself.
func completesInFull([]string) bool { return false }
