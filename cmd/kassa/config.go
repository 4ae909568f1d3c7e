package main

import (
	"flag"
	"time"

	"github.com/kassapay/kassa/dashboard"
	kassahttp "github.com/kassapay/kassa/http"
	"github.com/kassapay/kassa/lightning/lnd"
)

// Config is every setting of `kassa serve`. Each flag can also be set as
// KASSA_<NAME> in the environment and as NAME in the configuration file
// of --config; a flag on the command line wins over the environment,
// which wins over the file (see loadConfig).
type Config struct {
	Data string
	// Store is where the service keeps its data: "pebble" (the default,
	// in Data) or a postgres:// URL.
	Store         string
	Listen        string
	PublicURL     string
	Chain         string
	Lightning     string
	Rates         string
	RatesURLs     string
	RatesRefresh  time.Duration
	RatesMaxAge   time.Duration
	InvoiceExpiry time.Duration
	Monitoring    time.Duration
	// AddressPool is how many addresses of lnd's wallet are kept ahead
	// for stores without an xpub during an lnd outage.
	AddressPool  int
	Dev          bool
	OTLPEndpoint string
	LogFormat    string
	LogLevel     string
	RateLimit    float64
	RateBurst    int
	DebugListen  string
	// DebugListenAllowPublic lets DebugListen be an address that is not
	// loopback (a warning at start); without it such an address stops
	// the start.
	DebugListenAllowPublic bool
	// MetricsListen is the admin listener of /metrics (off when empty);
	// MetricsListenAllowPublic lets it be an address that is neither
	// loopback nor private.
	MetricsListen            string
	MetricsListenAllowPublic bool
	// TraceFile appends spans as JSON lines; TraceSampleRatio is the
	// fraction of new traces kept (negative: OTEL_TRACES_SAMPLER).
	TraceFile        string
	TraceSampleRatio float64
	// MemoryLimit is the Go runtime's soft memory limit: "auto", "off" or
	// a size such as 1GiB (see applyMemoryLimit).
	MemoryLimit string
	// PageRateLimit, PayRateLimit and PayLinkRateLimit are the public
	// pages' limits: page requests per second per client address,
	// pay-link payments per minute per address and per pay link.
	PageRateLimit    float64
	PayRateLimit     float64
	PayLinkRateLimit float64
	ClientIPHeader   string
	// WebhookSigAliases are more header names for the X-Service-Sig value
	// of every delivery (none by default).
	WebhookSigAliases sigAliases
	// ShutdownTimeout bounds a graceful stop: requests in flight and due
	// webhook deliveries get this long to finish (see Main.Close).
	ShutdownTimeout time.Duration
	// DashboardSignup and DashboardPercentFee: see dashboardFlags.
	DashboardSignup     string
	DashboardPercentFee string
	// DashboardLimits bound each dashboard account's stores, writes and
	// searches (see dashboardFlags); 0 turns one off.
	DashboardLimits dashboard.Limits
	// Cluster is the etcd of a cluster (etcd://HOST:PORT) and NodeListen
	// the address other nodes reach this one at; empty: one node.
	Cluster    string
	NodeListen string
	// NodeTLSCA, NodeTLSCert and NodeTLSKey are the mutual TLS of the
	// node port (kassa cluster certs makes them); NodeInsecure runs it
	// in plaintext instead, on loopback only.
	NodeTLSCA    string
	NodeTLSCert  string
	NodeTLSKey   string
	NodeInsecure bool
}

