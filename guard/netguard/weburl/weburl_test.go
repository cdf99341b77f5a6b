package weburl

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
)

// fixture is one line of a testdata table: an input and the expected output,
// or want == "error" for a refusal.
type fixture struct {
	name, in, want string
}

// readFixtures reads "input<TAB>want" lines; '#' starts a comment line. The
// last tab separates the expectation, so an input may itself contain a tab.
func readFixtures(tb testing.TB, name string) []fixture {
	tb.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []fixture
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		i := strings.LastIndexByte(s, '\t')
		if i < 0 {
			tb.Fatalf("%s:%d: missing tab", name, line)
		}
		out = append(out, fixture{name: name + ":" + itoa(line), in: s[:i], want: s[i+1:]})
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func TestNormalizeOrigin(t *testing.T) {
	for _, tt := range readFixtures(t, "origins.txt") {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeOrigin(tt.in)
			if tt.want == "error" {
				if err == nil {
					t.Fatalf("NormalizeOrigin(%q) = %q, want error", tt.in, got)
				}
				if r := capability.ReasonOf(err); r != capability.ReasonNetworkInvalidURL {
					t.Fatalf("NormalizeOrigin(%q) reason = %q, want %s", tt.in, r, capability.ReasonNetworkInvalidURL)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("NormalizeOrigin(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
			}
			// Idempotence.
			if again, err := NormalizeOrigin(got); err != nil || again != got {
				t.Fatalf("NormalizeOrigin(%q) = %q, %v, want it unchanged", got, again, err)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	for _, tt := range readFixtures(t, "urls.txt") {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.in)
			if tt.want == "error" {
				if err == nil {
					t.Fatalf("Normalize(%q) = %q, want error", tt.in, got)
				}
				if r := capability.ReasonOf(err); r != capability.ReasonNetworkInvalidURL {
					t.Fatalf("Normalize(%q) reason = %q, want %s", tt.in, r, capability.ReasonNetworkInvalidURL)
				}
				if got != (URL{}) {
					t.Fatalf("Normalize(%q) returned %+v with an error, want zero URL", tt.in, got)
				}
				return
			}
			if err != nil || got.String() != tt.want {
				t.Fatalf("Normalize(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
			}
			if again, err := Normalize(got.String()); err != nil || again != got {
				t.Fatalf("Normalize(%q) = %+v, %v, want %+v", got.String(), again, err, got)
			}
		})
	}
}

func TestNormalizeFields(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want URL
	}{
		{"https default port", "https://API.Example.invalid./repos/a?x=1",
			URL{Scheme: "https", Host: "api.example.invalid", Port: 443, Origin: "https://api.example.invalid:443", Path: "/repos/a", RawQuery: "x=1"}},
		{"ipv6 host is bare, origin bracketed", "http://[::1]:8080/",
			URL{Scheme: "http", Host: "::1", Port: 8080, Origin: "http://[::1]:8080", Path: "/"}},
		{"hex ipv4", "http://0x7f.1",
			URL{Scheme: "http", Host: "127.0.0.1", Port: 80, Origin: "http://127.0.0.1:80", Path: "/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.in)
			if err != nil || got != tt.want {
				t.Fatalf("Normalize(%q) = %+v, %v, want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestErrorRedactsUserinfo checks that a refused URL with credentials does
// not carry them into the error (which is audited and shown to the model).
func TestErrorRedactsUserinfo(t *testing.T) {
	_, err := Normalize("https://alice:s3cr3t@api.example.invalid/x")
	if err == nil {
		t.Fatal("Normalize accepted userinfo")
	}
	e, _ := err.(*capability.Error)
	if e == nil {
		t.Fatalf("error %T is not *capability.Error", err)
	}
	if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(e.Decision.Request, "s3cr3t") || strings.Contains(e.Decision.Request, "alice") {
		t.Fatalf("error leaks credentials: %v / %q", err, e.Decision.Request)
	}
}

func TestNormalizeHost(t *testing.T) {
	tests := []struct {
		name, in, want string // want "" means refused
	}{
		{"case and trailing dot", "API.Example.invalid.", "api.example.invalid"},
		{"IDNA", "bücher.example", "xn--bcher-kva.example"},
		{"inet_aton hex", "0x7f.1", "127.0.0.1"},
		{"single number", "2130706433", "127.0.0.1"},
		{"bad IPv4", "1.2.3.256", ""},
		{"IPv6 literal is not a host name", "::1", ""},
		{"bracketed IPv6", "[::1]", ""},
		{"wildcard", "*.example", ""},
		{"percent-encoding", "a%2eexample", ""},
		{"empty", "", ""},
		{"only a dot", ".", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeHost(tt.in)
			if tt.want == "" {
				if err == nil || capability.ReasonOf(err) != capability.ReasonNetworkInvalidURL {
					t.Fatalf("NormalizeHost(%q) = %q, %v, want NETWORK_INVALID_URL", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("NormalizeHost(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
			}
			// The same host inside a URL gets the same canonical form.
			if u, err := Normalize("https://" + tt.in + "/"); err != nil || u.Host != got {
				t.Fatalf("Normalize(https://%s/).Host = %q, %v, want %q", tt.in, u.Host, err, got)
			}
		})
	}
}

func TestRequestURI(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://a.example", "/"},
		{"https://a.example/x/%2e%2e/y?", "/y"},
		{"https://a.example/b%2fc?q=1&r", "/b%2Fc?q=1&r"},
		{"https://a.example//x", "//x"},
	}
	for _, tt := range tests {
		u, err := Normalize(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := u.RequestURI(); got != tt.want {
			t.Errorf("Normalize(%q).RequestURI() = %q, want %q", tt.in, got, tt.want)
		}
	}
}
