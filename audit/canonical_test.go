package audit

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
)

// reference is the slow, obviously right encoding: encoding/json, then
// the RFC 8785 reference transformation.
func reference(t testing.TB, e Event) string {
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	c, err := jcs.Transform(raw)
	if err != nil {
		t.Fatal(err)
	}
	return string(c)
}

var canonicalSeeds = []Event{
	{Type: TypeCapabilityDecision},                                 // minimal
	{Type: TypeToolCallFinished, DurationMS: 1234, IsError: true},  // numbers and bools
	{Type: TypeCapabilityDecision, PolicyGeneration: 1<<53 - 1},    // largest exact integer
	{Type: "x", Rule: "quote\" back\\ nl\n tab\t ctl\x01 del\x7f"}, // escapes
	{Type: "x", Reason: "<html>&amp; \u2028 \u2029 é 😀"},           // no HTML escaping, raw non-ASCII
	{Type: "x", Tool: "bad utf8 \xff\xfe"},                         // replaced by U+FFFD
	{Type: "x", Detail: map[string]string{"b": "1", "a": "2", "\U0001F600": "astral", "\uFFFD": "bmp", "A": "up", "": "empty"}},
	{Type: "x", Time: time.Date(2030, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600))}, // non-UTC input
	{Type: "x", RunID: "r", Principal: "p", Plugin: "pl", PluginVersion: "1", CapabilityKind: "k", Decision: "d",
		Layer: "l", ManifestDigest: "m", ApprovalID: "a", TargetHash: "t", OutputDigest: "o"}, // every field
}

func TestCanonicalMatchesJCS(t *testing.T) {
	for i, e := range canonicalSeeds {
		got, _ := e.Canonical()
		if want := reference(t, e); string(got) != want {
			t.Errorf("seed %d: Canonical() =\n%s\nwant\n%s", i, got, want)
		}
	}
}

func FuzzCanonical(f *testing.F) {
	for _, e := range canonicalSeeds {
		var k, v string
		for k, v = range e.Detail {
			break
		}
		f.Add(e.Type, e.Rule+e.Reason+e.Tool, k, v, e.DurationMS, e.PolicyGeneration&(1<<53-1), e.IsError)
	}
	f.Fuzz(func(t *testing.T, typ, s, k, v string, d int64, gen uint64, isErr bool) {
		if d > 1<<53 || d < -(1<<53) || gen > 1<<53 {
			t.Skip("outside the I-JSON integer range")
		}
		e := Event{Type: typ, Rule: s, Tool: s, DurationMS: d, PolicyGeneration: gen, IsError: isErr,
			Detail: map[string]string{k: v, s: k}}
		got, _ := e.Canonical()
		e.Detail = validKeys(e.Detail) // the reference would emit duplicate keys
		if want := reference(t, e); string(got) != want {
			t.Fatalf("Canonical() =\n%q\nwant\n%q", got, want)
		}
		var back Event
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("decode canonical: %v", err)
		}
		again, _ := back.Canonical()
		if string(again) != string(got) {
			t.Fatalf("not stable through decode: %q vs %q", again, got)
		}
	})
}
