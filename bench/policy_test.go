// Package bench compares Norma's policy engine with cedar-go on the same
// decisions. It is a separate module so that the product never depends on
// cedar-go; run ./compare.sh (or the go test command in it) from this
// directory.
//
// The Cedar encoding of a Norma layer set (see cedarLayer):
//
//   - Every layer (manifest, grant, workspace, run) is its own cedar.PolicySet
//     and a request is allowed only when cedar.Authorize answers Allow for
//     every set, evaluated in order and stopping at the first Deny, which is
//     Norma's "every layer must allow" rule. Cedar cannot express an AND of
//     layers inside one set (any permit plus no forbid allows), so the layers
//     are separate sets. The sandbox layer (Host{Sandbox: true}) admits both
//     request kinds and is not encoded.
//   - A network rule is one permit policy: principal == the plugin and
//     when { (action == Action::"GET" || ...) && resource.origin == ... &&
//     (path1 || path2 ...) }. The methods are an || of equalities rather than
//     `action in [Action::"GET", ...]` in the scope: the same meaning (actions
//     have no parents here) but cedar-go builds a set for every `in`
//     evaluation, which measured about 15-20% slower (and 16 MB/op at 10k rules),
//     so the faster spelling is the fairer baseline. A template without {params} is ==; a template
//     with params is `like` with * for each {param}, plus a guard that the
//     path has exactly as many "/" as the template, which is exactly "no
//     {param} binds a /". Empty segments and a percent-encoded "/" inside a
//     segment are not excluded (Norma's paramSegment refuses them).
//   - A filesystem glob is one permit (read or write action) or one forbid
//     (both actions) with an exact `like`/== translation of its doublestar
//     shape, except "**/.env*" which is encoded as "the path or a segment
//     starts with .env" (a superset: it also matches x/.envdir/file), since
//     Cedar has no way to say "the last segment".
//   - Modes are not modelled (Cedar has only permit/forbid); no rule of the
//     benchmark needs approval.
//   - Requests are built once, outside the timed loop, like Norma's already
//     normalized capability.Request: the resource is an entity (Url::"..." with
//     origin and path, File::"..." with path) in an EntityMap.
//
// Every approximation makes the Cedar side do less work than an exact
// encoding would, so the ratios are lower bounds.
package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cedar-policy/cedar-go"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/netguard/weburl"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
)

const benchDir = "../policy/testdata/bench/"

// ---------------------------------------------------------------- Norma side

type benchInputs struct {
	in       policy.Inputs
	pluginID string
	layers   []manifest.Permissions // manifest, grant, workspace, run
}

// typicalInputs is exactly the setup of policy.BenchmarkDecideTypical.
func typicalInputs(tb testing.TB) benchInputs {
	tb.Helper()
	m, err := manifest.ParseFile(benchDir + "manifest.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	layer := func(name string) *manifest.Layer {
		l, err := manifest.ParseLayerFile(benchDir + name + ".yaml")
		if err != nil {
			tb.Fatal(err)
		}
		return l
	}
	g, w, r := layer("grant"), layer("workspace"), layer("run")
	return benchInputs{
		in:       policy.Inputs{Manifest: m, Grant: g, Workspace: w, Run: r, Host: policy.Host{Sandbox: true}},
		pluginID: m.ID,
		layers:   []manifest.Permissions{m.Permissions, g.Permissions, w.Permissions, r.Permissions},
	}
}

// bigInputs is exactly the setup of policy.BenchmarkDecide10kRules: 10,000
// network rules over 1,000 origins in every layer.
func bigInputs() benchInputs {
	var rules []manifest.NetRule
	for o := range 1000 {
		origin := fmt.Sprintf("https://svc%d.example.invalid:443", o)
		for r := range 10 {
			rules = append(rules, manifest.NetRule{Origin: origin, Methods: []string{"GET", "POST"},
				Paths: []string{fmt.Sprintf("/v%d/items/{id}", r), fmt.Sprintf("/v%d/items/{id}/parts/{part}", r)}, Approval: "never"})
		}
	}
	perm := manifest.Permissions{Network: &manifest.Network{Requests: rules}}
	m := &manifest.Manifest{SchemaVersion: 2, ID: "org.acme.big", Version: "1.0.0", Entrypoint: "x",
		Tools: []manifest.Tool{{Name: "t", Effects: &manifest.Effects{Data: "read", ExternalState: "none"}, Approval: "never"}}, Permissions: perm}
	layer := func(kind string) *manifest.Layer {
		return &manifest.Layer{SchemaVersion: 2, Kind: kind, Permissions: perm}
	}
	return benchInputs{
		in:       policy.Inputs{Manifest: m, Grant: layer("grant"), Workspace: layer("workspace"), Run: layer("run"), Host: policy.Host{Sandbox: true}},
		pluginID: m.ID,
		layers:   []manifest.Permissions{perm, perm, perm, perm},
	}
}

