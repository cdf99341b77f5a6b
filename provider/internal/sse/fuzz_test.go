package sse

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzReader: any input reads without a panic; the events read, written
// back in the format, read back the same (parse(encode(parse(x))) ==
// parse(x)); no event's type holds a line end and no data holds a '\r'.
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
