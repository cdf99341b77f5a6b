package sse

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll returns every event of s and the error that ended the stream
// (nil for io.EOF).
func readAll(r io.Reader) ([]Event, error) {
	sr := NewReader(r)
	var out []Event
	for {
		ev, err := sr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

var cases = []struct {
	name string
	in   string
	want []Event
}{
	{"anthropic", "event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n",
		[]Event{{"message_start", []byte(`{"type":"message_start"}`)}, {"ping", []byte(`{"type": "ping"}`)}}},
	{"openai", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []Event{{"", []byte(`{"a":1}`)}, {"", []byte("[DONE]")}}},
	{"crlf", "event: e\r\ndata: x\r\n\r\n", []Event{{"e", []byte("x")}}},
	{"cr only", "event: e\rdata: x\r\r", []Event{{"e", []byte("x")}}},
	{"multi-line data", "data: a\ndata: b\ndata:\n\n", []Event{{"", []byte("a\nb\n")}}},
	{"no space after colon", "event:e\ndata:x\n\n", []Event{{"e", []byte("x")}}},
	{"only one space is dropped", "data:  x\n\n", []Event{{"", []byte(" x")}}},
	{"comments, id and retry are skipped", ": keep-alive\nid: 7\nretry: 100\ndata: x\n\n", []Event{{"", []byte("x")}}},
	{"a block without data is no event", "event: e\n\ndata: x\n\n", []Event{{"", []byte("x")}}},
	{"field without colon", "data\n\n", []Event{{"", []byte("")}}},
	{"last block without its blank line", "event: message_stop\ndata: {}", []Event{{"message_stop", []byte("{}")}}},
	{"empty", "", nil},
	{"blank lines only", "\n\n\r\n", nil},
}

func TestReader(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(c.in), iotest.OneByteReader(strings.NewReader(c.in))} {
				got, err := readAll(r)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, c.want) {
					t.Errorf("events of %q =\n%q\nwant\n%q", c.in, got, c.want)
				}
			}
		})
	}
}

func TestReadErrorIsReturned(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom))
	got, err := readAll(r)
	if !errors.Is(err, boom) || len(got) != 1 {
		t.Errorf("readAll = %q, %v; want one event and boom", got, err)
	}
}

func TestLineTooLong(t *testing.T) {
	in := "data: " + strings.Repeat("x", MaxLine) + "\n\n"
	if _, err := readAll(strings.NewReader(in)); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("readAll(long line) = %v, want ErrLineTooLong", err)
	}
}

// encode writes events back in the format (the fuzz target's second
// direction).
func encode(evs []Event) []byte {
	var b bytes.Buffer
	for _, ev := range evs {
		if ev.Type != "" {
			b.WriteString("event: " + ev.Type + "\n")
		}
		for l := range strings.SplitSeq(string(ev.Data), "\n") {
			b.WriteString("data: " + l + "\n")
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

func BenchmarkReader(b *testing.B) {
	var in strings.Builder
	for range 200 {
		in.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" a few words\"}}\n\n")
	}
	s := in.String()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readAll(strings.NewReader(s)); err != nil {
			b.Fatal(err)
		}
	}
}
