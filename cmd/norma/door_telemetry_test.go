package main

import (
	"bytes"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/norma-run/norma/internal/telemetry"
)

// otlpReceiver is an OTLP/HTTP collector in the test: it keeps every
// byte it was sent (headers and bodies) and decodes each body as an
// ExportTraceServiceRequest with the generated OTLP types.
type otlpReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	raw   bytes.Buffer
	spans []*tracepb.Span
	bad   int
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		req.Header.Write(&r.raw)
		r.raw.WriteString(req.URL.String())
		r.raw.Write(body)
		var m coltracepb.ExportTraceServiceRequest
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &m) != nil {
			r.bad++
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		for _, rs := range m.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				r.spans = append(r.spans, ss.GetSpans()...)
			}
		}
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func spanAttrs(s *tracepb.Span) map[string]any {
	m := map[string]any{}
	for _, kv := range s.GetAttributes() {
		v := kv.GetValue()
		switch {
		case v.GetStringValue() != "":
			m[kv.GetKey()] = v.GetStringValue()
		case v.GetIntValue() != 0:
			m[kv.GetKey()] = v.GetIntValue()
		default:
			m[kv.GetKey()] = v.GetBoolValue()
		}
	}
	return m
}

// otelCanary is in what a traced run's tools are given and read. The
// run's own output may show it (the user asked for that file); no span
// may carry it.
const otelCanary = "CANARY-otel-7f3a"

// telemetryScript calls tools with the canary in their arguments and in
// what they read: a file whose content is the canary, a Bash command that
// prints it, a read of .env (denied), and a tool named after it.
const telemetryScript = `turns:
  - text: "working"
    tool_calls:
      - {id: t1, name: Read, input: {path: docs/canary.md}}
      - {id: t2, name: Bash, input: {command: "echo CANARY-otel-7f3a"}}
      - {id: t3, name: Read, input: {path: .env}}
      - {id: t4, name: "CANARY-otel-7f3a", input: {x: CANARY-otel-7f3a}}
  - text: "Done. CANARY-otel-7f3a"
`

