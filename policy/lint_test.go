package policy

import (
	"strings"
	"testing"

	"github.com/norma-run/norma/manifest"
)

// TestLint: a read glob under a deny glob, a read glob outside the grant,
// and an origin the grant does not list are reported; the rules that can
// match are not.
func TestLint(t *testing.T) {
	m, err := manifest.Parse("m.yaml", []byte(`schema_version: 2
id: org.acme.lint
version: 1.0.0
entrypoint: x
tools: [{name: t, risk: read}]
permissions:
  filesystem:
    read: ["workspace://docs/**", "workspace://secrets/keys/**", "workspace://src/**"]
    deny: ["workspace://secrets/**"]
  network:
    requests:
      - {origin: "https://a.example", methods: [GET], paths: ["/x"]}
      - {origin: "https://b.example", methods: [GET], paths: ["/x"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	grant, err := manifest.ParseLayer("g.yaml", []byte(`schema_version: 2
kind: grant
permissions:
  filesystem:
    read: ["workspace://docs/**", "workspace://secrets/**"]
  network:
    requests:
      - {origin: "https://a.example", methods: [GET], paths: ["/x"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range Lint(Inputs{Manifest: m, Grant: grant}) {
		got = append(got, w.String())
	}
	text := strings.Join(got, "\n")
	for _, want := range []string{
		"workspace://secrets/keys/** is shadowed by plugin:permissions.filesystem.deny[0]",
		"workspace://src/** is outside every grant read glob",
		"origin https://b.example:443 is not in the grant layer",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("Lint lacks %q; got:\n%s", want, text)
		}
	}
	if strings.Contains(text, "docs/**") || strings.Contains(text, "a.example") {
		t.Errorf("Lint reports a rule that can match:\n%s", text)
	}
}
