package builtin_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/tool/builtin"
)

func TestGrep(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.write(t, map[string]string{
		"a.go":              "package a\n// TOKEN here\nfunc A() {}\nvar x = 1\n",
		"b/b.go":            "package b\nfunc B() { TOKEN() }\n",
		"b/c.txt":           "TOKEN in text\nsecond TOKEN line\n",
		".env":              "TOKEN=hunter2\n",
		"private/p.go":      "TOKEN hunter2\n",
		".git/config":       "TOKEN hunter2\n",
		"node_modules/m.js": "TOKEN hunter2\n",
		"bin.dat":           "TOKEN\x00hunter2",
		"ctx.txt":           "1\n2\nmatch\n4\n5\n6\n7\nmatch\n9\n",
		"lines.txt":         "ab\ncd\n",
	})
	tests := []struct {
		name, input string
		want        string
		reason      capability.Reason
	}{
		{name: "files default", input: `{"pattern":"TOKEN"}`, want: "a.go\nb/b.go\nb/c.txt"},
		{name: "content", input: `{"pattern":"TOKEN","path":"b","output_mode":"content"}`, want: "b/b.go:2:func B() { TOKEN() }\nb/c.txt:1:TOKEN in text\nb/c.txt:2:second TOKEN line"},
		{name: "count", input: `{"pattern":"TOKEN","output_mode":"count"}`, want: "a.go:1\nb/b.go:1\nb/c.txt:2"},
		{name: "include", input: `{"pattern":"TOKEN","include":["*.go"]}`, want: "a.go\nb/b.go"},
		{name: "include path glob", input: `{"pattern":"TOKEN","include":["b/*.txt"]}`, want: "b/c.txt"},
		{name: "regexp", input: `{"pattern":"^func [AB]\\(","output_mode":"content"}`, want: "a.go:3:func A() {}\nb/b.go:2:func B() { TOKEN() }"},
		{name: "case", input: `{"pattern":"token in","case_insensitive":true}`, want: "b/c.txt"},
		{name: "context", input: `{"pattern":"match","path":"ctx.txt","output_mode":"content","context":1}`, want: "ctx.txt-2-2\nctx.txt:3:match\nctx.txt-4-4\n--\nctx.txt-7-7\nctx.txt:8:match\nctx.txt-9-9"},
		{name: "head limit", input: `{"pattern":"TOKEN","head_limit":1}`, want: "a.go\n(2 more files not shown; raise head_limit or narrow the search)"},
		{name: "no match", input: `{"pattern":"nothing-here"}`, want: "no matches"},
		{name: "hunter2 never found", input: `{"pattern":"hunter2"}`, want: "no matches"},
		{name: "denied dir as root", input: `{"pattern":"TOKEN","path":"private"}`, reason: capability.ReasonFilesystemReadDenied},
		{name: "denied file as root", input: `{"pattern":"TOKEN","path":".env"}`, reason: capability.ReasonFilesystemReadDenied},
		{name: "escape", input: `{"pattern":"TOKEN","path":".."}`, reason: capability.ReasonPathEscape},
		{name: "bad regexp", input: `{"pattern":"(a"}`, reason: capability.ReasonInvalidRequest},
		// A match never spans a line end, whatever the pattern says.
		{name: "class across lines", input: `{"pattern":"b[^x]c","path":"lines.txt"}`, want: "no matches"},
		{name: "range across lines", input: `{"pattern":"b[\\x00-z]c","path":"lines.txt"}`, want: "no matches"},
		{name: "space across lines", input: `{"pattern":"b\\s*c","path":"lines.txt"}`, want: "no matches"},
		{name: "dot all across lines", input: `{"pattern":"(?s)b.c","path":"lines.txt"}`, want: "no matches"},
		{name: "text anchors are line anchors", input: `{"pattern":"(?-m)^c.$|\\Aa\\z|^a.$","path":"lines.txt","output_mode":"content","case_insensitive":true}`, want: "lines.txt:1:ab\nlines.txt:2:cd"},
		{name: "newline refused", input: `{"pattern":"b\\nc","path":"lines.txt"}`, reason: capability.ReasonInvalidRequest},
		{name: "newline in a class refused", input: `{"pattern":"b[\\n]c","path":"lines.txt"}`, reason: capability.ReasonInvalidRequest},
		{name: "bad include", input: `{"pattern":"a","include":["../*"]}`, reason: capability.ReasonPathEscape},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.call(t, "Grep", tt.input)
			if tt.reason != "" {
				wantReason(t, r, tt.reason)
				return
			}
			wantOK(t, r)
			if r.Content != tt.want {
				t.Fatalf("Grep(%s) = %q, want %q", tt.input, r.Content, tt.want)
			}
		})
	}
}

