package telemetry

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// FileExporter writes each span as one JSON line: ids, parent, links,
// name, times, status and attributes. It is for a machine with no
// collector: `grep TRACE_ID` finds a whole trace (docs/operators.md).
type FileExporter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewFileExporter returns an exporter that writes to w.
func NewFileExporter(w io.Writer) *FileExporter { return &FileExporter{w: w} }

// fileSpan is one line of the file.
type fileSpan struct {
	TraceID    string         `json:"traceId"`
	SpanID     string         `json:"spanId"`
	ParentID   string         `json:"parentSpanId,omitempty"`
	Name       string         `json:"name"`
	Scope      string         `json:"scope"`
	Start      time.Time      `json:"start"`
	End        time.Time      `json:"end"`
	DurationMS float64        `json:"durationMs"`
	Status     string         `json:"status,omitempty"`
	Attributes map[string]any `json:"attributes,omitempty"`
	Links      []fileLink     `json:"links,omitempty"`
}

type fileLink struct {
	TraceID string `json:"traceId"`
	SpanID  string `json:"spanId"`
}

// ExportSpans writes spans, one line each.
func (e *FileExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	enc := json.NewEncoder(e.w)
	for _, s := range spans {
		line := fileSpan{
			TraceID: s.SpanContext().TraceID().String(), SpanID: s.SpanContext().SpanID().String(),
			Name: s.Name(), Scope: s.InstrumentationScope().Name, Start: s.StartTime().UTC(), End: s.EndTime().UTC(),
			DurationMS: float64(s.EndTime().Sub(s.StartTime()).Microseconds()) / 1000,
		}
		if s.Parent().IsValid() {
			line.ParentID = s.Parent().SpanID().String()
		}
		if s.Status().Code != 0 {
			line.Status = s.Status().Code.String() + ": " + s.Status().Description
		}
		if attrs := s.Attributes(); len(attrs) > 0 {
			line.Attributes = make(map[string]any, len(attrs))
			for _, a := range attrs {
				line.Attributes[string(a.Key)] = a.Value.AsInterface()
			}
		}
		for _, l := range s.Links() {
			line.Links = append(line.Links, fileLink{TraceID: l.SpanContext.TraceID().String(), SpanID: l.SpanContext.SpanID().String()})
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}

// Shutdown does nothing: the caller owns the writer.
func (e *FileExporter) Shutdown(context.Context) error { return nil }
