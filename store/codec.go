package store

import (
	"time"

	"github.com/norma-run/norma/audit"
)

// The stores' one encoding of the columns both backends share, so that
// SQLite and package store/postgres read a row the same way.

// NSTime reads a stored time: Unix nanoseconds, 0 for the zero time.
func NSTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// TimeNS is the stored form of t ([NSTime] reads it back).
func TimeNS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// ChainHash reads a stored chain hash. A column of the wrong size (a
// mangled row) reads as a hash that no link can have, so verification
// fails on it instead of comparing a truncated or zero-padded value.
func ChainHash(b []byte) [audit.HashSize]byte {
	var h [audit.HashSize]byte
	if len(b) != audit.HashSize {
		h[0] = ^byte(0)
		return h
	}
	copy(h[:], b)
	return h
}
