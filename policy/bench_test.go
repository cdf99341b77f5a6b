package policy

import (
	"context"
	"fmt"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/netguard/weburl"
	"github.com/norma-run/norma/manifest"
)

func benchSet(b *testing.B) *Set {
	b.Helper()
	s, err := Compile(Inputs{
		Manifest:  mustManifest(b, "testdata/bench/manifest.yaml"),
		Grant:     mustLayer(b, "testdata/bench/grant.yaml"),
		Workspace: mustLayer(b, "testdata/bench/workspace.yaml"),
		Run:       mustLayer(b, "testdata/bench/run.yaml"),
		Host:      Host{Sandbox: true},
	})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkDecideTypical: the issue-helper manifest and 3 more layers, each
// with 10 network rules, 5 read, 3 write and 4 deny globs; normalized request.
func BenchmarkDecideTypical(b *testing.B) {
	s := benchSet(b)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  capability.Request
	}{
		{"net", capability.Request{Kind: capability.NetRequest, Method: "POST", Origin: "https://api.example.invalid:443", Path: "/repos/acme/issues/42/comments"}},
		{"fs", capability.Request{Kind: capability.FSWrite, Path: ".agent-output/reports/2026/summary.md"}},
	} {
		if d := s.Decide(ctx, tc.req); d.Mode != capability.Allow {
			b.Fatalf("%s: %+v", tc.name, d)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if s.Decide(ctx, tc.req).Mode != capability.Allow {
					b.Fatal("denied")
				}
			}
		})
	}
}

// BenchmarkDecide10kRules: 10,000 network rules over 1,000 origins in every
// layer; the cost must not depend on the rule count.
func BenchmarkDecide10kRules(b *testing.B) {
	// Built as values: a 10,000-rule file is over the parser's size limit,
	// and parsing is not what this measures.
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
	s, err := Compile(Inputs{Manifest: m, Grant: layer("grant"), Workspace: layer("workspace"), Run: layer("run"), Host: Host{Sandbox: true}})
	if err != nil {
		b.Fatal(err)
	}
	req := capability.Request{Kind: capability.NetRequest, Method: "POST", Origin: "https://svc777.example.invalid:443", Path: "/v7/items/42/parts/9"}
	ctx := context.Background()
	if d := s.Decide(ctx, req); d.Mode != capability.Allow {
		b.Fatalf("%+v", d)
	}
	b.ReportAllocs()
	for b.Loop() {
		if s.Decide(ctx, req).Mode != capability.Allow {
			b.Fatal("denied")
		}
	}
}

// BenchmarkNormalizeAndDecide: a raw URL string in, a decision out.
func BenchmarkNormalizeAndDecide(b *testing.B) {
	s := benchSet(b)
	ctx := context.Background()
	raw := "https://API.example.invalid/repos/acme/issues/42/comments?per_page=10"
	b.ReportAllocs()
	for b.Loop() {
		u, err := weburl.Normalize(raw)
		if err != nil {
			b.Fatal(err)
		}
		d := s.Decide(ctx, capability.Request{Kind: capability.NetRequest, Method: "POST", Origin: u.Origin, Path: u.Path})
		if d.Mode != capability.Allow {
			b.Fatal("denied")
		}
	}
}
