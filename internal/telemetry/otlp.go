package telemetry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// exporter is an OTLP/HTTP trace exporter (binary protobuf, one POST of
// an ExportTraceServiceRequest per batch). It stands in for the
// otlptracehttp module, which links gRPC, grpc-gateway and the generated
// OTLP descriptors into every binary that imports it (+30 MB and several
// milliseconds at every start of norma, measured; issue 20). It encodes
// the few messages of the trace protocol itself (wire.go; not even
// protowire, whose package links one that reads the executable at
// init); the tests decode what it sends with the generated OTLP types.
type exporter struct {
	url     string
	headers http.Header
	client  *http.Client

	mu     sync.Mutex
	closed bool
}

// Environment variables of the exporter (the OpenTelemetry
// specification's; the _TRACES_ ones win).
const (
	EnvHeaders       = "OTEL_EXPORTER_OTLP_HEADERS"
	EnvTracesHeaders = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
)

// maxResponse bounds the collector's answer that is read (and thrown
// away) so that the connection can be reused.
const maxResponse = 64 << 10

// endpointURL returns the URL the spans are posted to: the traces
// endpoint as given, else the endpoint with /v1/traces appended.
func endpointURL(getenv func(string) string) (string, error) {
	raw := strings.TrimSpace(getenv(EnvTracesEndpoint))
	base := raw == ""
	if base {
		raw = strings.TrimSpace(getenv(EnvEndpoint))
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The URL itself is not repeated: it may hold credentials.
		return "", errors.New("the OTLP endpoint is not an http or https URL")
	}
	if base {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	}
	return u.String(), nil
}

// parseHeaders reads "k1=v1,k2=v2" (values URL-encoded) as the
// specification writes the headers variables.
func parseHeaders(getenv func(string) string) (http.Header, error) {
	h := http.Header{}
	for _, env := range []string{EnvHeaders, EnvTracesHeaders} {
		for kv := range strings.SplitSeq(getenv(env), ",") {
			if strings.TrimSpace(kv) == "" {
				continue
			}
			k, v, ok := strings.Cut(kv, "=")
			k = strings.TrimSpace(k)
			val, err := url.PathUnescape(strings.TrimSpace(v))
			if !ok || k == "" || err != nil {
				// The value is not repeated: it is likely a token.
				return nil, fmt.Errorf("%s: an entry is not key=value", env)
			}
			h.Set(k, val)
		}
	}
	return h, nil
}

func newExporter(getenv func(string) string) (*exporter, error) {
	u, err := endpointURL(getenv)
	if err != nil {
		return nil, err
	}
	h, err := parseHeaders(getenv)
	if err != nil {
		return nil, err
	}
	h.Set("Content-Type", "application/x-protobuf")
	return &exporter{url: u, headers: h, client: &http.Client{Timeout: FlushTimeout}}, nil
}

// ExportSpans posts spans in one request.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed || len(spans) == 0 {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(encodeRequest(spans)))
	if err != nil {
		return err
	}
	req.Header = e.headers.Clone()
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("export to the OTLP collector: %w", errors.Unwrap(err)) // not the URL
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the OTLP collector answered %d", resp.StatusCode)
	}
	return nil
}

// Shutdown stops exporting.
func (e *exporter) Shutdown(context.Context) error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.client.CloseIdleConnections()
	return nil
}

// encodeRequest encodes an ExportTraceServiceRequest: the spans grouped
// by resource, then by instrumentation scope, in the order they came.
func encodeRequest(spans []sdktrace.ReadOnlySpan) []byte {
	type group struct {
		scope instrumentation.Scope
		spans []sdktrace.ReadOnlySpan
	}
	type byRes struct {
		res    *resource.Resource
		scopes []*group
	}
	var rs []*byRes
	for _, s := range spans {
		var r *byRes
		for _, x := range rs {
			if x.res == s.Resource() {
				r = x
				break
			}
		}
		if r == nil {
			r = &byRes{res: s.Resource()}
			rs = append(rs, r)
		}
		var g *group
		for _, x := range r.scopes {
			if x.scope == s.InstrumentationScope() {
				g = x
				break
			}
		}
		if g == nil {
			g = &group{scope: s.InstrumentationScope()}
			r.scopes = append(r.scopes, g)
		}
		g.spans = append(g.spans, s)
	}
	var out []byte
	for _, r := range rs {
		var b []byte
		var res []byte
		if r.res != nil {
			res = appendAttrs(res, 1, r.res.Attributes())
		}
		b = appendMsg(b, 1, res)
		for _, g := range r.scopes {
			var sc []byte
			var scope []byte
			scope = appendString(scope, 1, g.scope.Name)
			scope = appendString(scope, 2, g.scope.Version)
			sc = appendMsg(sc, 1, scope)
			for _, s := range g.spans {
				sc = appendMsg(sc, 2, encodeSpan(s))
			}
			sc = appendString(sc, 3, g.scope.SchemaURL)
			b = appendMsg(b, 2, sc)
		}
		if r.res != nil {
			b = appendString(b, 3, r.res.SchemaURL())
		}
		out = appendMsg(out, 1, b)
	}
	return out
}

