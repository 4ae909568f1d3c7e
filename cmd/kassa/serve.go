package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	nethttp "net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/actors"
	chainrpc "github.com/kassapay/kassa/chain/rpc"
	chainsim "github.com/kassapay/kassa/chain/sim"
	"github.com/kassapay/kassa/greenfield"
	kassahttp "github.com/kassapay/kassa/http"
	"github.com/kassapay/kassa/lightning/lnd"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/metrics"
	"github.com/kassapay/kassa/rates"
	"github.com/kassapay/kassa/refund"
	"github.com/kassapay/kassa/telemetry"
	"github.com/kassapay/kassa/topup"
)

// Main is the running service: ParseFlags, Run, then Close.
type Main struct {
	Config Config
	Clock  kassa.Clock
	Stdout io.Writer
	// Stderr gets ParseFlags' complaints about the command line.
	Stderr io.Writer
	// Addr is the address the HTTP server listens on once Run returns.
	Addr string

	log       *slog.Logger
	started   time.Time
	db        storage
	sys       *actors.System
	forwarder *actors.Forwarder // the sender of Lightning payments (lnd's or the simulated node's)
	// forwards says the forwarder also forwards stores' Lightning money
	// (lnd): the service's node holds it until then. The simulated node
	// only pays refunds; its stores' money is theirs at once, as always.
	forwards bool
	// funds says what the service's node can pay out, asked at a
	// payout's approval (refund.Funds).
	funds   refund.Funds
	refunds *refund.Service
	server  *nethttp.Server
	// stats are the service's metrics, given to each part; metrics
	// serves them on --metrics-listen (nil when off).
	stats   *metrics.Set
	metrics *nethttp.Server
	// debug serves pprof on --debug-listen (nil when off).
	debug     *nethttp.Server
	cancel    context.CancelFunc
	telemetry func(context.Context) error
	// roles are the leases a cluster's node runs its watchers and
	// forwarder under (leases.go).
	roles roles
}

// NewMain returns a Main with the default configuration.
func NewMain() *Main {
	return &Main{Config: DefaultConfig(), Clock: kassa.SystemClock{}, Stdout: os.Stdout, Stderr: os.Stderr}
}

// ParseFlags reads the serve flags, KASSA_* variables and the --config
// file (see Config.load), and validates the configuration.
func (m *Main) ParseFlags(args []string) error {
	_, src, err := m.Config.load("kassa serve", "usage: kassa serve [flags]\n  run the service", args, m.Stdout, m.Stderr)
	if err != nil {
		return err
	}
	return m.Config.checkSimulation(src)
}

func newLogger(c Config, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", c.LogLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.LogFormat {
	case "text":
		return slog.New(telemetry.LogHandler(slog.NewTextHandler(w, opts))), nil
	case "json":
		return slog.New(telemetry.LogHandler(slog.NewJSONHandler(w, opts))), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", c.LogFormat)
}

// Run opens storage, starts the backends, the actors and the HTTP server,
// and returns once the server listens.
func (m *Main) Run(ctx context.Context) error {
	token, clusterMode, err := m.prepare(ctx)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	b, err := m.openBackends(ctx, runCtx, clusterMode != nil)
	if err != nil {
		return err
	}
	if err := m.startActors(ctx, runCtx, clusterMode, b); err != nil {
		return err
	}
	return m.listen(ctx, runCtx, token, clusterMode != nil, b)
}

// backends are what Run starts beside the actors: the chain, Lightning
// and rate sources, and the simulator when either backend is simulated.
type backends struct {
	chain     kassa.Chain
	lightning kassa.Lightning
	rates     rates.Backend
	sim       *simulator // nil unless --chain sim or --lightning sim
}