func compile(tb testing.TB, bi benchInputs) *policy.Set {
	tb.Helper()
	s, err := policy.Compile(bi.in)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// ---------------------------------------------------------------- Cedar side

// cedarSet is the Cedar encoding of a Norma layer set: one PolicySet per
// layer, all of which must allow.
type cedarSet struct {
	layers   []*cedar.PolicySet
	policies int
}

func (c *cedarSet) authorize(ents cedar.EntityMap, req cedar.Request) cedar.Decision {
	for _, ps := range c.layers {
		if d, _ := cedar.Authorize(ps, ents, req); d != cedar.Allow {
			return cedar.Deny
		}
	}
	return cedar.Allow
}

func buildCedar(tb testing.TB, bi benchInputs) *cedarSet {
	tb.Helper()
	c := &cedarSet{}
	for i, perm := range bi.layers {
		src, n := cedarLayer(tb, bi.pluginID, perm)
		ps, err := cedar.NewPolicySetFromBytes(fmt.Sprintf("layer%d.cedar", i), []byte(src))
		if err != nil {
			tb.Fatalf("layer %d: %v", i, err)
		}
		c.layers = append(c.layers, ps)
		c.policies += n
	}
	return c
}

// cedarLayer writes the policies of one layer and returns how many there are.
func cedarLayer(tb testing.TB, plugin string, perm manifest.Permissions) (string, int) {
	var sb strings.Builder
	n := 0
	principal := fmt.Sprintf("principal == Plugin::%q", plugin)
	if perm.Network != nil {
		for _, r := range perm.Network.Requests {
			origin, err := weburl.NormalizeOrigin(r.Origin)
			if err != nil {
				tb.Fatal(err)
			}
			acts := make([]string, len(r.Methods))
			for i, m := range r.Methods {
				acts[i] = fmt.Sprintf("Action::%q", m)
			}
			paths := make([]string, len(r.Paths))
			for i, p := range r.Paths {
				paths[i] = "(" + cedarTemplate(p) + ")"
			}
			eqs := make([]string, len(acts))
			for i, a := range acts {
				eqs[i] = "action == " + a
			}
			fmt.Fprintf(&sb, "permit (%s, action, resource)\nwhen { (%s) && resource.origin == %q && (%s) };\n",
				principal, strings.Join(eqs, " || "), origin, strings.Join(paths, " || "))
			n++
		}
	}
	if fs := perm.Filesystem; fs != nil {
		for _, g := range fs.Read {
			fmt.Fprintf(&sb, "permit (%s, action == Action::\"fs.read\", resource)\nwhen { %s };\n", principal, cedarGlob(tb, g))
			n++
		}
		for _, g := range fs.Write {
			fmt.Fprintf(&sb, "permit (%s, action == Action::\"fs.write\", resource)\nwhen { %s };\n", principal, cedarGlob(tb, g))
			n++
		}
		for _, g := range fs.Deny {
			fmt.Fprintf(&sb, "forbid (%s, action in [Action::\"fs.read\", Action::\"fs.write\"], resource)\nwhen { %s };\n", principal, cedarGlob(tb, g))
			n++
		}
	}
	return sb.String(), n
}

// likeEsc escapes a literal for a Cedar `like` pattern ('*' is the only
// wildcard) inside a Cedar string literal.
func likeEsc(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "*", `\*`)
}

// cedarTemplate translates a path template: == without params, otherwise
// like with * per {param} and "exactly as many slashes as the template".
func cedarTemplate(t string) string {
	if !strings.Contains(t, "{") {
		return fmt.Sprintf("resource.path == %q", t)
	}
	segs := strings.Split(t, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			segs[i] = "*"
		} else {
			segs[i] = likeEsc(s)
		}
	}
	slashes := strings.Count(t, "/")
	more := strings.Repeat("*/", slashes+1) + "*"
	return fmt.Sprintf(`resource.path like "%s" && !(resource.path like "%s")`, strings.Join(segs, "/"), more)
}