// encodeSpan encodes one Span message.
func encodeSpan(s sdktrace.ReadOnlySpan) []byte {
	var b []byte
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendTag(b, 1, wireBytes)
	b = appendBytes(b, tid[:])
	b = appendTag(b, 2, wireBytes)
	b = appendBytes(b, sid[:])
	b = appendString(b, 3, sc.TraceState().String())
	if p := s.Parent(); p.SpanID().IsValid() {
		psid := p.SpanID()
		b = appendTag(b, 4, wireBytes)
		b = appendBytes(b, psid[:])
	}
	b = appendString(b, 5, s.Name())
	if k := s.SpanKind(); k != 0 {
		// trace.SpanKind and OTLP's SpanKind number the kinds alike.
		b = appendTag(b, 6, wireVarint)
		b = appendVarint(b, uint64(k))
	}
	b = appendTag(b, 7, wireFixed64)
	b = appendFixed64(b, uint64(s.StartTime().UnixNano()))
	b = appendTag(b, 8, wireFixed64)
	b = appendFixed64(b, uint64(s.EndTime().UnixNano()))
	b = appendAttrs(b, 9, s.Attributes())
	b = appendCount(b, 10, s.DroppedAttributes())
	for _, ev := range s.Events() {
		var m []byte
		m = appendTag(m, 1, wireFixed64)
		m = appendFixed64(m, uint64(ev.Time.UnixNano()))
		m = appendString(m, 2, ev.Name)
		m = appendAttrs(m, 3, ev.Attributes)
		m = appendCount(m, 4, ev.DroppedAttributeCount)
		b = appendMsg(b, 11, m)
	}
	b = appendCount(b, 12, s.DroppedEvents())
	for _, l := range s.Links() {
		var m []byte
		lt, ls := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		m = appendTag(m, 1, wireBytes)
		m = appendBytes(m, lt[:])
		m = appendTag(m, 2, wireBytes)
		m = appendBytes(m, ls[:])
		m = appendString(m, 3, l.SpanContext.TraceState().String())
		m = appendAttrs(m, 4, l.Attributes)
		m = appendCount(m, 5, l.DroppedAttributeCount)
		b = appendMsg(b, 13, m)
	}
	b = appendCount(b, 14, s.DroppedLinks())
	var st []byte
	st = appendString(st, 2, s.Status().Description)
	switch s.Status().Code {
	case codes.Ok:
		st = appendTag(st, 3, wireVarint)
		st = appendVarint(st, 1)
	case codes.Error:
		st = appendTag(st, 3, wireVarint)
		st = appendVarint(st, 2)
	}
	b = appendMsg(b, 15, st)
	// Bit 8 says that bit 9 tells whether the parent is remote.
	flags := uint32(sc.TraceFlags()) | 0x100
	if s.Parent().IsRemote() {
		flags |= 0x200
	}
	b = appendTag(b, 16, wireFixed32)
	return appendFixed32(b, flags)
}

func appendMsg(b []byte, num fieldNum, m []byte) []byte {
	b = appendTag(b, num, wireBytes)
	return appendBytes(b, m)
}

func appendString(b []byte, num fieldNum, s string) []byte {
	if s == "" {
		return b
	}
	b = appendTag(b, num, wireBytes)
	return appendStr(b, s)
}

func appendCount(b []byte, num fieldNum, n int) []byte {
	if n <= 0 {
		return b
	}
	b = appendTag(b, num, wireVarint)
	return appendVarint(b, uint64(n))
}

// appendAttrs appends each attribute as a KeyValue in field num.
func appendAttrs(b []byte, num fieldNum, attrs []attribute.KeyValue) []byte {
	for _, kv := range attrs {
		var m []byte
		m = appendString(m, 1, string(kv.Key))
		m = appendMsg(m, 2, anyValue(kv.Value))
		b = appendMsg(b, num, m)
	}
	return b
}

// anyValue encodes an AnyValue.
func anyValue(v attribute.Value) []byte {
	var b []byte
	switch v.Type() {
	case attribute.BOOL:
		b = appendTag(b, 2, wireVarint)
		b = appendVarint(b, boolVarint(v.AsBool()))
	case attribute.INT64:
		b = appendTag(b, 3, wireVarint)
		b = appendVarint(b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = appendTag(b, 4, wireFixed64)
		b = appendFixed64(b, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		b = appendTag(b, 1, wireBytes)
		b = appendStr(b, v.AsString())
	case attribute.BOOLSLICE, attribute.INT64SLICE, attribute.FLOAT64SLICE, attribute.STRINGSLICE:
		var arr []byte
		for _, x := range sliceValues(v) {
			arr = appendMsg(arr, 1, anyValue(x))
		}
		b = appendMsg(b, 5, arr)
	default:
		b = appendTag(b, 1, wireBytes)
		b = appendStr(b, v.Emit())
	}
	return b
}

func sliceValues(v attribute.Value) []attribute.Value {
	var out []attribute.Value
	switch v.Type() {
	case attribute.BOOLSLICE:
		for _, x := range v.AsBoolSlice() {
			out = append(out, attribute.BoolValue(x))
		}
	case attribute.INT64SLICE:
		for _, x := range v.AsInt64Slice() {
			out = append(out, attribute.Int64Value(x))
		}
	case attribute.FLOAT64SLICE:
		for _, x := range v.AsFloat64Slice() {
			out = append(out, attribute.Float64Value(x))
		}
	case attribute.STRINGSLICE:
		for _, x := range v.AsStringSlice() {
			out = append(out, attribute.StringValue(x))
		}
	}
	return out
}