// TestDoorTracesExported: `norma run` with an OTLP endpoint in its
// environment exports one span for the run and one per tool call, each
// call the run's child in the run's trace, with the decision, reason,
// tool and plugin the audit log has, and not one byte of the canary that
// is in its environment, its prompt, a tool's arguments, a file it read
// and a command's output.
func TestDoorTracesExported(t *testing.T) {
	r := newOTLPReceiver(t)
	e := newRunEnv(t)
	if err := os.WriteFile(filepath.Join(e.ws, "docs", "canary.md"), []byte("the secret is "+otelCanary+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(normaBin(t), "--home", e.home, "run", "--workspace", e.ws, "--script", e.script(t, telemetryScript),
		"--yes", "--json", "say "+otelCanary)
	cmd.Env = append(os.Environ(), telemetry.EnvEndpoint+"="+r.srv.URL, "ANTHROPIC_API_KEY=sk-"+runCanary,
		"OTEL_EXPORTER_OTLP_HEADERS=x-norma-test=1", "NORMA_TEST_OTEL_CANARY="+otelCanary)
	code, out, errs := doorCmd(t, cmd)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	lines := jsonLines(t, out)
	runID, _ := last(lines)["run_id"].(string)
	calls := toolCalls(lines)
	if runID == "" || len(calls) != 4 {
		t.Fatalf("run id %q, %d calls:\n%s", runID, len(calls), out)
	}
	// The file was read and the command ran with the canary: there was
	// something to leak.
	for _, id := range []string{"t1", "t2"} {
		if res, _ := calls[id]["result"].(string); !strings.Contains(res, otelCanary) {
			t.Fatalf("call %s did not see the canary: %v", id, calls[id])
		}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bad != 0 {
		t.Errorf("%d requests the collector could not decode", r.bad)
	}
	for _, c := range []string{otelCanary, runCanary} {
		if bytes.Contains(r.raw.Bytes(), []byte(c)) || bytes.Contains(r.raw.Bytes(), []byte(hex.EncodeToString([]byte(c)))) {
			t.Errorf("the canary %s reached the collector", c)
		}
	}
	if r.raw.Len() == 0 {
		t.Fatal("the collector received nothing")
	}
	var run *tracepb.Span
	byCall := map[string]*tracepb.Span{}
	for _, s := range r.spans {
		a := spanAttrs(s)
		switch s.GetName() {
		case "invoke_agent norma":
			if run != nil {
				t.Errorf("two run spans")
			}
			run = s
		case "execute_tool":
			id, _ := a["gen_ai.tool.call.id"].(string)
			byCall[id] = s
		default:
			t.Errorf("unexpected span %q", s.GetName())
		}
	}
	if run == nil {
		t.Fatalf("no run span among %d spans", len(r.spans))
	}
	ra := spanAttrs(run)
	if ra["norma.run.id"] != runID || ra["norma.run.status"] != "completed" || ra["norma.run.tool_calls"] != int64(4) || len(run.GetParentSpanId()) != 0 {
		t.Errorf("run span attributes %v", ra)
	}
	want := map[string]struct{ tool, decision, reason string }{
		"t1": {"Read", "allow", "ALLOWED"},
		"t2": {"Bash", "allow", "ALLOWED"},
		"t3": {"Read", "deny", "FILESYSTEM_READ_DENIED"},
		"t4": {"unknown", "deny", "TOOL_UNKNOWN"},
	}
	if len(byCall) != len(want) {
		t.Errorf("%d tool spans, want %d", len(byCall), len(want))
	}
	for id, w := range want {
		s := byCall[id]
		if s == nil {
			t.Errorf("no span for call %s", id)
			continue
		}
		a := spanAttrs(s)
		if a["gen_ai.tool.name"] != w.tool || a["norma.decision"] != w.decision || a["norma.reason"] != w.reason || a["norma.run.id"] != runID {
			t.Errorf("call %s span attributes %v, want %+v", id, a, w)
		}
		if calls[id]["reason"] != w.reason {
			t.Errorf("call %s: the run says %v, the span %v", id, calls[id]["reason"], a["norma.reason"])
		}
		if _, ok := a["norma.sandbox"]; !ok {
			t.Errorf("call %s span has no norma.sandbox", id)
		}
		if !bytes.Equal(s.GetTraceId(), run.GetTraceId()) || !bytes.Equal(s.GetParentSpanId(), run.GetSpanId()) {
			t.Errorf("call %s is not a child of the run span", id)
		}
		if s.GetStartTimeUnixNano() < run.GetStartTimeUnixNano() || s.GetEndTimeUnixNano() > run.GetEndTimeUnixNano() {
			t.Errorf("call %s is not within the run", id)
		}
		if (w.decision == "deny") != (s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR) {
			t.Errorf("call %s status %v", id, s.GetStatus())
		}
	}
	if a := spanAttrs(byCall["t3"]); a["norma.capability.kind"] != "fs.read" || !strings.HasPrefix(a["norma.target.hash"].(string), "sha256:") {
		t.Errorf("t3 names its target by kind and hash only: %v", a)
	}
}

// TestDoorTracesCollectorDown: a collector that takes the connection and
// never answers neither fails a run nor holds it longer than the flush
// bound.
func TestDoorTracesCollectorDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	e := newRunEnv(t)
	script := e.script(t, "turns:\n  - text: hi\n    tool_calls:\n      - {id: t1, name: Read, input: {path: docs/intro.md}}\n  - text: done\n")
	timed := func(env ...string) (time.Duration, int, string) {
		cmd := exec.Command(normaBin(t), "--home", e.home, "run", "--workspace", e.ws, "--script", script, "--yes", "go")
		cmd.Env = append(os.Environ(), env...)
		start := time.Now()
		code, out, errs := doorCmd(t, cmd)
		return time.Since(start), code, out + errs
	}
	base, code, out := timed()
	if code != 0 {
		t.Fatalf("run without a collector: exit %d\n%s", code, out)
	}
	took, code, out := timed(telemetry.EnvEndpoint + "=http://" + ln.Addr().String())
	if code != 0 {
		t.Fatalf("run with a dead collector: exit %d\n%s", code, out)
	}
	if extra := took - base; extra > telemetry.FlushTimeout+2*time.Second {
		t.Errorf("a dead collector cost the run %v (bound %v)", extra, telemetry.FlushTimeout)
	}
	mu.Lock()
	n := len(conns)
	mu.Unlock()
	if n == 0 {
		t.Errorf("the run never tried the collector: the test proves nothing")
	}
}
