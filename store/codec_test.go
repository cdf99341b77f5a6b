package store_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/norma-run/norma/store"
)

func TestChainHash(t *testing.T) {
	good := bytes.Repeat([]byte{7}, 32)
	if h := store.ChainHash(good); !bytes.Equal(h[:], good) {
		t.Errorf("a 32-byte column reads as %x", h)
	}
	for _, b := range [][]byte{nil, good[:31], append(append([]byte(nil), good...), 0)} {
		var want [32]byte
		want[0] = 0xff // no link's hash: the chain's hashes are SHA-256 of bodies, never this
		if h := store.ChainHash(b); h != want || bytes.HasPrefix(h[:], b) && len(b) > 0 {
			t.Errorf("a %d-byte column reads as %x: it must match no link", len(b), store.ChainHash(b))
		}
	}
}

func TestNSTime(t *testing.T) {
	if !store.NSTime(store.TimeNS(time.Time{})).IsZero() || store.TimeNS(time.Time{}) != 0 {
		t.Error("the zero time does not round-trip as 0")
	}
	now := time.Now()
	if got := store.NSTime(store.TimeNS(now)); !got.Equal(now) || got.Location() != time.UTC {
		t.Errorf("round trip: %v, want %v in UTC", got, now)
	}
}
