package metrics

import (
	"context"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kassapay/kassa"
)

// Backend is a chain or Lightning backend as the metrics see it.
type Backend interface {
	Info(context.Context) kassa.BackendInfo
}

var (
	chainHeight     = prometheus.NewDesc("kassa_chain_height", "Height of the last block the chain watcher processed.", nil, nil)
	chainNodeHeight = prometheus.NewDesc("kassa_chain_node_height", "Height of the chain node's best block.", nil, nil)
	chainLag        = prometheus.NewDesc("kassa_chain_lag_blocks", "Blocks between the node's best block and the last one processed.", nil, nil)
	chainSynced     = prometheus.NewDesc("kassa_chain_synced", "1 when the chain backend is synchronized and answering.", nil, nil)
	addressPool     = prometheus.NewDesc("kassa_address_pool_addresses", "Addresses of lnd's wallet left in the pool for the on-chain invoices of stores without an xpub while lnd is unreachable.", nil, nil)
	lnConnected     = prometheus.NewDesc("kassa_lightning_connected", "1 when the Lightning backend answers, 0 when it does not.", nil, nil)
	lnSynced        = prometheus.NewDesc("kassa_lightning_synced", "1 when the Lightning node is synchronized to the chain.", nil, nil)
	rateAge         = prometheus.NewDesc("kassa_rate_age_seconds", "Age of the newest rate each exchange rate provider brought (-1: none yet).", []string{"provider"}, nil)
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

// Backends reads the chain's height and lag, the address pool (with
// lnd) and the Lightning node's connection state from their Info when
// scraped.
func Backends(chain, lightning Backend) Func {
	return Func{
		Descs: []*prometheus.Desc{chainHeight, chainNodeHeight, chainLag, chainSynced, addressPool, lnConnected, lnSynced},
		Collect: func(ctx context.Context, ch chan<- prometheus.Metric) {
			ci := chain.Info(ctx)
			node := ci.NodeHeight
			if node == 0 {
				node = ci.Height // a simulated chain has no separate node
			}
			ch <- Gauge(chainHeight, float64(ci.Height))
			ch <- Gauge(chainNodeHeight, float64(node))
			ch <- Gauge(chainLag, float64(max(ci.Lag, node-ci.Height, 0)))
			ch <- Gauge(chainSynced, bit(ci.Synced && ci.Error == ""))
			if ci.AddressPool != nil {
				ch <- Gauge(addressPool, float64(*ci.AddressPool))
			}
			li := lightning.Info(ctx)
			ch <- Gauge(lnConnected, bit(li.Error == ""))
			ch <- Gauge(lnSynced, bit(li.Synced && li.Error == ""))
		},
	}
}

// RateAges reports the age of each rate provider's newest rate; fetched
// answers when each provider last brought one (zero: never).
func RateAges(fetched func() map[string]time.Time, clock kassa.Clock) Func {
	return Func{
		Descs: []*prometheus.Desc{rateAge},
		Collect: func(_ context.Context, ch chan<- prometheus.Metric) {
			now := clock.Now()
			for name, at := range fetched() {
				age := -1.0
				if !at.IsZero() {
					age = max(now.Sub(at).Seconds(), 0)
				}
				ch <- Gauge(rateAge, age, name)
			}
		},
	}
}

// Disk reports the free and total space of the file system holding dir.
func Disk(dir string) Func {
	return Func{
		Descs: []*prometheus.Desc{diskFree, diskSize},
		Collect: func(_ context.Context, ch chan<- prometheus.Metric) {
			var st syscall.Statfs_t
			if err := syscall.Statfs(dir, &st); err != nil {
				return
			}
			ch <- Gauge(diskFree, float64(uint64(st.Bavail)*uint64(st.Bsize)))
			ch <- Gauge(diskSize, float64(uint64(st.Blocks)*uint64(st.Bsize)))
		},
	}
}

var (
	pebbleBlockCache = prometheus.NewDesc("kassa_pebble_block_cache_bytes", "Bytes held by Pebble's block cache (bounded by its configured size).", nil, nil)
	pebbleMemtables  = prometheus.NewDesc("kassa_pebble_memtable_bytes", "Bytes allocated by Pebble's memtables, zombie ones included.", nil, nil)
)

// StorageMemory reports the memory Pebble holds outside Go's heap, read
// by f when scraped: its block cache and its memtables.
func StorageMemory(f func() (blockCache, memtables int64)) Func {
	return Func{
		Descs: []*prometheus.Desc{pebbleBlockCache, pebbleMemtables},
		Collect: func(_ context.Context, ch chan<- prometheus.Metric) {
			bc, mt := f()
			ch <- Gauge(pebbleBlockCache, float64(bc))
			ch <- Gauge(pebbleMemtables, float64(mt))
		},
	}
}
