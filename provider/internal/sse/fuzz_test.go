package sse

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// FuzzReader: any input reads without a panic and as a plain second
// reading of the format does (reference: split into lines, then fields);
// the events read, written back in the format, read back the same
// (parse(encode(parse(x))) == parse(x)); no event's type holds a line end
// and no data holds a '\r'.
func FuzzReader(f *testing.F) {
	for _, c := range cases { // the table's streams, each a seed
		f.Add([]byte(c.in))
	}
	f.Add([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n")) // an error event
	f.Add([]byte("data: a\r\n\rdata: b\n"))                                                                 // mixed line ends
	f.Fuzz(func(t *testing.T, in []byte) {
		evs, err := readAll(bytes.NewReader(in))
		if err != nil {
			return
		}
		if ref := reference(in); !reflect.DeepEqual(evs, ref) {
			t.Fatalf("events of %q =\n%q\nthe reference reads\n%q", in, evs, ref)
		}
		for _, ev := range evs {
			if bytes.ContainsAny([]byte(ev.Type), "\r\n") || bytes.IndexByte(ev.Data, '\r') >= 0 {
				t.Fatalf("event %q holds a line end", ev)
			}
		}
		again, err := readAll(bytes.NewReader(encode(evs)))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again, evs) {
			t.Fatalf("round trip of %q:\n%q\nwant\n%q", in, again, evs)
		}
	})
}

// reference reads a whole stream the plain way: lines split at "\r\n",
// "\r" or "\n", fields cut at the first colon, an event at each blank line
// and at the end.
func reference(in []byte) []Event {
	s := strings.ReplaceAll(strings.ReplaceAll(string(in), "\r\n", "\n"), "\r", "\n")
	var out []Event
	var ev Event
	var data []string
	dispatch := func() {
		if data != nil {
			ev.Data = []byte(strings.Join(data, "\n"))
			out = append(out, ev)
		}
		ev, data = Event{}, nil
	}
	lines := strings.Split(s, "\n")
	for _, l := range lines {
		if l == "" {
			dispatch()
			continue
		}
		field, value, _ := strings.Cut(l, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Type = value
		case "data":
			data = append(data, value)
		}
	}
	dispatch()
	return out
}
