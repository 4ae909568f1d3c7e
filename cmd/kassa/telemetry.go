package main

import (
	"context"

	"github.com/kassapay/kassa/telemetry"
)

// setupTelemetry installs the global tracer provider (package telemetry):
// OTLP/gRPC to the endpoint or the OTEL_EXPORTER_OTLP_* variables, a JSON
// lines file, and the sampler of --trace-sample-ratio or
// OTEL_TRACES_SAMPLER. The returned function flushes and stops the
// exporters.
func setupTelemetry(ctx context.Context, c Config, version string) (func(context.Context) error, error) {
	return telemetry.Setup(ctx, telemetry.Options{
		Endpoint: c.OTLPEndpoint, File: c.TraceFile, SampleRatio: c.TraceSampleRatio, Version: version,
	})
}
