package telemetry_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/norma-run/norma/internal/telemetry"
)

// receiver is an OTLP/HTTP collector: it decodes every request with the
// generated OTLP types.
type receiver struct {
	mu      sync.Mutex
	reqs    []*coltracepb.ExportTraceServiceRequest
	headers []http.Header
	srv     *httptest.Server
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var m coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &m); err != nil {
			t.Errorf("the collector could not decode a request: %v", err)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.reqs = append(r.reqs, &m)
		r.headers = append(r.headers, req.Header.Clone())
		r.mu.Unlock()
		b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(b)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) spans() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, m := range r.reqs {
		for _, rs := range m.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				out = append(out, ss.GetSpans()...)
			}
		}
	}
	return out
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func attrs(kvs []*commonpb.KeyValue) map[string]*commonpb.AnyValue {
	m := map[string]*commonpb.AnyValue{}
	for _, kv := range kvs {
		m[kv.GetKey()] = kv.GetValue()
	}
	return m
}

// TestExport sends a parent and a child span to a collector and decodes
// them with the generated OTLP types: ids, links, names, times, status
// and every attribute type come through.
func TestExport(t *testing.T) {
	r := newReceiver(t)
	getenv := env(map[string]string{
		telemetry.EnvEndpoint: r.srv.URL, telemetry.EnvHeaders: "x-tenant=acme%20corp, authorization=Bearer%20tok",
	})
	if !telemetry.Configured(getenv) {
		t.Fatal("an endpoint does not configure the exporter")
	}
	tr, err := telemetry.Start(t.Context(), telemetry.Config{ServiceVersion: "1.2.3", Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	ctx, run := tr.Tracer().Start(t.Context(), "invoke_agent norma")
	_, call := tr.Tracer().Start(ctx, "execute_tool")
	call.SetAttributes(attribute.String("s", "v"), attribute.Bool("b", true), attribute.Int64("i", -7),
		attribute.Float64("f", 1.5), attribute.StringSlice("ss", []string{"a", "b"}))
	call.SetStatus(codes.Error, "TOOL_DENIED")
	call.End()
	run.End()
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans := r.spans()
	if len(spans) != 2 {
		t.Fatalf("%d spans received, want 2", len(spans))
	}
	c, p := spans[0], spans[1]
	if c.GetName() != "execute_tool" || p.GetName() != "invoke_agent norma" {
		t.Fatalf("span names %q, %q", c.GetName(), p.GetName())
	}
	if string(c.GetTraceId()) != string(p.GetTraceId()) || string(c.GetParentSpanId()) != string(p.GetSpanId()) || len(p.GetParentSpanId()) != 0 {
		t.Errorf("the tool call is not the run's child: %x/%x parent %x, run %x/%x", c.GetTraceId(), c.GetSpanId(), c.GetParentSpanId(), p.GetTraceId(), p.GetSpanId())
	}
	if c.GetStartTimeUnixNano() == 0 || c.GetEndTimeUnixNano() < c.GetStartTimeUnixNano() || c.GetKind() != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("times %d..%d kind %v", c.GetStartTimeUnixNano(), c.GetEndTimeUnixNano(), c.GetKind())
	}
	if c.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR || c.GetStatus().GetMessage() != "TOOL_DENIED" {
		t.Errorf("status %v", c.GetStatus())
	}
	a := attrs(c.GetAttributes())
	if a["s"].GetStringValue() != "v" || !a["b"].GetBoolValue() || a["i"].GetIntValue() != -7 || a["f"].GetDoubleValue() != 1.5 ||
		len(a["ss"].GetArrayValue().GetValues()) != 2 || a["ss"].GetArrayValue().GetValues()[1].GetStringValue() != "b" {
		t.Errorf("attributes %v", c.GetAttributes())
	}
	rs := r.reqs[0].GetResourceSpans()[0]
	res := attrs(rs.GetResource().GetAttributes())
	if res["service.name"].GetStringValue() != "norma" || res["service.version"].GetStringValue() != "1.2.3" {
		t.Errorf("resource %v", rs.GetResource().GetAttributes())
	}
	if rs.GetScopeSpans()[0].GetScope().GetName() != telemetry.InstrumentationName {
		t.Errorf("scope %v", rs.GetScopeSpans()[0].GetScope())
	}
	if h := r.headers[0]; h.Get("X-Tenant") != "acme corp" || h.Get("Authorization") != "Bearer tok" {
		t.Errorf("headers %v", h)
	}
}

// TestTracesEndpoint: the traces endpoint is used as given.
func TestTracesEndpoint(t *testing.T) {
	r := newReceiver(t)
	tr, err := telemetry.Start(t.Context(), telemetry.Config{Getenv: env(map[string]string{
		telemetry.EnvEndpoint: "http://127.0.0.1:1", telemetry.EnvTracesEndpoint: r.srv.URL + "/v1/traces"})})
	if err != nil {
		t.Fatal(err)
	}
	_, s := tr.Tracer().Start(t.Context(), "x")
	s.End()
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(r.spans()); n != 1 {
		t.Fatalf("%d spans, want 1", n)
	}
}

func TestConfigured(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{telemetry.EnvEndpoint: " "}, false},
		{map[string]string{telemetry.EnvEndpoint: "http://c:4318"}, true},
		{map[string]string{telemetry.EnvTracesEndpoint: "http://c:4318/v1/traces"}, true},
		{map[string]string{telemetry.EnvEndpoint: "http://c:4318", telemetry.EnvSDKDisabled: "TRUE"}, false},
		{map[string]string{telemetry.EnvEndpoint: "http://c:4318", telemetry.EnvTracesExporter: "none"}, false},
		{map[string]string{telemetry.EnvEndpoint: "http://c:4318", telemetry.EnvTracesExporter: "otlp"}, true},
	} {
		if got := telemetry.Configured(env(c.env)); got != c.want {
			t.Errorf("Configured(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}

// TestBadConfigIsRefused: a URL that is not http(s) and a malformed
// header are refused, and the error repeats neither (they may hold
// credentials).
func TestBadConfigIsRefused(t *testing.T) {
	for _, e := range []map[string]string{
		{telemetry.EnvEndpoint: "ftp://user:s3cret-canary@c"},
		{telemetry.EnvEndpoint: "http://c:4318", telemetry.EnvHeaders: "s3cret-canary"},
	} {
		_, err := telemetry.Start(t.Context(), telemetry.Config{Getenv: env(e)})
		if err == nil {
			t.Fatalf("Start(%v) succeeded", e)
		}
		if s := err.Error(); strings.Contains(s, "s3cret-canary") {
			t.Errorf("the error repeats the secret: %s", s)
		}
	}
}

// TestUnreachableCollectorIsBounded: a collector that accepts the
// connection and never answers holds Shutdown no longer than the bound,
// and the error says so.
func TestUnreachableCollectorIsBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	warned := make(chan error, telemetry.MaxWarnings)
	tr, err := telemetry.Start(t.Context(), telemetry.Config{
		Getenv: env(map[string]string{telemetry.EnvEndpoint: "http://" + ln.Addr().String()}),
		Warn:   func(err error) { warned <- err },
	})
	if err != nil {
		t.Fatal(err)
	}
	_, s := tr.Tracer().Start(context.Background(), "x")
	s.End()
	start := time.Now()
	err = tr.Shutdown(t.Context())
	took := time.Since(start)
	if err == nil && len(warned) == 0 {
		t.Error("neither Shutdown nor Warn reported an error for a collector that never answered")
	}
	if took > telemetry.FlushTimeout+500*time.Millisecond {
		t.Errorf("Shutdown took %v, more than the bound %v", took, telemetry.FlushTimeout)
	}
}