func TestWebFetch(t *testing.T) {
	var other *countingServer
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<html><head><title>T  1</title><script>evil()</script></head><body><h1>Hello</h1><p>Some <b>bold</b> and <a href="/x">a link</a>.</p><ul><li>one</li><li>two</li></ul><pre>code
 line</pre></body></html>`)
		case "/latin1":
			w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
			w.Write([]byte("caf\xe9"))
		case "/meta":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html><head><meta charset=\"windows-1252\"></head><body><p>na\xefve \x93quoted\x94</p></body></html>"))
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"a":1}`)
		case "/img":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("\x89PNG\r\n"))
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte(strings.Repeat("y", 5000)))
		case "/404":
			http.NotFound(w, r)
		case "/redirect-out":
			http.Redirect(w, r, other.URL+"/stolen", http.StatusFound)
		case "/redirect-in":
			http.Redirect(w, r, "/json", http.StatusFound)
		}
	})
	other = newServer(t, func(w http.ResponseWriter, r *http.Request) {})
	rule := manifest.NetRule{Origin: srv.URL, Methods: []string{"GET"}, Paths: []string{"/page", "/latin1", "/meta", "/json", "/img", "/big", "/404", "/redirect-out", "/redirect-in"}}
	f := newFixture(t, fixtureOpts{allowPrivate: true, cfg: builtin.Config{Network: []manifest.NetRule{rule}, MaxFetchBytes: 1000}})
	tests := []struct {
		name, url string
		want      []string
		not       []string
		reason    capability.Reason
	}{
		{name: "html to markdown", url: "/page", want: []string{"Title: T 1", "# Hello", "Some **bold** and [a link](" + srv.URL + "/x).", "- one\n- two", "```\ncode\n line\n```"}, not: []string{"evil"}},
		{name: "latin1", url: "/latin1", want: []string{"café"}},
		{name: "meta charset", url: "/meta", want: []string{"naïve “quoted”"}},
		{name: "json", url: "/json", want: []string{`{"a":1}`}},
		{name: "cap", url: "/big", want: []string{"cut at 1000 bytes"}},
		{name: "same-origin redirect", url: "/redirect-in", want: []string{`{"a":1}`, "URL: " + srv.URL + "/json"}},
		{name: "image", url: "/img", reason: capability.ReasonWebContentUnsupported},
		{name: "status", url: "/404", reason: capability.ReasonWebStatus},
		{name: "undeclared path", url: "/secret", reason: capability.ReasonNetworkPathDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.call(t, "WebFetch", map[string]any{"url": srv.URL + tt.url})
			if tt.reason != "" {
				wantReason(t, r, tt.reason)
				return
			}
			wantOK(t, r)
			for _, w := range tt.want {
				if !strings.Contains(r.Content, w) {
					t.Errorf("WebFetch(%s) = %q, want it to contain %q", tt.url, short(r.Content), w)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(r.Content, w) {
					t.Errorf("WebFetch(%s) = %q, must not contain %q", tt.url, short(r.Content), w)
				}
			}
		})
	}

	t.Run("denials send nothing", func(t *testing.T) {
		before := srv.hits.Load()
		// A destination the manifest does not list: refused at the policy step.
		r := f.call(t, "WebFetch", map[string]any{"url": other.URL + "/stolen"})
		wantReason(t, r, capability.ReasonNetworkDestinationDenied)
		if f.ran(r) {
			t.Error("the handler ran for a denied destination")
		}
		// A redirect to it: the hop is checked by the guard before it is sent.
		r = f.call(t, "WebFetch", map[string]any{"url": srv.URL + "/redirect-out"})
		if r.Reason != capability.ReasonNetworkDestinationDenied {
			t.Errorf("redirect out reason = %s, want %s", r.Reason, capability.ReasonNetworkDestinationDenied)
		}
		if n := other.hits.Load(); n != 0 {
			t.Fatalf("the other server got %d requests, want 0", n)
		}
		if n := srv.hits.Load() - before; n != 1 {
			t.Fatalf("the allowed server got %d requests, want 1 (the redirect itself)", n)
		}
		// Metadata endpoint and a non-http scheme.
		wantReason(t, f.call(t, "WebFetch", `{"url":"http://169.254.169.254/latest/meta-data/"}`), capability.ReasonNetworkDestinationDenied)
		wantReason(t, f.call(t, "WebFetch", `{"url":"file:///etc/passwd"}`), capability.ReasonSchemaInvalid)
	})

	t.Run("private address refused at dial", func(t *testing.T) {
		g := newFixture(t, fixtureOpts{allowPrivate: false, cfg: builtin.Config{Network: []manifest.NetRule{rule}}})
		before := srv.hits.Load()
		r := g.call(t, "WebFetch", map[string]any{"url": srv.URL + "/json"})
		wantReason(t, r, capability.ReasonNetworkPrivateAddress)
		if n := srv.hits.Load() - before; n != 0 {
			t.Fatalf("the server got %d requests through a refused dial, want 0", n)
		}
	})
}