// DefaultConfig returns safe defaults: the embedded simulation on
// loopback, data in ./data.
func DefaultConfig() Config {
	return Config{
		Data:          "./data",
		Listen:        "127.0.0.1:8080",
		Chain:         "sim",
		Lightning:     "sim",
		Rates:         "fixed",
		RatesRefresh:  30 * time.Second,
		RatesMaxAge:   10 * time.Minute,
		InvoiceExpiry: 15 * time.Minute,
		Monitoring:    24 * time.Hour,
		AddressPool:   lnd.DefaultPoolSize,
		LogFormat:     "text",
		LogLevel:      "info",
		RateLimit:     100,
		RateBurst:     200,
		MemoryLimit:   "auto",

		ShutdownTimeout:     30 * time.Second,
		TraceSampleRatio:    -1,
		DashboardSignup:     dashboard.SignupInvite, // open with --dev (devDefaults)
		DashboardPercentFee: "1",
		DashboardLimits:     dashboard.DefaultLimits(),

		PageRateLimit:    kassahttp.DefaultPublicLimits().PageRate,
		PayRateLimit:     kassahttp.DefaultPublicLimits().PayRate * 60,
		PayLinkRateLimit: kassahttp.DefaultPublicLimits().PayLinkRate * 60,
	}
}

