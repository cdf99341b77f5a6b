package telemetry

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The standard environment variables that configure the exporter (see
// the OpenTelemetry specification). The exporter reads the others itself
// (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION, _CERTIFICATE, ...).
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
)

// FlushTimeout bounds what exporting costs a process: each export
// request, and the flush at [Tracing.Shutdown].
const FlushTimeout = 2 * time.Second

// InstrumentationName names the tracer of Norma's spans.
const InstrumentationName = "github.com/norma-run/norma"

// Configured reports whether getenv configures a trace exporter: an
// OTLP endpoint is set, the SDK is not disabled and the traces exporter
// is not "none". Only then may [Start] be called.
func Configured(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true") {
		return false
	}
	switch strings.TrimSpace(getenv(EnvTracesExporter)) {
	case "", "otlp":
	default:
		return false
	}
	return strings.TrimSpace(getenv(EnvTracesEndpoint)) != "" || strings.TrimSpace(getenv(EnvEndpoint)) != ""
}

// Config describes the process whose spans are exported.
type Config struct {
	// ServiceVersion is Norma's version, the service.version resource
	// attribute.
	ServiceVersion string
	// Warn is told of the exporter's errors (a collector that refused a
	// batch, ...), at most [MaxWarnings] times; nil discards them. The
	// SDK's own handler would print them unescaped to stderr.
	Warn func(error)
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

// MaxWarnings bounds the errors passed to Config.Warn.
const MaxWarnings = 3

// Tracing is a running trace exporter.
type Tracing struct {
	tp *sdktrace.TracerProvider
}

// Start builds the SDK: a tracer provider exporting batches over
// OTLP/HTTP to the endpoint of the standard environment. It connects to
// nothing yet.
func Start(ctx context.Context, cfg Config) (*Tracing, error) {
	var warned atomic.Int32
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		if cfg.Warn != nil && warned.Add(1) <= MaxWarnings {
			cfg.Warn(err)
		}
	}))
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	// No retry: it would hold the flush past its bound, and a lost batch
	// is only lost telemetry.
	exp, err := newExporter(getenv)
	if err != nil {
		return nil, err
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", "norma")}
	if cfg.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", cfg.ServiceVersion))
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (WithFromEnv) win
	// over the defaults; no host or process detector runs (a command line
	// holds arguments).
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithBatcher(exp, sdktrace.WithExportTimeout(FlushTimeout)),
	)
	return &Tracing{tp: tp}, nil
}

// Tracer returns the tracer Norma's spans are made with.
func (t *Tracing) Tracer() trace.Tracer { return t.tp.Tracer(InstrumentationName) }

// Shutdown exports the spans still buffered and stops the exporter,
// giving up after [FlushTimeout]: an unreachable collector never holds
// the process longer.
func (t *Tracing) Shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), FlushTimeout)
	defer cancel()
	return t.tp.Shutdown(ctx)
}
