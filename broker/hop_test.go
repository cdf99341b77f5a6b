package broker

import (
	"net/http"
	"net/textproto"
	"reflect"
	"strings"
	"testing"
)

// stripHopReference is how hop-by-hop fields were removed before
// copyEndToEnd: clone, then delete the fixed list and what Connection names.
func stripHopReference(src http.Header, drop ...string) http.Header {
	h := src.Clone()
	for _, f := range h.Values("Connection") {
		for _, k := range strings.Split(f, ",") {
			if k = textproto.TrimString(k); k != "" {
				h.Del(k)
			}
		}
	}
	for _, k := range []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"} {
		h.Del(k)
	}
	for _, k := range drop {
		h.Del(k)
	}
	return h
}

// TestCopyEndToEnd: the one-pass copy keeps and drops exactly what the
// clone-and-delete did, and copies: changing the copy leaves the source
// alone.
func TestCopyEndToEnd(t *testing.T) {
	tests := []http.Header{
		{},
		{"Content-Type": {"application/json"}, "Content-Length": {"15"}},
		{"Connection": {"keep-alive, X-Hop", " x-other ,"}, "Keep-Alive": {"timeout=5"}, "X-Hop": {"1"}, "X-Other": {"2"}, "X-Keep": {"a", "b"}},
		{"Proxy-Authorization": {"Basic c2VjcmV0"}, "Te": {"trailers"}, "Trailer": {"X"}, "Transfer-Encoding": {"chunked"}, "Upgrade": {"h2c"}, "Proxy-Connection": {"close"}, "Expect": {"100-continue"}, "Accept": {"*/*"}},
		{"Connection": {"Accept"}, "Accept": {"*/*"}, "Authorization": {"Bearer x"}},
		{"X-Empty": {}, "X-Two": {"1", "2"}},
	}
	for i, src := range tests {
		before := src.Clone()
		want := stripHopReference(src, "Expect")
		got := http.Header{}
		copyEndToEnd(got, src, nil, "Expect")
		for k, v := range want {
			if len(v) == 0 {
				delete(want, k) // an empty field is not sent either way
			}
		}
		for k, v := range got {
			if len(v) == 0 {
				delete(got, k)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%d: copyEndToEnd = %v, want %v", i, got, want)
		}
		for _, vs := range got {
			for j := range vs {
				vs[j] = "changed"
			}
		}
		if !reflect.DeepEqual(src, before) {
			t.Errorf("%d: changing the copy changed the source: %v", i, src)
		}
	}
	// Values pass through f, and land on what dst already holds.
	dst := http.Header{"X-A": {"0"}}
	copyEndToEnd(dst, http.Header{"X-A": {"1"}, "X-B": {"2"}}, func(s string) string { return s + "!" })
	if want := (http.Header{"X-A": {"0", "1!"}, "X-B": {"2!"}}); !reflect.DeepEqual(dst, want) {
		t.Errorf("copyEndToEnd with f = %v, want %v", dst, want)
	}
}
