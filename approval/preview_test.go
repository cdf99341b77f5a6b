package approval_test

import (
	"strings"
	"testing"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
)

func TestBoundPreview(t *testing.T) {
	short := "echo hi\nrm -rf docs\n"
	if got := approval.BoundPreview(short); got != short {
		t.Errorf("a short preview changed: %q", got)
	}
	var many strings.Builder
	for range approval.MaxPreviewLines + 25 {
		many.WriteString("+line\n")
	}
	got := approval.BoundPreview(many.String())
	if n := strings.Count(got, "+line\n"); n != approval.MaxPreviewLines {
		t.Errorf("kept %d lines, want %d", n, approval.MaxPreviewLines)
	}
	if !strings.HasSuffix(got, "… 25 more lines (150 bytes) not shown") {
		t.Errorf("no explicit marker: %q", got[len(got)-60:])
	}
	long := strings.Repeat("é", approval.MaxPreview) // one line, twice the bound
	got = approval.BoundPreview(long)
	if len(got) > approval.MaxPreview || !strings.Contains(got, "…\n… 1 more lines (") {
		t.Errorf("a long line: %d bytes, ends %q", len(got), got[len(got)-60:])
	}
	if !strings.HasPrefix(got, "éé") || strings.ContainsRune(got[:len(got)-60], '\uFFFD') {
		t.Error("the cut split a rune")
	}
}

// TestAuthorizeBindsPreview: a granted approval is for what its preview
// showed. The same action (same hash) with another preview — the file an
// Edit changes was changed since — is asked again, not served the old
// grant; the audit events name the preview's digest, and the request event
// carries the preview.
func TestAuthorizeBindsPreview(t *testing.T) {
	for name, b := range backends(t) {
		t.Run(name, func(t *testing.T) {
			c := newClock()
			asked := 0
			s, sink := newService(t, b, approverFunc(func(approval.Record) bool {
				asked++
				return true
			}), c)
			ctx := t.Context()
			req := request(t, "run-1", `{"path":"a.md"}`, approval.ScopeRun)
			req.Preview = "--- a/a.md\n+++ b/a.md\n@@ -1 +1 @@\n-one\n+two\n"
			t1, err := s.Authorize(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			t2, err := s.Authorize(ctx, req)
			if err != nil || t2.ApprovalID != t1.ApprovalID || asked != 1 {
				t.Fatalf("same preview: %+v, %v, asked %d; want the run-scoped grant reused", t2, err, asked)
			}
			req.Preview = "--- a/a.md\n+++ b/a.md\n@@ -1 +1 @@\n-ONE\n+two\n"
			t3, err := s.Authorize(ctx, req)
			if err != nil || t3.ApprovalID == t1.ApprovalID || asked != 2 {
				t.Fatalf("another preview: %+v, %v, asked %d; want a new approval", t3, err, asked)
			}
			all, _ := sink.Query(ctx, audit.Filter{})
			seen := 0
			for _, r := range all {
				if r.Event.ApprovalID != t3.ApprovalID {
					continue
				}
				seen++
				if r.Event.Detail["previewDigest"] != approval.PreviewDigest(req.Preview) {
					t.Errorf("%s: previewDigest = %q", r.Event.Type, r.Event.Detail["previewDigest"])
				}
				if r.Event.Type == audit.TypeApprovalRequested && r.Event.Detail["preview"] != req.Preview {
					t.Errorf("requested event preview = %q", r.Event.Detail["preview"])
				}
			}
			if seen == 0 {
				t.Error("no audit event for the second approval")
			}
		})
	}
}

// FuzzBoundPreview: a bounded preview is within both bounds, keeps the
// start of the text, and says when something was left out.
func FuzzBoundPreview(f *testing.F) {
	f.Add("echo hi\n", 1, 0)
	f.Add("+x\n", 300, 0)
	f.Add("é", 0, 40000)
	f.Fuzz(func(t *testing.T, line string, lines, pad int) {
		if lines < 0 || lines > 1000 || pad < 0 || pad > 100000 {
			return
		}
		s := strings.Repeat(line, lines) + strings.Repeat("y", pad)
		got := approval.BoundPreview(s)
		if len(got) > approval.MaxPreview || strings.Count(got, "\n") > approval.MaxPreviewLines+1 {
			t.Fatalf("BoundPreview: %d bytes, %d lines", len(got), strings.Count(got, "\n"))
		}
		if got == s {
			return
		}
		head, _, ok := strings.Cut(got, "… ")
		if !ok || !strings.HasSuffix(got, " not shown") {
			t.Fatalf("a cut preview has no marker: %q", got[max(0, len(got)-80):])
		}
		head = strings.TrimSuffix(strings.TrimSuffix(head, "\n"), "…")
		if !strings.HasPrefix(s, head) {
			t.Fatal("the bounded preview is not the start of the text")
		}
	})
}
