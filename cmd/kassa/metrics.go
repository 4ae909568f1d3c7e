package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	nethttp "net/http"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/actors"
	"github.com/kassapay/kassa/metrics"
)

// backend is a chain or Lightning backend as the metrics see it.
type backend interface {
	Info(context.Context) kassa.BackendInfo
}

var (
	chainHeight     = prometheus.NewDesc("kassa_chain_height", "Height of the last block the chain watcher processed.", nil, nil)
	chainNodeHeight = prometheus.NewDesc("kassa_chain_node_height", "Height of the chain node's best block.", nil, nil)
	chainLag        = prometheus.NewDesc("kassa_chain_lag_blocks", "Blocks between the node's best block and the last one processed.", nil, nil)
	chainSynced     = prometheus.NewDesc("kassa_chain_synced", "1 when the chain backend is synchronized and answering.", nil, nil)
	lnConnected     = prometheus.NewDesc("kassa_lightning_connected", "1 when the Lightning backend answers, 0 when it does not.", nil, nil)
	lnSynced        = prometheus.NewDesc("kassa_lightning_synced", "1 when the Lightning node is synchronized to the chain.", nil, nil)
	rateAge         = prometheus.NewDesc("kassa_rate_age_seconds", "Age of the newest rate each exchange rate provider brought.", []string{"provider"}, nil)
	diskFree        = prometheus.NewDesc("kassa_disk_free_bytes", "Bytes available to Kassa on the file system of the data directory.", nil, nil)
	diskSize        = prometheus.NewDesc("kassa_disk_size_bytes", "Size of the file system of the data directory.", nil, nil)
)

// bit is 1 for true.
func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// metricsRegistry gathers the process-wide metrics (package metrics) and
// the ones read from this service's parts when scraped.
func metricsRegistry(sys *actors.System, fwd *actors.Forwarder, chain, lightning backend,
	fetched func() map[string]time.Time, clock kassa.Clock, dataDir string) prometheus.Gatherer {
	local := prometheus.NewRegistry()
	register := func(f metrics.Func) { local.MustRegister(metrics.Collector(f)) }
	register(actors.Collector(sys, fwd))
	register(metrics.Func{
		Descs: []*prometheus.Desc{chainHeight, chainNodeHeight, chainLag, chainSynced, lnConnected, lnSynced},
		Collect: func(ctx context.Context, ch chan<- prometheus.Metric) {
			ci := chain.Info(ctx)
			node := ci.NodeHeight
			if node == 0 {
				node = ci.Height // a simulated chain has no separate node
			}
			ch <- metrics.Gauge(chainHeight, float64(ci.Height))
			ch <- metrics.Gauge(chainNodeHeight, float64(node))
			ch <- metrics.Gauge(chainLag, float64(max(ci.Lag, node-ci.Height, 0)))
			ch <- metrics.Gauge(chainSynced, bit(ci.Synced && ci.Error == ""))
			li := lightning.Info(ctx)
			ch <- metrics.Gauge(lnConnected, bit(li.Error == ""))
			ch <- metrics.Gauge(lnSynced, bit(li.Synced && li.Error == ""))
		},
	})
	if fetched != nil {
		register(metrics.Func{
			Descs: []*prometheus.Desc{rateAge},
			Collect: func(_ context.Context, ch chan<- prometheus.Metric) {
				now := clock.Now()
				for name, at := range fetched() {
					age := -1.0 // never fetched
					if !at.IsZero() {
						age = max(now.Sub(at).Seconds(), 0)
					}
					ch <- metrics.Gauge(rateAge, age, name)
				}
			},
		})
	}
	register(metrics.Func{
		Descs: []*prometheus.Desc{diskFree, diskSize},
		Collect: func(_ context.Context, ch chan<- prometheus.Metric) {
			var st syscall.Statfs_t
			if err := syscall.Statfs(dataDir, &st); err != nil {
				return
			}
			ch <- metrics.Gauge(diskFree, float64(uint64(st.Bavail)*uint64(st.Bsize)))
			ch <- metrics.Gauge(diskSize, float64(uint64(st.Blocks)*uint64(st.Bsize)))
		},
	})
	return prometheus.Gatherers{metrics.Registry, local}
}

// serveMetrics serves /metrics on addr, the admin listener of
// --metrics-listen, apart from the public one so that it can stay on a
// private address. It returns the server and the address it listens on.
func serveMetrics(addr string, g prometheus.Gatherer, log interface {
	Error(string, ...any)
}) (*nethttp.Server, string, error) {
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
