// Package telemetry sets up Kassa's traces and log lines: the OpenTelemetry
// tracer provider (OTLP by flag or the standard OTEL_* variables, a JSON
// lines file for a machine without a collector, a configurable sampler),
// the W3C traceparent strings that carry a span context through the
// journal and the webhook outbox, and a log/slog handler that puts the
// trace and span ids on every line logged within a traced context.
// docs/operators.md shows how to follow one invoice with them.
package telemetry
