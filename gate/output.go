package gate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// DefaultMaxChars is the default head cap of a tool result, in characters.
const DefaultMaxChars = 30000

// MarkerPrefix starts every marker the gate puts into a result. Tool output
// containing it (in any letter case) is escaped, so a marker in a result was
// written by the gate.
const MarkerPrefix = "[norma:"

// OutputOptions configures output capture.
type OutputOptions struct {
	// MaxChars is the head cap in characters; zero means DefaultMaxChars.
	MaxChars int
	// SpillDir, when set, receives the full output of every capped result
	// as sha256-<hex>.out plus one sidecar record per call,
	// sha256-<hex>.<call>.json. Empty means the rest is dropped.
	SpillDir string
	// MaxAge and MaxBytes bound what the spill directory keeps; zero means
	// 7 days and 1 GiB. Retention runs after a spill, at most once a minute.
	MaxAge   time.Duration
	MaxBytes int64
}

// Spill describes a spilled output.
type Spill struct {
	// Name is the file name inside the spill directory.
	Name string `json:"name"`
	// Digest is "sha256:" + hex of the full output.
	Digest string `json:"digest"`
	// Size is the full output's size in bytes, Chars in characters.
	Size  int `json:"size"`
	Chars int `json:"chars"`
}

// SpillRecord is the sidecar written next to a spill file.
type SpillRecord struct {
	ToolUseID string    `json:"toolUseId"`
	RunID     string    `json:"runId"`
	Tool      string    `json:"tool"`
	Time      time.Time `json:"time"`
	Size      int       `json:"size"`
	Digest    string    `json:"digest"`
}

type capture struct {
	opts    OutputOptions
	now     func() time.Time
	mu      sync.Mutex
	lastGC  time.Time
	pruning sync.Mutex
}

func newCapture(o OutputOptions, now func() time.Time) (*capture, error) {
	if o.MaxChars == 0 {
		o.MaxChars = DefaultMaxChars
	}
	if o.MaxChars < 0 {
		return nil, errors.New("gate: negative Output.MaxChars")
	}
	if o.MaxAge == 0 {
		o.MaxAge = 7 * 24 * time.Hour
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = 1 << 30
	}
	if o.SpillDir != "" {
		if !filepath.IsAbs(o.SpillDir) {
			return nil, fmt.Errorf("gate: spill dir %q is not absolute", o.SpillDir)
		}
		if err := os.MkdirAll(o.SpillDir, 0o700); err != nil {
			return nil, fmt.Errorf("gate: spill dir: %w", err)
		}
	}
	return &capture{opts: o, now: now}, nil
}

// EscapeMarkers makes marker-like text in tool output inert by inserting a
// backslash before the colon of every case-insensitive "[norma:".
func EscapeMarkers(s string) string {
	if !containsFold(s, MarkerPrefix) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for {
		i := indexFold(s, MarkerPrefix)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i+len(MarkerPrefix)-1])
		b.WriteString(`\:`)
		s = s[i+len(MarkerPrefix):]
	}
}

func containsFold(s, sub string) bool { return indexFold(s, sub) >= 0 }

// indexFold finds sub (ASCII) in s ignoring ASCII case.
func indexFold(s, sub string) int {
	for i := strings.IndexByte(s, sub[0]); i >= 0 && i+len(sub) <= len(s); {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
		j := strings.IndexByte(s[i+1:], sub[0])
		if j < 0 {
			return -1
		}
		i += j + 1
	}
	return -1
}

// apply caps content. It returns what the model sees and, when the output
// was cut and a spill directory is set, the spill. err reports a spill that
// could not be written (the head is still returned).
func (c *capture) apply(content string, rec SpillRecord) (string, *Spill, error) {
	safe := EscapeMarkers(content)
	if len(safe) <= c.opts.MaxChars || utf8.RuneCountInString(safe) <= c.opts.MaxChars {
		return safe, nil, nil
	}
	head := safe
	n := 0
	for i := range safe {
		if n == c.opts.MaxChars {
			head = safe[:i]
			break
		}
		n++
	}
	sum := sha256.Sum256([]byte(content))
	hexsum := hex.EncodeToString(sum[:])
	sp := &Spill{Name: "sha256-" + hexsum + ".out", Digest: "sha256:" + hexsum, Size: len(content), Chars: utf8.RuneCountInString(content)}
	var err error
	if c.opts.SpillDir != "" {
		rec.Size, rec.Digest, rec.Time = sp.Size, sp.Digest, c.now().UTC()
		err = c.spill(sp, content, rec)
	}
	marker := fmt.Sprintf("\n%struncated: showing %d of %d characters; full output sha256:%s", MarkerPrefix, c.opts.MaxChars, sp.Chars, hexsum)
	if c.opts.SpillDir != "" && err == nil {
		marker += " saved as spill:" + sp.Name + "]"
	} else {
		marker += " not retained]"
		sp = nil
	}
	return head + marker, sp, err
}

func (c *capture) spill(sp *Spill, content string, rec SpillRecord) error {
	dir := c.opts.SpillDir
	target := filepath.Join(dir, sp.Name)
	if _, err := os.Stat(target); err != nil {
		if err := writeAtomic(dir, target, []byte(content)); err != nil {
			return err
		}
	} else {
		now := c.now()
		_ = os.Chtimes(target, now, now) // keep a re-used spill alive
	}
	callSum := sha256.Sum256([]byte(rec.RunID + "\x00" + rec.ToolUseID))
	side, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	name := strings.TrimSuffix(sp.Name, ".out") + "." + hex.EncodeToString(callSum[:8]) + ".json"
	if err := writeAtomic(dir, filepath.Join(dir, name), side); err != nil {
		return err
	}
	c.maybePrune()
	return nil
}

func writeAtomic(dir, target string, data []byte) error {
	f, err := os.CreateTemp(dir, ".spill-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), target)
}

func (c *capture) maybePrune() {
	c.mu.Lock()
	now := c.now()
	due := now.Sub(c.lastGC) >= time.Minute
	if due {
		c.lastGC = now
	}
	c.mu.Unlock()
	if due {
		_ = c.Prune()
	}
}

// Prune applies retention to the spill directory: it removes spill files
// and sidecars older than MaxAge, then the oldest until the directory holds
// at most MaxBytes. A spill file and its sidecars go together.
func (c *capture) Prune() error {
	if c.opts.SpillDir == "" {
		return nil
	}
	c.pruning.Lock()
	defer c.pruning.Unlock()
	ents, err := os.ReadDir(c.opts.SpillDir)
	if err != nil {
		return err
	}
	type group struct {
		files []string
		size  int64
		mod   time.Time
	}
	groups := map[string]*group{}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, "sha256-") || len(name) < 7+64 {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		key := name[:7+64]
		g := groups[key]
		if g == nil {
			g = &group{}
			groups[key] = g
		}
		g.files = append(g.files, name)
		g.size += info.Size()
		if info.ModTime().After(g.mod) {
			g.mod = info.ModTime()
		}
	}
	var keep []*group
	var total int64
	now := c.now()
	for _, g := range groups {
		if now.Sub(g.mod) > c.opts.MaxAge {
			for _, f := range g.files {
				os.Remove(filepath.Join(c.opts.SpillDir, f))
			}
			continue
		}
		keep = append(keep, g)
		total += g.size
	}
	slices.SortFunc(keep, func(a, b *group) int { return a.mod.Compare(b.mod) })
	for _, g := range keep {
		if total <= c.opts.MaxBytes {
			break
		}
		for _, f := range g.files {
			os.Remove(filepath.Join(c.opts.SpillDir, f))
		}
		total -= g.size
	}
	return nil
}