// braveServer speaks the Brave Search API's wire format.
func braveServer(t *testing.T, key string) *countingServer {
	return newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/res/v1/web/search" || r.Header.Get("X-Subscription-Token") != key {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"type":"ErrorResponse","error":{"code":"SUBSCRIPTION_TOKEN_INVALID","status":401}}`)
			return
		}
		q := r.URL.Query().Get("q")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"type":"search","query":{"original":%q},"web":{"type":"search","results":[`+
			`{"type":"search_result","title":"Go","url":"https://go.dev/","description":"The <strong>Go</strong> language","age":"1 day"},`+
			`{"type":"search_result","title":"Tour","url":"https://go.dev/tour","description":"A tour"}]}}`, q)
	})
}

// searxServer speaks SearXNG's format=json.
func searxServer(t *testing.T) *countingServer {
	return newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/searx/search" || r.URL.Query().Get("format") != "json" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"query":%q,"number_of_results":0,"results":[{"url":"https://example.org/a","title":"A","content":"first","engine":"ddg","engines":["ddg"],"score":1.0,"category":"general"},`+
			`{"url":"https://example.org/b","title":"B","content":"second","engine":"ddg"}],"answers":[],"corrections":[],"infoboxes":[],"suggestions":[],"unresponsive_engines":[]}`, r.URL.Query().Get("q"))
	})
}

type secrets struct{ name, origin string }

func (s secrets) Handle(_ ctxT, name string) (toolSecret, error) { return handle(s), nil }

