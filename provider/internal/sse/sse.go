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
	line    []byte // the current line, reused
	pending bool   // the previous line ended in '\r': skip a '\n' that follows
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
		line, err := r.readLine()
		if err != nil && (err != io.EOF || line == nil) {
			if err == io.EOF && hasData {
				ev.Data = data
				return ev, nil
			}
			return Event{}, err
		}
		if len(line) == 0 && err == nil {
			if hasData {
				ev.Data = data
				return ev, nil
			}
			ev = Event{}
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

// readLine returns the next line without its end of line (valid until the
// next call), and io.EOF with the last line when the stream ends without
// one (nil when nothing was left).
func (r *Reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	if r.pending {
		r.pending = false
		if b, err := r.r.Peek(1); err == nil && b[0] == '\n' {
			r.r.Discard(1)
		}
	}
	got := false
	for {
		if r.r.Buffered() == 0 {
			if _, err := r.r.Peek(1); err != nil {
				if !got && err == io.EOF {
					return nil, io.EOF
				}
				return r.line, err
			}
		}
		b, _ := r.r.Peek(r.r.Buffered())
		got = true
		if i := bytes.IndexAny(b, "\r\n"); i >= 0 {
			if len(r.line)+i > MaxLine {
				return nil, ErrLineTooLong
			}
			r.line = append(r.line, b[:i]...)
			r.pending = b[i] == '\r'
			r.r.Discard(i + 1)
			return r.line, nil
		}
		if len(r.line)+len(b) > MaxLine {
			return nil, ErrLineTooLong
		}
		r.line = append(r.line, b...)
		r.r.Discard(len(b))
	}
}