// prepare sets up logging, the memory limit and telemetry, the data
// directory and its admin token, and opens storage.
func (m *Main) prepare(ctx context.Context) (token string, clusterMode *clusterSettings, err error) {
	c := m.Config
	log, err := newLogger(c, os.Stderr)
	if err != nil {
		return "", nil, err
	}
	m.log = log
	m.started = time.Now()
	limit, source, err := applyMemoryLimit(c.MemoryLimit)
	if err != nil {
		return "", nil, err
	}
	gcPercent, gcSource := applyGCPercent()
	if limit != math.MaxInt64 {
		log.Info("memory limit", "bytes", limit, "source", source, "gogc", gcPercent, "gogc_source", gcSource)
	} else {
		log.Info("no memory limit", "gogc", gcPercent, "gogc_source", gcSource)
	}
	if c.InvoiceExpiry <= 0 {
		return "", nil, fmt.Errorf("--invoice-expiry must be positive")
	}
	if m.telemetry, err = setupTelemetry(ctx, c, Version); err != nil {
		return "", nil, err
	}
	// The directory holds API keys, webhook secrets and the admin token:
	// 0700 even when it existed before with a looser mode.
	if err := os.MkdirAll(c.Data, 0o700); err != nil {
		return "", nil, fmt.Errorf("data directory: %w", err)
	}
	if err := os.Chmod(c.Data, 0o700); err != nil {
		return "", nil, fmt.Errorf("data directory: %w", err)
	}
	if token, err = adminToken(c.Data); err != nil {
		return "", nil, err
	}
	if clusterMode, err = parseCluster(c); err != nil {
		return "", nil, err
	}
	m.stats = metrics.New()
	if m.db, err = openStorage(ctx, c, m.Clock, m.stats, log); err != nil {
		return "", nil, err
	}
	return token, clusterMode, nil
}

// openBackends connects the chain and Lightning backends named by
// --chain and --lightning (with lnd, its address pool and the
// forwarder) and starts the rate source.
func (m *Main) openBackends(ctx, runCtx context.Context, cluster bool) (backends, error) {
	c, log := m.Config, m.log
	var b backends
	var wallet *lndWallet // with --lightning lnd://, its pool is set below
	switch {
	case c.Chain == "sim":
		// The simulations keep their state in the store, so that an
		// invoice open before a restart can still be paid after it.
		chainSim, err := chainsim.Open(ctx, m.Clock, m.db.State("chainsim"))
		if err != nil {
			return b, err
		}
		b.chain = chainSim
		b.sim = &simulator{chain: chainSim}
	case strings.HasPrefix(c.Chain, "rpc://"):
		conn, err := chainrpc.ParseURL(c.Chain)
		if err != nil {
			return b, err
		}
		// With lnd, stores without an xpub take on-chain payments to
		// lnd's wallet, forwarded like Lightning ones (lightning.go).
		cfg := chainrpc.Config{
			Conn: conn, State: m.db, Reader: m.db, Expiry: c.InvoiceExpiry, Monitoring: c.Monitoring,
			Clock: m.Clock, Logger: log, Cluster: cluster,
		}
		if strings.HasPrefix(c.Lightning, "lnd://") {
			wallet = &lndWallet{}
			cfg.Wallet = wallet
		}
		if b.chain, err = chainrpc.New(cfg); err != nil {
			return b, err
		}
	default:
		return b, fmt.Errorf("--chain %q: use sim or rpc://user:pass@host:port", c.Chain)
	}
	switch {
	case c.Lightning == "sim":
		node, err := lnsim.Open(ctx, m.Clock, m.db.State("lnsim"))
		if err != nil {
			return b, err
		}
		b.lightning = node
		if b.sim == nil {
			b.sim = &simulator{}
		}
		b.sim.node = node
		// The simulated node pays too (its own invoices; others find no
		// route), so refunds work in simulation; it forwards nothing.
		// The simulated chain is its wallet for on-chain payouts.
		funds := simFunds{node: node}
		var wallet actors.OnchainWallet
		if b.sim.chain != nil {
			funds.chain, wallet = b.sim.chain, b.sim.chain
		}
		m.funds = funds
		m.forwarder = newForwarder(node, wallet, simNetwork{}, m.db, c.Dev, false, cluster, m.Clock, m.stats, log)
	case strings.HasPrefix(c.Lightning, "lnd://"):
		node, err := newLND(c.Lightning, m.db, cluster, m.Clock, log)
		if err != nil {
			return b, err
		}
		b.lightning = node
		if wallet != nil {
			// Addresses of lnd's wallet kept ahead for its outages
			// (docs/decisions.md, "On-chain payments without an xpub").
			if wallet.pool, err = lnd.NewPool(node, lnd.PoolConfig{Store: m.db, Size: c.AddressPool, Clock: m.Clock, Logger: log}); err != nil {
				return b, err
			}
			go wallet.pool.Run(runCtx)
		}
		_, onchain := b.chain.(*chainrpc.Chain)
		// lnd's wallet pays on-chain payouts.
		m.funds = node
		m.forwarder, m.forwards = newForwarder(node, node, node, m.db, c.Dev, onchain, cluster, m.Clock, m.stats, log), true
	default:
		return b, fmt.Errorf("--lightning %q: use sim or lnd://host:port?tls=…&macaroon=…", c.Lightning)
	}
	rateURLs, err := parseRateURLs(c.RatesURLs)
	if err != nil {
		return b, err
	}
	if b.rates, err = rates.FromOptions(c.Rates, rates.Options{
		BaseURLs: rateURLs, Clock: m.Clock, Logger: log, Refresh: c.RatesRefresh, MaxAge: c.RatesMaxAge,
	}); err != nil {
		return b, err
	}
	go b.rates.Run(runCtx)
	return b, nil
}