func (c *Config) flags(fs *flag.FlagSet) {
	c.dashboardFlags(fs)
	fs.StringVar(&c.Data, "data", c.Data, "data directory (Pebble, admin.token)")
	fs.StringVar(&c.Store, "store", c.Store, "where data is kept: pebble (in --data) or postgres://user:pass@host:port/db")
	fs.StringVar(&c.Listen, "listen", c.Listen, "HTTP listen address")
	fs.StringVar(&c.PublicURL, "public-url", c.PublicURL, "base URL of checkout and pay-link pages (default http://LISTEN)")
	fs.StringVar(&c.Chain, "chain", c.Chain, "chain backend: sim or rpc://user:pass@host:port")
	fs.StringVar(&c.Lightning, "lightning", c.Lightning, "Lightning backend: sim or lnd://host:port?tls=…&macaroon=…")
	fs.StringVar(&c.Rates, "rates", c.Rates, "exchange rates: fixed (simulation) or providers, e.g. kraken,coinbase,bitstamp")
	fs.StringVar(&c.RatesURLs, "rates-url", c.RatesURLs, "override provider base URLs: NAME=URL,NAME=URL (tests, proxies)")
	fs.DurationVar(&c.RatesRefresh, "rates-refresh", c.RatesRefresh, "how often rates are fetched in the background")
	fs.DurationVar(&c.RatesMaxAge, "rates-max-age", c.RatesMaxAge, "a rate older than this is not used")
	fs.DurationVar(&c.InvoiceExpiry, "invoice-expiry", c.InvoiceExpiry, "how long an invoice waits for payment")
	fs.DurationVar(&c.Monitoring, "monitoring", c.Monitoring, "how long an expired invoice's address is still watched")
	fs.IntVar(&c.AddressPool, "address-pool", c.AddressPool, "with lnd: addresses of lnd's wallet kept ahead, so that stores without an xpub get on-chain invoices while lnd is unreachable")
	fs.BoolVar(&c.Dev, "dev", c.Dev, "development: allow loopback webhook URLs, seed a demo store")
	fs.StringVar(&c.OTLPEndpoint, "otlp-endpoint", c.OTLPEndpoint, "send traces over OTLP/gRPC to HOST:PORT (off when empty)")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "text or json")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	fs.Float64Var(&c.RateLimit, "rate-limit", c.RateLimit, "API requests per second per key (0: off)")
	fs.IntVar(&c.RateBurst, "rate-burst", c.RateBurst, "burst of the per-key rate limit")
	fs.StringVar(&c.MemoryLimit, "memory-limit", c.MemoryLimit, "soft memory limit of the Go heap: a size such as 1GiB, off, or auto (GOMEMLIMIT when set, else 90% of the cgroup limit, else 1GiB)")
	fs.Float64Var(&c.PageRateLimit, "page-rate-limit", c.PageRateLimit, "checkout and pay-link page requests per second per client address (0: off)")
	fs.Float64Var(&c.PayRateLimit, "pay-rate-limit", c.PayRateLimit, "pay-link payments per minute per client address (0: off)")
	fs.Float64Var(&c.PayLinkRateLimit, "paylink-rate-limit", c.PayLinkRateLimit, "payments per minute per pay link (0: off)")
	fs.StringVar(&c.ClientIPHeader, "client-ip-header", c.ClientIPHeader, "behind a reverse proxy: header whose last address is the client's, e.g. X-Forwarded-For")
	fs.Var(&c.WebhookSigAliases, "webhook-sig-alias", "also send the X-Service-Sig value under this header `NAME`, e.g. X-Coinsnap-Sig for Coinsnap shop plugins (repeatable; comma-separated in the environment)")
	fs.StringVar(&c.MetricsListen, "metrics-listen", c.MetricsListen, "serve Prometheus metrics at /metrics on this admin address, HOST:PORT (off when empty; keep it private)")
	fs.StringVar(&c.TraceFile, "trace-file", c.TraceFile, "append every span as a JSON line to this file (for machines without a collector)")
	fs.Float64Var(&c.TraceSampleRatio, "trace-sample-ratio", c.TraceSampleRatio, "fraction of new traces kept, 0 to 1 (default: OTEL_TRACES_SAMPLER, else all)")
	fs.StringVar(&c.Cluster, "cluster", c.Cluster, "cluster mode: etcd://HOST:PORT of the membership (needs --store postgres://… and --node-listen)")
	fs.StringVar(&c.NodeListen, "node-listen", c.NodeListen, "cluster mode: HOST:PORT this node listens on for the other nodes, and the address they dial")
	fs.StringVar(&c.NodeTLSCA, "node-tls-ca", c.NodeTLSCA, "cluster mode: the cluster CA's certificate `FILE`; the node port takes only peers with a certificate it signed (kassa cluster certs)")
	fs.StringVar(&c.NodeTLSCert, "node-tls-cert", c.NodeTLSCert, "cluster mode: this node's certificate `FILE`, signed by the cluster CA, naming the host of --node-listen")
	fs.StringVar(&c.NodeTLSKey, "node-tls-key", c.NodeTLSKey, "cluster mode: this node's private key `FILE` (mode 0600)")
	fs.BoolVar(&c.NodeInsecure, "node-insecure", c.NodeInsecure, "cluster mode without TLS on the node port: for tests on one machine, only with a loopback --node-listen")
	fs.StringVar(&c.DebugListen, "debug-listen", c.DebugListen, "serve Go's pprof profiles on this loopback address, HOST:PORT (off when empty; profile, trace and delta profiles take at most seconds=30)")
	fs.BoolVar(&c.DebugListenAllowPublic, allowPublicDebugFlag, c.DebugListenAllowPublic, "let --debug-listen be an address that is not loopback (logged as a warning): anyone who reaches it reads the process's profiles")
	fs.BoolVar(&c.MetricsListenAllowPublic, allowPublicMetricsFlag, c.MetricsListenAllowPublic, "let --metrics-listen be an address that is neither loopback nor private (logged as a warning): /metrics has no authentication")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "on SIGTERM, how long requests in flight and due webhook deliveries get to finish")
}

// parseInterleaved parses flags that may come before or after positional
// arguments and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// publicLimits are the public pages' limits of the flags, with the
// default bursts; a rate of 0 turns that limit off.
func (c Config) publicLimits() kassahttp.PublicLimits {
	l := kassahttp.DefaultPublicLimits()
	off := -1.0 // a zero PublicLimits would mean the defaults
	l.PageRate, l.PayRate, l.PayLinkRate = off, off, off
	if c.PageRateLimit > 0 {
		l.PageRate = c.PageRateLimit
	}
	if c.PayRateLimit > 0 {
		l.PayRate = c.PayRateLimit / 60
	}
	if c.PayLinkRateLimit > 0 {
		l.PayLinkRate = c.PayLinkRateLimit / 60
	}
	return l
}
