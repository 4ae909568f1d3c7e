package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	nethttp "net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/actors"
	"github.com/kassapay/kassa/metrics"
)

// metricsRegistry gathers the service's metrics (stats, which its parts
// update) and the ones read from its parts when scraped.
func metricsRegistry(stats *metrics.Set, sys *actors.Runtime, fwd *actors.Forwarder, chain, lightning metrics.Backend,
	fetched func() map[string]time.Time, clock kassa.Clock, dataDir string, extra ...prometheus.Collector) prometheus.Gatherer {
	local := prometheus.NewRegistry()
	local.MustRegister(metrics.Collector(actors.Collector(sys, fwd)), metrics.Collector(metrics.Backends(chain, lightning)),
		metrics.Collector(metrics.Disk(dataDir)))
	local.MustRegister(extra...)
	if fetched != nil {
		local.MustRegister(metrics.Collector(metrics.RateAges(fetched, clock)))
	}
	return prometheus.Gatherers{stats.Registry, local}
}

// serveMetrics serves /metrics on addr, the admin listener of
// --metrics-listen, apart from the public one so that it can stay on a
// private address. It returns the server and the address it listens on.
func serveMetrics(addr string, g prometheus.Gatherer, log *slog.Logger) (*nethttp.Server, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("--metrics-listen: %w", err)
	}
	mux := nethttp.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	srv := &nethttp.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: time.Minute}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, nethttp.ErrServerClosed) {
			log.Error("metrics listener", "err", err)
		}
	}()
	return srv, ln.Addr().String(), nil
}

// fetchedFunc is f's Fetched method, or nil.
func fetchedFunc(f interface{ Fetched() map[string]time.Time }) func() map[string]time.Time {
	if f == nil {
		return nil
	}
	return f.Fetched
}

// storageCollectors are the collectors of the storage's own state: the
// memory Pebble holds outside Go's heap, on a single node (PostgreSQL
// reports its own).
func storageCollectors(db any) []prometheus.Collector {
	if p, ok := db.(interface{ Memory() (int64, int64) }); ok {
		return []prometheus.Collector{metrics.Collector(metrics.StorageMemory(p.Memory))}
	}
	return nil
}
