package policy

import (
	"sync"

	"github.com/norma-run/norma/manifest"
)

// Key identifies a compiled Set. Besides the generations the caller keeps,
// it holds the digests of every layer, so a changed file can never be
// answered by an old compile even if a generation was not bumped.
type Key struct {
	PluginID, Version, ManifestDigest       string
	ConsentGeneration, PolicyGeneration     uint64
	GrantDigest, WorkspaceDigest, RunDigest string
	Host                                    Host
}

func keyOf(in Inputs) Key {
	k := Key{ConsentGeneration: in.ConsentGeneration, PolicyGeneration: in.PolicyGeneration, Host: in.Host}
	if m := in.Manifest; m != nil {
		k.PluginID, k.Version, k.ManifestDigest = m.ID, m.Version, m.Digest()
	}
	k.GrantDigest, k.WorkspaceDigest, k.RunDigest = layerDigest(in.Grant), layerDigest(in.Workspace), layerDigest(in.Run)
	return k
}

func layerDigest(l *manifest.Layer) string {
	if l == nil {
		return ""
	}
	return l.Digest()
}

// Cache holds compiled Sets by Key. It is safe for concurrent use.
type Cache struct {
	mu   sync.Mutex
	sets map[Key]*Set
	max  int
}

// NewCache returns a cache holding at most max Sets (0 means 1024).
func NewCache(max int) *Cache {
	if max <= 0 {
		max = 1024
	}
	return &Cache{sets: map[Key]*Set{}, max: max}
}

// Get returns the Set for in, compiling it when its key is new.
func (c *Cache) Get(in Inputs) (*Set, error) {
	k := keyOf(in)
	c.mu.Lock()
	s := c.sets[k]
	c.mu.Unlock()
	if s != nil {
		return s, nil
	}
	s, err := Compile(in)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sets) >= c.max {
		// Simple and bounded: drop everything; recompiling is cheap and
		// correctness never depends on a hit.
		clear(c.sets)
	}
	c.sets[k] = s
	return s, nil
}

// Len is the number of cached Sets.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sets)
}
