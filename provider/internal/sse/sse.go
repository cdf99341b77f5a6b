package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// MaxLine is the longest line a [Reader] accepts (16 MiB: a tool call's
// whole input may come in one data line).
const MaxLine = 16 << 20

// ErrLineTooLong is returned when a line exceeds [MaxLine].
var ErrLineTooLong = errors.New("sse: line too long")

// Event is one server-sent event.
type Event struct {
	// Type is the "event" field; empty when the block had none.
	Type string
	// Data is the "data" lines, joined by "\n".
	Data []byte
}

// Reader reads events from a stream. It is not safe for concurrent use.
type Reader struct {
	r       *bufio.Reader
	pending bool // the previous line ended in '\r': skip a '\n' at the start of this one
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 32<<10)}
}

// Next returns the next event. At the end of the stream it returns io.EOF;
// a read error of the underlying reader is returned as is.
func (r *Reader) Next() (Event, error) {
	var ev Event
	data := []byte{}
	hasData := false
	for {
		line, err := r.line()
		if err != nil && (err != io.EOF || line == nil) {
			if err == io.EOF && hasData {
				ev.Data = data
				return ev, nil
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if hasData {
				ev.Data = data
				return ev, nil
			}
			ev = Event{}
			if err == io.EOF {
				return Event{}, io.EOF
			}
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			value, _ = bytes.CutPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "": // a comment
		case "event":
			ev.Type = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		}
		if err == io.EOF {
			if hasData {
				ev.Data = data
				return ev, nil
			}
			return Event{}, io.EOF
		}
	}
}

// line returns the next line without its end of line, and io.EOF with the
// last line when the stream ends without one (nil when nothing was left).
func (r *Reader) line() ([]byte, error) {
	var buf []byte
	for {
		b, err := r.r.ReadByte()
		if err != nil {
			if err == io.EOF && buf == nil {
				return nil, io.EOF
			}
			if buf == nil {
				buf = []byte{}
			}
			return buf, err
		}
		if r.pending {
			r.pending = false
			if b == '\n' {
				continue
			}
		}
		switch b {
		case '\n':
			if buf == nil {
				buf = []byte{}
			}
			return buf, nil
		case '\r':
			r.pending = true
			if buf == nil {
				buf = []byte{}
			}
			return buf, nil
		}
		if len(buf) >= MaxLine {
			return nil, ErrLineTooLong
		}
		buf = append(buf, b)
	}
}