// forwardingCustody is the forwarder the actors hand stores' Lightning
// money to, nil where none forwards it (the simulated node).
func (m *Main) forwardingCustody() *actors.Forwarder {
	if !m.forwards {
		return nil
	}
	return m.forwarder
}

// startActors starts the actor system (joining the cluster in cluster
// mode), the watchers and sweepers, and wakes what was open at the last
// stop: invoices due soon, webhook deliveries and Lightning forwards.
func (m *Main) startActors(ctx, runCtx context.Context, clusterMode *clusterSettings, b backends) error {
	c, log := m.Config, m.log
	m.sys = actors.NewSystem(actors.Config{
		Journal: m.db, Reader: m.db, Chain: b.chain, Lightning: b.lightning, Rates: b.rates,
		Webhooks: newWebhookClient(c.Dev), WebhookSigAliases: c.WebhookSigAliases, Clock: m.Clock, Logger: log,
		InvoiceExpiry: c.InvoiceExpiry, Monitoring: c.Monitoring, Forwarder: m.forwardingCustody(),
		Claims: outboxClaims(m.db), ClaimHolder: nodeHolder(), Metrics: m.stats,
	})
	m.refunds = m.newRefunds(b)
	if p, ok := m.db.(pebbleStorage); ok {
		// Lightning creates reach the store one at a time, as lnd
		// releases them, and many creates under way commit briskly:
		// under either, their syncs wait to be shared.
		p.PaceSyncs(m.sys.Service.CreatesAwaitingLightning, m.sys.Service.CreatesUnderWay)
	}
	if clusterMode != nil {
		if err := joinCluster(ctx, runCtx, m.sys.Cluster, clusterMode, membersOf(m.db), log); err != nil {
			return err
		}
	}
	if err := m.startWatchers(runCtx, clusterMode != nil, b.chain, b.lightning); err != nil {
		return err
	}
	if b.sim != nil {
		what := "the chain and Lightning backends are simulated; no real bitcoin moves"
		if b.sim.chain == nil {
			what = "the Lightning backend is simulated; on-chain payments are real"
		}
		log.Warn("SIMULATION: "+what,
			"chain", c.Chain, "lightning", c.Lightning, "rates", b.rates.Source())
	}
	go m.sweepExpired(runCtx)
	// The deadline sweeper, the same on a single node and in a cluster
	// (docs/decisions.md, "One deadline mechanism"); Recover is its
	// first round.
	m.sys.Runtime.RunSweeper(runCtx)
	recovered, err := m.sys.Runtime.Recover(ctx)
	if err != nil {
		return fmt.Errorf("recover open invoices: %w", err)
	}
	pending, err := m.sys.Runtime.RecoverDeliveries(ctx)
	if err != nil {
		return fmt.Errorf("recover webhook deliveries: %w", err)
	}
	// recovered counts the invoices the first round claimed: those
	// whose deadline is near or past and that no other node's claim
	// holds; the other open invoices wake when asked or swept.
	log.Info("fired the deadlines due soon and found the pending webhook deliveries", "deadlinesClaimed", recovered, "deliveries", pending)
	if m.forwarder != nil {
		stores, err := m.forwarder.Recover(ctx)
		if err != nil {
			return fmt.Errorf("recover Lightning forwards: %w", err)
		}
		log.Info("resumed Lightning forwards", "stores", stores)
	}
	return nil
}

