// Package keycase finds documents that Go's decoders read differently
// from the parsers of the programs Norma works beside (JavaScript's
// JSON.parse in Claude Code, Gemini CLI and the MCP clients, serde in
// Codex).
//
// encoding/json fills a struct field from any object key equal to its
// tag but for case ("Command" for `json:"command"`, even "K" for "k" by
// Unicode folding), the last one winning, and BurntSushi/toml does the
// same for a TOML key; the others read the exact key.
// A file that has both means one thing to Norma and another to the
// program it configures: Norma would show, install or decide what the
// program never runs.
package keycase

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"
)

// JSON returns an error when an object of the JSON document b, at any
// depth, has two keys that are equal but for case, or one key twice
// (parsers disagree on which one counts). A document that is not valid
// JSON is not JSON's to report: it returns nil, and the caller's own
// decoding fails.
func JSON(b []byte) error {
	type frame struct {
		obj     bool
		wantKey bool
		keys    map[string]string // folded → as written
	}
	var stack []*frame
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) || err != nil {
			return nil
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if delim, ok := tok.(json.Delim); ok {
			switch delim {
			case '{', '[':
				if top != nil && top.obj {
					top.wantKey = true // after this value, a key
				}
				stack = append(stack, &frame{obj: delim == '{', wantKey: true, keys: map[string]string{}})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		}
		if top == nil || !top.obj {
			continue
		}
		if !top.wantKey {
			top.wantKey = true // a scalar value; a key comes next
			continue
		}
		k, _ := tok.(string)
		if err := add(top.keys, k); err != nil {
			return err
		}
		top.wantKey = false
	}
}

// Value returns an error when a map of v (a document decoded into
// map[string]any, []any and scalars, as a TOML decoder gives it) has two
// keys that are equal but for case.
func Value(v any) error {
	switch x := v.(type) {
	case map[string]any:
		seen := map[string]string{}
		for k, e := range x {
			if err := add(seen, k); err != nil {
				return err
			}
			if err := Value(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := Value(e); err != nil {
				return err
			}
		}
	case []map[string]any:
		for _, e := range x {
			if err := Value(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// add records key k in keys (folded → as written), or refuses it.
func add(keys map[string]string, k string) error {
	f := fold(k)
	if prev, ok := keys[f]; ok {
		if prev == k {
			return fmt.Errorf("the key %q appears twice in one object", k)
		}
		return fmt.Errorf("the keys %q and %q differ only in case", prev, k)
	}
	keys[f] = k
	return nil
}

// fold maps s to a key equal for exactly the strings bytes.EqualFold
// finds equal to it: each rune replaced by the smallest of its simple
// case folding orbit.
func fold(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		b = utf8.AppendRune(b, min)
	}
	return string(b)
}
