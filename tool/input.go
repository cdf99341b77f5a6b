package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxInputDepth bounds the nesting of a tool input.
const MaxInputDepth = 64

// Input is one tool input: the raw JSON the tool receives and its decoded
// value. Objects decode to map[string]any, arrays to []any, numbers to
// json.Number, and strings, booleans and null to string, bool and nil, as
// the JSON Schema validator expects. An Input is immutable; handlers must not
// modify the slice returned by Raw or the maps and slices of Value.
type Input struct {
	raw   json.RawMessage
	value any
}

// ParseInput decodes raw strictly: it must be exactly one JSON value, valid
// UTF-8, nested at most MaxInputDepth deep, and no object may repeat a key
// (two parsers may disagree on which duplicate wins, so a checked value could
// differ from the one a tool reads). The error is a *InputError.
func ParseInput(raw []byte) (Input, error) {
	d := decoder{b: raw}
	d.ws()
	v, err := d.value(0)
	if err != nil {
		return Input{}, err
	}
	d.ws()
	if d.i != len(d.b) {
		return Input{}, d.fail("data after the top-level value")
	}
	return Input{raw: raw, value: v}, nil
}

// Raw returns the input as JSON.
func (in Input) Raw() json.RawMessage { return in.raw }

// Value returns the decoded input.
func (in Input) Value() any { return in.value }

// Get returns the member key of an object input.
func (in Input) Get(key string) (any, bool) {
	m, ok := in.value.(map[string]any)
	if !ok {
		return nil, false
	}
	v, ok := m[key]
	return v, ok
}

// String returns the member key of an object input when it is a string.
func (in Input) String(key string) (string, bool) {
	v, ok := in.Get(key)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

// Decode unmarshals the input into dst with encoding/json.
func (in Input) Decode(dst any) error { return json.Unmarshal(in.raw, dst) }

// IsZero reports whether in was never parsed.
func (in Input) IsZero() bool { return in.raw == nil }

// InputError reports why an input does not decode. Offset is the byte
// offset of the problem; the input itself is not repeated.
type InputError struct {
	Offset int
	Msg    string
}

func (e *InputError) Error() string {
	return fmt.Sprintf("tool: input at byte %d: %s", e.Offset, e.Msg)
}

type decoder struct {
	b []byte
	i int
}

func (d *decoder) fail(msg string) error { return &InputError{Offset: d.i, Msg: msg} }

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) value(depth int) (any, error) {
	if depth > MaxInputDepth {
		return nil, d.fail("nested too deeply")
	}
	if d.i >= len(d.b) {
		return nil, d.fail("unexpected end of input")
	}
	switch c := d.b[d.i]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		return d.str()
	case c == 't':
		return true, d.lit("true")
	case c == 'f':
		return false, d.lit("false")
	case c == 'n':
		return nil, d.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	}
	return nil, d.fail("unexpected character " + strconv.QuoteRune(rune(d.b[d.i])))
}

func (d *decoder) lit(s string) error {
	if !bytes.HasPrefix(d.b[d.i:], []byte(s)) {
		return d.fail("invalid literal")
	}
	d.i += len(s)
	return nil
}

func (d *decoder) object(depth int) (any, error) {
	d.i++ // {
	m := make(map[string]any, 4)
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return m, nil
	}
	for {
		d.ws()
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return nil, d.fail("expected an object key")
		}
		at := d.i
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		if _, dup := m[k]; dup {
			d.i = at
			return nil, d.fail("duplicate object key")
		}
		d.ws()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return nil, d.fail("expected ':'")
		}
		d.i++
		d.ws()
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[k] = v
		d.ws()
		if d.i >= len(d.b) {
			return nil, d.fail("unexpected end of input")
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return m, nil
		default:
			return nil, d.fail("expected ',' or '}'")
		}
	}
}

func (d *decoder) array(depth int) (any, error) {
	d.i++ // [
	a := make([]any, 0, 4)
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return a, nil
	}
	for {
		d.ws()
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		d.ws()
		if d.i >= len(d.b) {
			return nil, d.fail("unexpected end of input")
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return a, nil
		default:
			return nil, d.fail("expected ',' or ']'")
		}
	}
}

var errBadString = errors.New("invalid string")

// str decodes a JSON string. Strings without escapes are taken as they
// are; those with escapes go through encoding/json, which implements the
// escape and surrogate rules.
func (d *decoder) str() (string, error) {
	start := d.i
	d.i++ // "
	escaped := false
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			s := d.b[start+1 : d.i-1]
			if !escaped {
				if !utf8.Valid(s) {
					d.i = start
					return "", d.fail("string is not valid UTF-8")
				}
				return string(s), nil
			}
			var out string
			if err := json.Unmarshal(d.b[start:d.i], &out); err != nil || !utf8.Valid(s) {
				d.i = start
				return "", d.fail(errBadString.Error())
			}
			return out, nil
		case c == '\\':
			escaped = true
			d.i += 2
		case c < 0x20:
			return "", d.fail("control character in string")
		default:
			d.i++
		}
	}
	return "", d.fail("unterminated string")
}

func (d *decoder) number() (any, error) {
	start := d.i
	if d.b[d.i] == '-' {
		d.i++
	}
	digits := func() int {
		n := 0
		for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	if d.i < len(d.b) && d.b[d.i] == '0' {
		d.i++
	} else if digits() == 0 {
		return nil, d.fail("invalid number")
	}
	if d.i < len(d.b) && d.b[d.i] == '.' {
		d.i++
		if digits() == 0 {
			return nil, d.fail("invalid number")
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			return nil, d.fail("invalid number")
		}
	}
	return json.Number(d.b[start:d.i]), nil
}