// cedarGlob translates the doublestar shapes used by the benchmark layers.
func cedarGlob(tb testing.TB, g string) string {
	g = strings.TrimPrefix(g, "workspace://")
	const p = "resource.path"
	hasMeta := func(s string) bool { return strings.ContainsAny(s, `*?[{\`) }
	switch {
	case !hasMeta(g): // literal
		return fmt.Sprintf("%s == %q", p, g)
	case strings.HasPrefix(g, "**/") && strings.HasSuffix(g, "/**") && !hasMeta(g[3:len(g)-3]) && !strings.Contains(g[3:len(g)-3], "/"):
		// **/LIT/**: some segment equals LIT (exact).
		l := likeEsc(g[3 : len(g)-3])
		return fmt.Sprintf(`%[1]s == "%[2]s" || %[1]s like "%[2]s/*" || %[1]s like "*/%[2]s/*" || %[1]s like "*/%[2]s"`, p, l)
	case strings.HasSuffix(g, "/**") && !hasMeta(g[:len(g)-3]):
		// DIR/**: DIR and everything below (exact).
		d := g[:len(g)-3]
		return fmt.Sprintf(`%[1]s == %[2]q || %[1]s like "%[3]s/*"`, p, d, likeEsc(d))
	case strings.HasPrefix(g, "**/*") && !hasMeta(g[4:]) && !strings.Contains(g[4:], "/"):
		// **/*SUFFIX: the path ends with SUFFIX (exact: SUFFIX has no "/").
		return fmt.Sprintf(`%s like "*%s"`, p, likeEsc(g[4:]))
	case strings.HasPrefix(g, "**/") && strings.HasSuffix(g, "*") && !hasMeta(g[3:len(g)-1]) && !strings.Contains(g[3:], "/"):
		// **/PREFIX*: the last segment starts with PREFIX. Approximated by
		// "the path or some segment starts with PREFIX" (a superset).
		l := likeEsc(g[3 : len(g)-1])
		return fmt.Sprintf(`%[1]s like "%[2]s*" || %[1]s like "*/%[2]s*"`, p, l)
	case strings.Count(g, "*") == 1 && strings.Contains(g, "/*") && !strings.ContainsAny(g, `?[{\`) && !strings.Contains(g[strings.Index(g, "*"):], "/"):
		// DIR/PREFIX*SUFFIX: one segment below DIR (exact).
		return fmt.Sprintf(`%[1]s like "%[2]s" && !(%[1]s like "%[3]s/*")`, p, g, likeEsc(g[:strings.LastIndexByte(g, '/')]))
	}
	tb.Fatalf("no Cedar translation for glob %q", g)
	return ""
}

// ---------------------------------------------------------------- requests

type decision struct {
	name  string
	req   capability.Request
	allow bool
}

var typicalDecisions = []decision{
	{"net", capability.Request{Kind: capability.NetRequest, Method: "POST", Origin: "https://api.example.invalid:443", Path: "/repos/acme/issues/42/comments"}, true},
	{"fs", capability.Request{Kind: capability.FSWrite, Path: ".agent-output/reports/2026/summary.md"}, true},
	// Denied requests, checked on both sides before timing.
	{"net-extra-segment", capability.Request{Kind: capability.NetRequest, Method: "POST", Origin: "https://api.example.invalid:443", Path: "/repos/acme/x/issues/42/comments"}, false},
	{"net-method", capability.Request{Kind: capability.NetRequest, Method: "DELETE", Origin: "https://api.example.invalid:443", Path: "/repos/acme/issues/42"}, false},
	{"net-origin", capability.Request{Kind: capability.NetRequest, Method: "GET", Origin: "https://api.example.invalid:8443", Path: "/repos/acme/issues"}, false},
	{"fs-deny-env", capability.Request{Kind: capability.FSWrite, Path: ".agent-output/.env.local"}, false},
	{"fs-deny-git", capability.Request{Kind: capability.FSWrite, Path: "build/.git/config"}, false},
	{"fs-read-not-write", capability.Request{Kind: capability.FSWrite, Path: "docs/index.md"}, false},
	{"fs-tmp-depth", capability.Request{Kind: capability.FSWrite, Path: "tmp/a/b.json"}, false},
	{"fs-read", capability.Request{Kind: capability.FSRead, Path: "src/a/b.txt"}, true},
	{"fs-read-pem", capability.Request{Kind: capability.FSRead, Path: "src/key.pem"}, false},
}

var bigDecisions = []decision{
	{"net", capability.Request{Kind: capability.NetRequest, Method: "POST", Origin: "https://svc777.example.invalid:443", Path: "/v7/items/42/parts/9"}, true},
	{"net-deep", capability.Request{Kind: capability.NetRequest, Method: "POST", Origin: "https://svc777.example.invalid:443", Path: "/v7/items/42/parts/9/x"}, false},
	{"net-method", capability.Request{Kind: capability.NetRequest, Method: "PUT", Origin: "https://svc777.example.invalid:443", Path: "/v7/items/42"}, false},
}

// cedarRequest builds the Cedar request and entity store for a Norma request.
func cedarRequest(tb testing.TB, plugin string, r capability.Request) (cedar.Request, cedar.EntityMap) {
	tb.Helper()
	var act string
	var res cedar.EntityUID
	attrs := cedar.RecordMap{"path": cedar.String(r.Path)}
	switch r.Kind {
	case capability.NetRequest:
		act = r.Method
		res = cedar.NewEntityUID("Url", cedar.String(r.Origin+r.Path))
		attrs["origin"] = cedar.String(r.Origin)
	case capability.FSWrite:
		act, res = "fs.write", cedar.NewEntityUID("File", cedar.String(r.Path))
	case capability.FSRead:
		act, res = "fs.read", cedar.NewEntityUID("File", cedar.String(r.Path))
	default:
		tb.Fatalf("kind %v not encoded", r.Kind)
	}
	ents := cedar.EntityMap{res: cedar.Entity{UID: res, Attributes: cedar.NewRecord(attrs)}}
	return cedar.Request{
		Principal: cedar.NewEntityUID("Plugin", cedar.String(plugin)),
		Action:    cedar.NewEntityUID("Action", cedar.String(act)),
		Resource:  res,
		Context:   cedar.NewRecord(nil),
	}, ents
}

// checkAgreement fails unless Norma and Cedar give the expected answer for
// every decision.
func checkAgreement(tb testing.TB, s *policy.Set, c *cedarSet, plugin string, ds []decision) {
	tb.Helper()
	for _, d := range ds {
		if got := s.Decide(context.Background(), d.req).Mode == capability.Allow; got != d.allow {
			tb.Fatalf("norma %s: allow=%v, want %v", d.name, got, d.allow)
		}
		req, ents := cedarRequest(tb, plugin, d.req)
		if got := c.authorize(ents, req) == cedar.Allow; got != d.allow {
			tb.Fatalf("cedar %s: allow=%v, want %v", d.name, got, d.allow)
		}
	}
}

// ---------------------------------------------------------------- fixtures

type fixture struct {
	bi    benchInputs
	norma *policy.Set
	cedar *cedarSet
}

var (
	typicalOnce, bigOnce sync.Once
	typicalFix, bigFix   fixture
)

func typical(tb testing.TB) *fixture {
	typicalOnce.Do(func() {
		bi := typicalInputs(tb)
		typicalFix = fixture{bi, compile(tb, bi), buildCedar(tb, bi)}
	})
	if typicalFix.norma == nil {
		tb.Fatal("typical fixture failed")
	}
	checkAgreement(tb, typicalFix.norma, typicalFix.cedar, typicalFix.bi.pluginID, typicalDecisions)
	return &typicalFix
}

func big(tb testing.TB) *fixture {
	bigOnce.Do(func() {
		bi := bigInputs()
		bigFix = fixture{bi, compile(tb, bi), buildCedar(tb, bi)}
	})
	if bigFix.norma == nil {
		tb.Fatal("10k fixture failed")
	}
	checkAgreement(tb, bigFix.norma, bigFix.cedar, bigFix.bi.pluginID, bigDecisions)
	return &bigFix
}

// TestAgreement checks the Cedar encoding against Norma on allowed and
// denied requests (no timing).
func TestAgreement(t *testing.T) {
	f := typical(t)
	if f.cedar.policies != 88 {
		t.Errorf("typical: %d Cedar policies, want 88 (4 layers x 22)", f.cedar.policies)
	}
	if testing.Short() {
		return
	}
	f = big(t)
	if f.cedar.policies != 40000 {
		t.Errorf("10k: %d Cedar policies, want 40000", f.cedar.policies)
	}
}

// ---------------------------------------------------------------- benchmarks

func BenchmarkNormaTypical(b *testing.B) {
	f := typical(b)
	ctx := context.Background()
	for _, d := range typicalDecisions[:2] {
		b.Run(d.name, func(b *testing.B) {
			req := d.req
			b.ReportAllocs()
			for b.Loop() {
				if f.norma.Decide(ctx, req).Mode != capability.Allow {
					b.Fatal("denied")
				}
			}
		})
	}
}

func BenchmarkCedarTypical(b *testing.B) {
	f := typical(b)
	for _, d := range typicalDecisions[:2] {
		b.Run(d.name, func(b *testing.B) {
			req, ents := cedarRequest(b, f.bi.pluginID, d.req)
			b.ReportAllocs()
			for b.Loop() {
				if f.cedar.authorize(ents, req) != cedar.Allow {
					b.Fatal("denied")
				}
			}
		})
	}
}

func BenchmarkNorma10kRules(b *testing.B) {
	f := big(b)
	ctx := context.Background()
	req := bigDecisions[0].req
	b.ReportAllocs()
	for b.Loop() {
		if f.norma.Decide(ctx, req).Mode != capability.Allow {
			b.Fatal("denied")
		}
	}
}

func BenchmarkCedar10kRules(b *testing.B) {
	f := big(b)
	req, ents := cedarRequest(b, f.bi.pluginID, bigDecisions[0].req)
	b.ReportAllocs()
	for b.Loop() {
		if f.cedar.authorize(ents, req) != cedar.Allow {
			b.Fatal("denied")
		}
	}
}