func TestWebSearch(t *testing.T) {
	brave := braveServer(t, "k123")
	searx := searxServer(t)
	mk := func(t *testing.T, be builtin.SearchBackend, o fixtureOpts) *fixture {
		o.allowPrivate, o.cfg.Search = true, be
		return newFixture(t, o)
	}
	t.Run("brave with configured key", func(t *testing.T) {
		be, err := builtin.NewBrave(builtin.BraveOptions{Endpoint: brave.URL, APIKey: "k123"})
		if err != nil {
			t.Fatal(err)
		}
		r := mk(t, be, fixtureOpts{}).call(t, "WebSearch", `{"query":"golang","count":5}`)
		wantOK(t, r)
		if want := "1. Go\n   https://go.dev/\n   The Go language\n2. Tour\n   https://go.dev/tour\n   A tour"; r.Content != want {
			t.Fatalf("WebSearch = %q, want %q", r.Content, want)
		}
	})
	t.Run("brave with brokered secret", func(t *testing.T) {
		be, err := builtin.NewBrave(builtin.BraveOptions{Endpoint: brave.URL, SecretName: "brave_key"})
		if err != nil {
			t.Fatal(err)
		}
		origin := brave.URL
		f := mk(t, be, fixtureOpts{
			secrets: secrets{"brave_key", origin},
			// The broker's part: inject the key toward the purpose origin only.
			authorize: func(req *http.Request, u netguardURL) error {
				if u.Origin == origin {
					req.Header.Set("X-Subscription-Token", "k123")
				}
				return nil
			},
		})
		if got := f.m.Permissions.Secrets; len(got) != 1 || got[0].Name != "brave_key" || got[0].Header != "X-Subscription-Token" {
			t.Fatalf("manifest secrets = %+v, want the brave_key brokered header", got)
		}
		wantOK(t, f.call(t, "WebSearch", `{"query":"golang"}`))
	})
	t.Run("searxng", func(t *testing.T) {
		be, err := builtin.NewSearXNG(searx.URL + "/searx")
		if err != nil {
			t.Fatal(err)
		}
		r := mk(t, be, fixtureOpts{}).call(t, "WebSearch", `{"query":"x","count":1}`)
		wantOK(t, r)
		if want := "1. A\n   https://example.org/a\n   first"; r.Content != want {
			t.Fatalf("WebSearch = %q, want %q", r.Content, want)
		}
	})
	t.Run("backend error", func(t *testing.T) {
		be, _ := builtin.NewBrave(builtin.BraveOptions{Endpoint: brave.URL, APIKey: "wrong"})
		wantReason(t, mk(t, be, fixtureOpts{}).call(t, "WebSearch", `{"query":"x"}`), capability.ReasonSearchBackendFailed)
	})
	t.Run("private address refused, nothing sent", func(t *testing.T) {
		be, _ := builtin.NewSearXNG(searx.URL + "/searx")
		before := searx.hits.Load()
		f2 := newFixture(t, fixtureOpts{cfg: builtin.Config{Search: be}}) // no private addresses
		wantReason(t, f2.call(t, "WebSearch", `{"query":"x"}`), capability.ReasonNetworkPrivateAddress)
		if n := searx.hits.Load() - before; n != 0 {
			t.Fatalf("searx got %d requests, want 0", n)
		}
	})
}

func TestSearchBackendConfig(t *testing.T) {
	tests := []struct {
		name string
		mk   func() (builtin.SearchBackend, error)
	}{
		{"brave no key", func() (builtin.SearchBackend, error) { return builtin.NewBrave(builtin.BraveOptions{}) }},
		{"brave both", func() (builtin.SearchBackend, error) {
			return builtin.NewBrave(builtin.BraveOptions{APIKey: "a", SecretName: "b"})
		}},
		{"brave bad secret", func() (builtin.SearchBackend, error) {
			return builtin.NewBrave(builtin.BraveOptions{SecretName: "Bad-Name"})
		}},
		{"brave userinfo", func() (builtin.SearchBackend, error) {
			return builtin.NewBrave(builtin.BraveOptions{Endpoint: "https://u:p@api.example", APIKey: "a"})
		}},
		{"searx empty", func() (builtin.SearchBackend, error) { return builtin.NewSearXNG("") }},
		{"searx query", func() (builtin.SearchBackend, error) { return builtin.NewSearXNG("https://s.example/?x=1") }},
		{"searx scheme", func() (builtin.SearchBackend, error) { return builtin.NewSearXNG("ftp://s.example") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.mk(); err == nil {
				t.Fatalf("%s: no error, want a configuration error at session start", tt.name)
			}
		})
	}
	// A bad Network rule fails Build, not the first call.
	if _, _, err := builtin.Builtins(builtin.Config{Network: []manifest.NetRule{{Origin: "https://*.example", Methods: []string{"GET"}, Paths: []string{"/"}}}}); err == nil {
		t.Fatal("Builtins accepted a wildcard origin")
	}
}
