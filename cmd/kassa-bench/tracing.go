package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync/atomic"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// otlpSink is an OTLP/gRPC trace receiver that counts the spans it is sent
// and discards them: a collector that costs the sender what a real one
// does (the export over gRPC) and nothing else.
type otlpSink struct {
	collectortrace.UnimplementedTraceServiceServer
	spans atomic.Int64
}

func (s *otlpSink) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	var n int64
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += int64(len(ss.Spans))
		}
	}
	s.spans.Add(n)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// benchTracing measures the create throughput of two Kassa processes side
// by side: one tracing every request (--trace-sample-ratio 1) to an OTLP
// collector, one with tracing off (ratio 0, no exporter). They are
// measured in turns, rounds times, and the overhead is the median of the
// rounds' (off - on) / off.
func benchTracing(d time.Duration, workers, rounds int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	sink := &otlpSink{}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, sink)
	go srv.Serve(ln)
	defer srv.Stop()

	tmp, bin, cleanup, err := workspace("tracing")
	if err != nil {
		return err
	}
	defer cleanup()
	on, err := startKassa(bin, filepath.Join(tmp, "on"), "--otlp-endpoint", ln.Addr().String(), "--trace-sample-ratio", "1")
	if err != nil {
		return err
	}
	defer on.stop()
	off, err := startKassa(bin, filepath.Join(tmp, "off"), "--trace-sample-ratio", "0")
	if err != nil {
		return err
	}
	defer off.stop()
	for _, t := range []*target{on, off} {
		if _, _, err := t.createStore(); err != nil {
			return err
		}
	}
	var onRates, offRates, overheads []float64
	for i := 0; i < rounds; i++ {
		// Alternate who goes first, so that neither always meets a
		// machine warmed (or loaded) by the other.
		order := []*target{off, on}
		if i%2 == 1 {
			order = []*target{on, off}
		}
		got := map[*target]float64{}
		for _, t := range order {
			rps, err := t.peak(workers, d)
			if err != nil {
				return err
			}
			got[t] = rps
		}
		onRates, offRates = append(onRates, got[on]), append(offRates, got[off])
		overheads = append(overheads, (got[off]-got[on])/got[off]*100)
	}
	// Let the batcher send what it holds before the count is read.
	deadline := time.Now().Add(10 * time.Second)
	for sink.spans.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if sink.spans.Load() == 0 {
		return fmt.Errorf("tracing bench: the collector received no span")
	}
	bench("create_rps_tracing_off", median(offRates), "req/s")
	bench("create_rps_tracing_on", median(onRates), "req/s")
	bench("tracing_spans_exported", float64(sink.spans.Load()), "spans")
	bench("tracing_overhead_pct", median(overheads), "%")
	return nil
}
