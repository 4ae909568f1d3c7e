package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// Options say where spans go and how many are kept.
type Options struct {
	// Endpoint is the OTLP/gRPC collector, HOST:PORT, sent to without
	// TLS (a collector on loopback or a private network). Empty: the
	// standard OTEL_EXPORTER_OTLP_ENDPOINT or
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT variable, when set, with the
	// exporter's own reading of the other OTEL_EXPORTER_OTLP_* variables.
	Endpoint string
	// File, when set, appends every span as one JSON line to this file
	// (see FileExporter): a trace to read with grep and jq where no
	// collector runs.
	File string
	// SampleRatio, when not negative, is the fraction of new traces kept
	// (0 to 1; a trace continued from a caller keeps the caller's
	// decision). Negative: the standard OTEL_TRACES_SAMPLER and
	// OTEL_TRACES_SAMPLER_ARG variables, and every trace when unset.
	SampleRatio float64
	// Version is the service.version resource attribute.
	Version string
}

// Setup installs the global tracer provider and the W3C propagator.
// Without an exporter (no endpoint, no file) a new trace is not recorded:
// its spans still get ids, which the logs, the journal and the webhook
// deliveries carry, but record nothing that no one would read; a trace
// continued from a caller that samples it is recorded as the caller
// decided, so that its sampled flag goes on to the webhooks. The
// returned function flushes and stops the exporters.
func Setup(ctx context.Context, o Options) (shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if o.SampleRatio > 1 {
		return nil, fmt.Errorf("trace sample ratio %v: use a fraction from 0 to 1", o.SampleRatio)
	}
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName("kassa"), semconv.ServiceVersion(o.Version))
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	var closers []func(context.Context) error
	endpoint := o.Endpoint
	export := endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	switch {
	case !export && o.File == "":
		// Recording a span costs a create a few allocations and
		// microseconds; with nowhere to send it, only the ids are kept.
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())))
	case o.SampleRatio >= 0:
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(o.SampleRatio))))
	}
	if export {
		var eo []otlptracegrpc.Option
		if endpoint != "" {
			eo = append(eo, otlptracegrpc.WithEndpoint(strings.TrimPrefix(endpoint, "http://")), otlptracegrpc.WithInsecure())
		}
		exporter, err := otlptracegrpc.New(ctx, eo...)
		if err != nil {
			return nil, fmt.Errorf("otlp exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exporter))
	}
	if o.File != "" {
		f, err := os.OpenFile(o.File, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("trace file: %w", err)
		}
		closers = append(closers, func(context.Context) error { return f.Close() })
		// Written as each span ends, not batched: the file is for
		// reading live with grep, and a killed process loses nothing.
		opts = append(opts, sdktrace.WithSyncer(NewFileExporter(f)))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	otel.SetTracerProvider(tp)
	return func(ctx context.Context) error {
		err := tp.Shutdown(ctx)
		for _, c := range closers {
			err = errors.Join(err, c(ctx))
		}
		return err
	}, nil
}