// listen starts the listeners: the debug and metrics ones when asked,
// then the HTTP server (API, pages, dashboard); with --dev it seeds the
// demo store.
func (m *Main) listen(ctx, runCtx context.Context, token string, cluster bool, b backends) error {
	c, log := m.Config, m.log
	if c.DebugListen != "" {
		srv, err := serveDebug(ctx, c, log)
		if err != nil {
			return err
		}
		m.debug = srv
	}
	if c.MetricsListen != "" {
		fetched, _ := b.rates.(interface{ Fetched() map[string]time.Time })
		g := metricsRegistry(m.stats, m.sys.Runtime, m.forwarder, b.chain, b.lightning, fetchedFunc(fetched), m.Clock, c.Data, append(storageCollectors(m.db), m.roles.collector())...)
		if c.MetricsListenAllowPublic {
			if _, err := metricsScope.check(ctx, c.MetricsListen, net.DefaultResolver.LookupNetIP); err != nil {
				log.Warn("metrics listener reachable beyond private networks: it has no authentication; firewall it",
					"addr", c.MetricsListen, "reason", err.Error(), "flag", "--"+allowPublicMetricsFlag)
			}
		}
		srv, addr, err := serveMetrics(c.MetricsListen, g, log)
		if err != nil {
			return err
		}
		m.metrics = srv
		log.Info("metrics listening", "addr", addr)
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	m.Addr = ln.Addr().String()
	publicURL := c.PublicURL
	if publicURL == "" {
		publicURL = "http://" + m.Addr
	}
	deps := kassahttp.Deps{
		Metrics: m.stats,
		Reader:  m.db, Stores: m.sys.Service, Invoices: m.sys.Service, PaymentRequests: m.sys.Service, Rates: b.rates, Webhooks: m.sys.Service, Keys: m.sys.Service,
		Chain: b.chain, Lightning: b.lightning, KV: m.db, Storage: m.db, Clock: m.Clock, Logger: log,
		PublicURL: publicURL, AdminToken: token, Version: Version,
		Limiter:        kassahttp.NewRateLimiter(c.RateLimit, c.RateBurst, m.Clock),
		PublicLimits:   c.publicLimits(),
		ClientIPHeader: c.ClientIPHeader,
		Backup:         newBackupFunc(c.Data, m.db, m.Clock),
		Refunds:        m.refunds,
		Payouts:        m.db,
		JournalFaults:  m.journalFaults,
	}
	if deps.TicketKey, err = ticketKey(ctx, m.db); err != nil {
		return err
	}
	// The simulation routes settle any invoice for anyone: --dev only.
	deps.Simulated = b.sim != nil
	if b.sim != nil && c.Dev {
		deps.Simulator = b.sim
	}
	deps.Operator = m.operatorPage()
	// Paid top-ups are credited on every node (docs/decisions.md,
	// "Top-ups credited once").
	topUps := topup.New(topup.Deps{Reader: m.db, Services: m.sys.Service, KV: m.db, Clock: m.Clock, Logger: log})
	go topUps.Run(runCtx, topUpEvery)
	dash, err := m.newDashboard(deps, topUps)
	if err != nil {
		return err
	}
	deps.Dashboard = dash
	deps.Greenfield = greenfield.NewHandler(greenfield.Deps{
		Reader: m.db, Invoices: m.sys.Service, Webhooks: m.sys.Service, Keys: m.sys.Service, Chain: b.chain, Lightning: b.lightning,
		Refunds: m.refunds, Payouts: m.db, Clock: m.Clock,
		PublicURL: publicURL, Logger: log, Limiter: deps.Limiter, ClientIPHeader: c.ClientIPHeader,
	})
	if cluster {
		deps.Cluster = m.clusterReport
		deps.StoreOwner = func(id string) any { return m.sys.Cluster.StoreOwner(id) }
	}
	m.server = &nethttp.Server{
		Handler:           kassahttp.NewHandler(deps),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// Lists stream everything in range; give large exports time.
		WriteTimeout:   10 * time.Minute,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
	}
	if c.Dev {
		// The demo store is written before the server answers, so that
		// a health check that gets 200 finds the node started: a
		// storage outage while it is written stops the node before
		// its health says ok.
		if err := m.seedDemo(ctx, publicURL); err != nil {
			ln.Close()
			return err
		}
	}
	go func() {
		if err := m.server.Serve(ln); err != nil && !errors.Is(err, nethttp.ErrServerClosed) {
			log.Error("http server", "err", err)
		}
	}()
	log.Info("kassa listening", "addr", m.Addr, "public_url", publicURL, "dashboard", strings.TrimRight(publicURL, "/")+"/dashboard", "data", c.Data, "version", Version)
	return nil
}

// demoStoreKey is the small record that names the demo store, so that a
// restart prints the same store and not whichever store sorts first.
const demoStoreKey = "kassa/demo-store"

// seedDemo creates a demo store on first start, remembers it, and prints
// how to use it: shell lines that set what the README walkthrough uses.
func (m *Main) seedDemo(ctx context.Context, publicURL string) error {
	var demo *kassa.Store
	id, ok, err := m.db.GetValue(ctx, demoStoreKey)
	if err != nil {
		return fmt.Errorf("read the demo store record: %w", err)
	}
	if ok {
		demo, err = m.db.Store(ctx, string(id))
		if err != nil && kassa.ErrorCode(err) != kassa.NotFound {
			return fmt.Errorf("read the demo store %s: %w", id, err)
		}
	}
	if demo == nil {
		if demo, err = m.sys.Service.CreateStore(ctx, kassa.StoreSettings{Name: "Demo Store", Currency: kassa.EUR,
			PercentFee: decimal.NewFromInt(1), ConfirmationsRequired: 1}); err != nil {
			return fmt.Errorf("seed demo store: %w", err)
		}
		if _, err := m.sys.Service.TopUp(ctx, demo.ID, 1_000_000, ""); err != nil {
			return fmt.Errorf("top up demo store: %w", err)
		}
		// The record never expires: the demo store is the demo store for
		// the life of the data directory.
		forever := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
		if err := m.db.PutValue(ctx, demoStoreKey, []byte(demo.ID), forever); err != nil {
			return fmt.Errorf("remember the demo store: %w", err)
		}
	}
	refundKey, err := m.demoRefundKey(ctx, demo)
	if err != nil {
		return err
	}
	data, err := filepath.Abs(m.Config.Data)
	if err != nil {
		data = m.Config.Data
	}
	fmt.Fprintf(m.Stdout, `
Dashboard: %s/dashboard (sign up; the first account is the operator)
Demo store (simulation): %s
Paste these lines into a second shell to follow the README walkthrough:

export KASSA_SERVER=%s KASSA_DATA=%s
export STORE=%s KEY=%s
export REFUND_KEY=%s

  try:   curl -s -X POST %s/api/v1/stores/$STORE/invoices -H "x-api-key: $KEY" -H 'Content-Type: application/json' -d '{"amount":"12.50","currency":"EUR"}'
  then:  %s sim pay INVOICE_ID
`, strings.TrimRight(publicURL, "/"), demo.ID, shellQuote("http://"+m.Addr), shellQuote(data), shellQuote(demo.ID), shellQuote(demo.APIKeys[0].Key),
		shellQuote(refundKey), publicURL, os.Args[0])
	return nil
}

// demoRefundKeyLabel labels the demo store's key that may refund.
const demoRefundKeyLabel = "demo refunds"

// demoRefundKey returns the key of the demo store that may also refund
// (make pull payments, approve payouts), made on first use: a store's
// first key may not, and --dev is the place for this convenience.
func (m *Main) demoRefundKey(ctx context.Context, demo *kassa.Store) (string, error) {
	for _, k := range demo.APIKeys {
		if k.Label == demoRefundKeyLabel {
			return k.Key, nil
		}
	}
	perms := append(slices.Clone(kassa.DefaultKeyPermissions), kassa.PermManagePullPayments, kassa.PermManagePayouts)
	k, err := m.sys.Service.CreateAPIKey(ctx, demo.ID, demoRefundKeyLabel, perms...)
	if err != nil {
		return "", fmt.Errorf("the demo store's refund key: %w", err)
	}
	return k.Key, nil
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@%+=,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// failureLinger is how long the service goes on answering once storage
// failed, before it exits: long enough for load balancers and monitors to
// read "degraded" from health, while every other request gets a 503 at
// once.
const failureLinger = 5 * time.Second

// Wait blocks until ctx ends (nil) or storage fails. After a failure it
// keeps answering (503 and a degraded health) for failureLinger, then
// returns the failure: the caller closes Main and exits non-zero, and the
// supervisor's restart replays what the disk holds (docs/decisions.md, "A
// failed disk write stops the process").
func (m *Main) Wait(ctx context.Context) error {
	if m.db == nil {
		<-ctx.Done()
		return nil
	}
	select {
	case <-ctx.Done():
		return nil
	case <-m.db.Failed():
	}
	err := m.db.Err()
	m.log.Error("storage failed: answering 503 and exiting so that a restart recovers from what the disk holds",
		"err", err.Error(), "exit_in", failureLinger)
	select {
	case <-ctx.Done():
	case <-time.After(failureLinger):
	}
	return err
}

// Close stops the server, the actors and storage, in that order.
func (m *Main) Close() error {
	var errs []error
	errs = append(errs, m.drain()) // see shutdown.go
	if m.metrics != nil {
		errs = append(errs, m.metrics.Close())
	}
	if m.debug != nil {
		errs = append(errs, m.debug.Close())
	}
	if m.sys != nil {
		m.sys.Runtime.Shutdown()
	}
	if m.forwarder != nil {
		m.forwarder.Shutdown()
	}
	// The lease runners release their roles as they stop.
	m.roles.wait(5 * time.Second)
	if m.db != nil {
		errs = append(errs, m.db.Close())
	}
	if m.telemetry != nil {
		errs = append(errs, m.telemetry(context.Background()))
	}
	err := errors.Join(errs...)
	if m.log != nil {
		if err != nil {
			m.log.Error("kassa stopped", "uptime", time.Since(m.started).Round(time.Second), "err", err)
		} else {
			m.log.Info("kassa stopped", "uptime", time.Since(m.started).Round(time.Second))
		}
	}
	return err
}

// adminToken reads DIR/admin.token, creating it on first start (and
// replacing one too short to be a token). The file ends up mode 0600
// whatever mode it had: os.WriteFile keeps the mode of a file that
// exists.
func adminToken(dir string) (string, error) {
	path := filepath.Join(dir, "admin.token")
	token := ""
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		token = strings.TrimSpace(string(b))
	} else {
		token = kassa.NewSecret()
		if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("write admin token: %w", err)
		}
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	return token, nil
}

// simulator drives the simulated backends for `kassa sim` and the
// checkout page's simulation buttons.
type simulator struct {
	chain *chainsim.Chain
	node  *lnsim.Node
}

func (s *simulator) Pay(ctx context.Context, inv *kassa.Invoice, method kassa.PaymentMethod, amount kassa.Sats) (string, error) {
	switch method {
	case kassa.MethodLightning:
		if s.node == nil || inv.LightningInvoice == "" {
			return "", kassa.Errorf(kassa.Invalid, "invoice %s has no simulated Lightning invoice", inv.ID)
		}
		return s.node.Pay(ctx, inv.LightningInvoice, amount.MSat())
	case kassa.MethodOnchain:
		if s.chain == nil || inv.OnchainAddress == "" {
			return "", kassa.Errorf(kassa.Invalid, "invoice %s has no simulated on-chain address", inv.ID)
		}
		if amount == 0 {
			amount = inv.Amount - inv.TotalPaid()
			if amount <= 0 {
				return "", kassa.Errorf(kassa.Invalid, "invoice %s has nothing left to pay; give --amount", inv.ID)
			}
		}
		return s.chain.Pay(ctx, inv.OnchainAddress, amount)
	}
	return "", kassa.Errorf(kassa.Invalid, "unknown payment method")
}

func (s *simulator) Mine(ctx context.Context, n int) (int64, error) {
	if s.chain == nil {
		return 0, kassa.Errorf(kassa.Invalid, "the chain is not simulated")
	}
	return s.chain.Mine(ctx, n)
}

// parseRateURLs reads --rates-url NAME=URL,NAME=URL.
func parseRateURLs(spec string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range strings.Split(spec, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		name, url, ok := strings.Cut(pair, "=")
		if !ok || name == "" || url == "" {
			return nil, fmt.Errorf("--rates-url %q: use NAME=URL,NAME=URL", pair)
		}
		out[strings.TrimSpace(name)] = strings.TrimSpace(url)
	}
	return out, nil
}

// sweepExpired deletes expired idempotency records and the request
// records older than kassa.RequestWindow every ten minutes.
func (m *Main) sweepExpired(ctx context.Context) {
	t := time.NewTicker(10 * time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := m.db.SweepExpired(ctx, m.Clock.Now()); err != nil {
				m.log.Error("sweep expired records", "err", err)
			} else if n > 0 {
				m.log.Debug("swept expired records", "count", n)
			}
		}
	}
}

// journalFaults lists, for the health check, the journals this node
// found not to replay.
func (m *Main) journalFaults() []string {
	var out []string
	for _, f := range m.sys.Runtime.JournalFaults() {
		out = append(out, f.Error())
	}
	return out
}
