package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/wire"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/chain/derive"
)

var _ kassa.Chain = (*Chain)(nil)

// GapLimit is how many consecutive unused addresses wallets scan past
// before they stop looking, unless the store names its wallet's own
// (kassa.Store.GapLimit): more than that, and a restored wallet may miss
// payments.
const GapLimit = kassa.WalletGapLimit

// Config is what the watcher needs besides the node.
type Config struct {
	Conn Conn
	// Node overrides the JSON-RPC client made from Conn (tests).
	Node Node
	// State keeps the cursor and the followed payments.
	State kassa.KeyValue
	// Reader finds the open invoices whose addresses to watch at start.
	// A Reader that is also a kassa.AddressFeed gives them for all
	// stores in a few paged reads, and in a cluster gives each pass the
	// addresses other nodes handed out in one read.
	Reader kassa.Reader
	// Expiry and Monitoring say how long a new invoice's address is
	// watched: until its expiry plus the monitoring window.
	Expiry, Monitoring time.Duration
	Clock              kassa.Clock
	Logger             *slog.Logger
	// Wallet, when set, gives the addresses of stores without an xpub:
	// receive addresses of the service's own wallet (its lnd's, through
	// the address pool that outlasts an lnd outage), watched like
	// derived ones. Nil refuses on-chain invoices of such stores.
	Wallet Wallet
	// Cluster says that several nodes share the store (cluster mode):
	// the watcher runs through Watch, on the node that holds the
	// chain-watcher lease; every node hands out addresses, so each pass
	// first watches the invoices created since the last one; and health
	// says "standby" while another node watches (docs/decisions.md,
	// "Watcher leases with epoch fencing").
	Cluster bool
}

// Wallet gives the addresses of stores without an xpub.
type Wallet interface {
	// Address returns an unused address of the wallet for invoiceID. A
	// kassa.ErrNoWalletAddress passes on as it is: it names the
	// Lightning node, not the chain.
	Address(ctx context.Context, invoiceID string) (string, error)
}

// WalletPool is a Wallet that keeps addresses ahead for its outages
// (lightning/lnd.AddressPool); health says how many are left.
type WalletPool interface {
	Wallet
	Left(ctx context.Context) (int, error)
}

// WalletFunc is a Wallet of a function.
type WalletFunc func(ctx context.Context, invoiceID string) (string, error)

// Address calls f.
func (f WalletFunc) Address(ctx context.Context, invoiceID string) (string, error) {
	return f(ctx, invoiceID)
}

// sharedSlack is how far back each pass of a cluster's watcher looks for
// invoices that other nodes created: an invoice stamped before the last
// pass may be committed after it, and nodes' clocks differ.
const sharedSlack = time.Minute

// Chain is the on-chain backend that watches a real node.
type Chain struct {
	conn    Conn
	node    Node
	client  *Client
	kv      kassa.KeyValue
	reader  kassa.Reader
	clock   kassa.Clock
	log     *slog.Logger
	expiry  time.Duration
	monitor time.Duration
	wallet  Wallet

	matcher *Matcher
	gap     gapTracker
	health  health
	wake    chan struct{}

	accountsMu sync.Mutex
	accounts   map[string]*derive.Account

	startOnce sync.Once
	done      chan struct{}

	cluster bool
	// pruned is when the matcher last forgot addresses past their
	// window (Unix nanoseconds).
	pruned atomic.Int64
	// refreshed is when the last pass of a cluster's watcher looked for
	// other nodes' invoices; only the watching goroutine uses it.
	refreshed time.Time
	// feed, when the reader is one, gives a cluster's watcher the
	// addresses committed since feedCursor (taken before the addresses
	// were loaded; feedOK once it is) in one read for all stores.
	feed       kassa.AddressFeed
	feedCursor int64
	feedOK     bool
}

// New returns a chain backend for the node of cfg.Conn. It does not
// connect until Start.
func New(cfg Config) (*Chain, error) {
	if cfg.Clock == nil {
		cfg.Clock = kassa.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Conn.Params == nil {
		return nil, errors.New("chain rpc: no network")
	}
	if cfg.Conn.Poll <= 0 {
		cfg.Conn.Poll = DefaultPoll
	}
	if cfg.Expiry <= 0 {
		cfg.Expiry = kassa.DefaultInvoiceExpiry
	}
	if cfg.Monitoring <= 0 {
		cfg.Monitoring = kassa.DefaultMonitoring
	}
	c := &Chain{
		conn: cfg.Conn, node: cfg.Node, kv: cfg.State, reader: cfg.Reader,
		clock: cfg.Clock, log: cfg.Logger.With("component", "chain"),
		expiry: cfg.Expiry, monitor: cfg.Monitoring, wallet: cfg.Wallet,
		matcher: NewMatcher(), wake: make(chan struct{}, 1),
		accounts: make(map[string]*derive.Account), done: make(chan struct{}),
		cluster: cfg.Cluster,
	}
	c.feed, _ = cfg.Reader.(kassa.AddressFeed)
	if c.cluster && cfg.Reader != nil && c.feed == nil {
		c.log.Warn("chain watcher: the store gives no address feed: each pass of the cluster's watcher reads every store's recent invoices")
	}
	c.gap.init()
	c.health.network = cfg.Conn.Network
	c.health.standby = cfg.Cluster
	if c.node == nil {
		client, err := cfg.Conn.Client()
		if err != nil {
			return nil, fmt.Errorf("chain rpc: %s", cfg.Conn.redact(err.Error()))
		}
		c.client, c.node = client, client
	}
	return c, nil
}

func (c *Chain) stateKey() string { return "chain/rpc/" + c.conn.Network }

// Params are the parameters of the node's network.
func (c *Chain) Params() *chaincfg.Params { return c.conn.Params }

// account returns the parsed account key of store.
func (c *Chain) account(store *kassa.Store) (*derive.Account, error) {
	typ, err := derive.ParseType(store.XpubType)
	if err != nil {
		return nil, err
	}
	key := string(typ) + "\x00" + strings.TrimSpace(store.Xpub)
	c.accountsMu.Lock()
	a := c.accounts[key]
	c.accountsMu.Unlock()
	if a != nil {
		return a, nil
	}
	if a, err = derive.Parse(store.Xpub, typ, c.conn.Params); err != nil {
		return nil, err
	}
	c.accountsMu.Lock()
	c.accounts[key] = a
	c.accountsMu.Unlock()
	return a, nil
}

// CheckXpub reports whether xpub of typ gives addresses on the node's
// network and is not the account key of another store, for store
// creation: two stores deriving from one key would hand out the same
// addresses, and a payment could not tell their invoices apart.
func (c *Chain) CheckXpub(xpub, typ string) error {
	a, err := c.account(&kassa.Store{Xpub: xpub, XpubType: typ})
	if err != nil || c.reader == nil {
		return err
	}
	errTaken := errors.New("taken")
	err = c.reader.Stores(context.Background(), func(st *kassa.Store) error {
		if strings.TrimSpace(st.Xpub) == "" {
			return nil
		}
		other, err := derive.Parse(st.Xpub, derive.SegWit, c.conn.Params)
		if err != nil {
			return nil
		}
		if same, _ := derive.SameKey(a, other); same {
			return errTaken
		}
		return nil
	})
	if errors.Is(err, errTaken) {
		return kassa.Errorf(kassa.Invalid, "this xpub is already the key of another store: give each store its own account key")
	}
	return err
}

// NewAddress returns the receive address of store's xpub at the index the
// store allocated (store.NextAddressIndex) and starts watching it. It
// needs no node: addresses are handed out during an outage too.
func (c *Chain) NewAddress(ctx context.Context, store *kassa.Store, invoiceID string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if store != nil && strings.TrimSpace(store.Xpub) == "" && c.wallet != nil {
		return c.walletAddress(ctx, store, invoiceID)
	}
	if store == nil || strings.TrimSpace(store.Xpub) == "" {
		return "", kassa.Errorf(kassa.Invalid, "the store has no xpub: on-chain invoices need one (kassa store create --xpub)")
	}
	a, err := c.account(store)
	if err != nil {
		return "", err
	}
	index := store.NextAddressIndex
	addr, err := a.Address(index)
	if err != nil {
		return "", fmt.Errorf("address m/0/%d of store %s: %w", index, store.ID, err)
	}
	script, err := derive.Script(addr)
	if err != nil {
		return "", err
	}
	address := addr.EncodeAddress()
	c.matcher.add(script, &watch{
		address: address, storeID: store.ID, index: int64(index),
		until:         c.clock.Now().Add(c.expiry + c.monitor + time.Hour),
		confirmations: store.ConfirmationsRequired,
	})
	c.gap.setLimit(store)
	if warn := c.gap.allocate(store.ID, int64(index)); warn != "" {
		c.log.Warn("gap limit", "store", store.ID, "detail", warn)
	}
	c.prune()
	c.Wake()
	return address, nil
}

// walletAddress returns a fresh address of the service's wallet for an
// invoice of store (which has no xpub) and starts watching it. The
// address must be of the node's network: a wallet on another network
// would take payments the watcher never sees.
func (c *Chain) walletAddress(ctx context.Context, store *kassa.Store, invoiceID string) (string, error) {
	address, err := c.wallet.Address(ctx, invoiceID)
	if errors.Is(err, kassa.ErrNoWalletAddress) {
		return "", err
	}
	if err != nil {
		return "", kassa.Errorf(kassa.Unavailable, "the service wallet gives no address: %v", err)
	}
	addr, err := btcutil.DecodeAddress(address, c.conn.Params)
	if err != nil || !addr.IsForNet(c.conn.Params) {
		return "", fmt.Errorf("the service wallet gave %q, not an address of %s", address, c.conn.Network)
	}
	script, err := derive.Script(addr)
	if err != nil {
		return "", err
	}
	c.matcher.add(script, &watch{
		address: address, storeID: store.ID, index: -1,
		until:         c.clock.Now().Add(c.expiry + c.monitor + time.Hour),
		confirmations: store.ConfirmationsRequired,
	})
	c.prune()
	c.Wake()
	return address, nil
}

// Wake makes the watcher poll now.
func (c *Chain) Wake() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Start loads the cursor and the watched addresses, then follows the
// node until ctx ends, delivering events to handle. It returns once the
// addresses are loaded; the node may be down. A cluster's node calls
// Watch instead, under the chain-watcher lease.
func (c *Chain) Start(ctx context.Context, handle func(context.Context, kassa.ChainEvent) error) error {
	if handle == nil {
		return errors.New("start chain watcher: no handler")
	}
	started := false
	var err error
	c.startOnce.Do(func() {
		started = true
		var w *watcher
		if w, err = c.prepare(ctx, nil); err != nil {
			return
		}
		go c.notifications(ctx)
		go func() {
			defer close(c.done)
			defer func() {
				if c.client != nil {
					c.client.Close()
				}
			}()
			c.run(ctx, w, handle)
		}()
	})
	if !started {
		return errors.New("chain watcher already started")
	}
	return err
}

// Watch follows the node as Start does, but in the caller's goroutine and
// with its cursor in kv, until ctx ends: it is the work of the
// chain-watcher lease (lease.Runner), kv the lease's fenced store. It
// resumes from the cursor the previous holder saved; when a cursor write
// is refused because another node took the lease, the Runner ends ctx
// and Watch returns. One Watch runs at a time.
func (c *Chain) Watch(ctx context.Context, kv kassa.KeyValue, handle func(context.Context, kassa.ChainEvent) error) error {
	if handle == nil || kv == nil {
		return errors.New("watch the chain: no handler or no cursor store")
	}
	c.health.setStandby(false)
	defer c.health.setStandby(true)
	c.refreshed = time.Time{}
	w, err := c.prepare(ctx, kv)
	if err != nil {
		return err
	}
	notifyCtx, stop := context.WithCancel(ctx)
	defer stop()
	go c.notifications(notifyCtx)
	c.run(ctx, w, handle)
	return nil
}

// prepare loads the cursor from kv (nil: Config.State) and the watched
// addresses, and saves a first cursor when there was none.
func (c *Chain) prepare(ctx context.Context, kv kassa.KeyValue) (*watcher, error) {
	w := &watcher{c: c, node: c.node, log: c.log, clock: c.clock, trace: tracer, kv: kv}
	resumed, err := w.load(ctx)
	if err != nil {
		return nil, err
	}
	c.feedOK = false
	if c.cluster && c.feed != nil {
		// Taken before the load: what commits after it was read comes
		// through the feed.
		if c.feedCursor, err = c.feed.AddressCursor(ctx); err != nil {
			return nil, fmt.Errorf("chain watcher: %w", err)
		}
	}
	if err := c.loadWatched(ctx); err != nil {
		return nil, err
	}
	if c.cluster {
		c.refreshed = c.clock.Now()
		c.feedOK = c.feed != nil
	}
	if !resumed {
		w.beginNow(ctx)
	}
	c.log.Info("chain watcher started", "network", c.conn.Network, "node", c.conn.Host,
		"watched", c.matcher.Len(), "resumed", resumed, "cursor", w.st.height, "poll", c.conn.Poll.String())
	return w, nil
}

// Done is closed when the watcher stopped after its context ended.
func (c *Chain) Done() <-chan struct{} { return c.done }

func (c *Chain) run(ctx context.Context, w *watcher, handle func(context.Context, kassa.ChainEvent) error) {
	for ctx.Err() == nil {
		err := w.pass(ctx, handle)
		if ctx.Err() != nil {
			return
		}
		c.health.setErr(err, c.conn)
		if err != nil {
			c.log.Warn("chain watcher pass", "err", c.conn.redact(err.Error()))
		}
		c.prune()
		c.health.gapWarnings(c.gap.warnings())
		if errors.Is(err, errBranchMoved) {
			continue
		}
		wakeable(ctx, c.conn.Poll, c.wake)
	}
}

// prune forgets the addresses past their monitoring window, at most once
// a minute. The watcher prunes after each pass; NewAddress does too, so
// that the matcher of a cluster's standby node, which hands out
// addresses but runs no pass, does not grow for good.
func (c *Chain) prune() {
	now := c.clock.Now()
	last := c.pruned.Load()
	if last == 0 {
		c.pruned.CompareAndSwap(0, now.UnixNano())
		return
	}
	if now.Sub(time.Unix(0, last)) <= time.Minute || !c.pruned.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	if n := c.matcher.prune(now); n > 0 {
		c.log.Info("stopped watching addresses past their monitoring window", "count", n)
	}
}

// refreshShared watches the addresses of the invoices other nodes of a
// cluster committed since the last pass; on a single node every address
// comes through NewAddress and it does nothing. Over an AddressFeed it
// costs one read of the new addresses, a page at a time, whatever the
// number of stores; over another reader, one read of the stores and one
// of each store's invoices created since the last pass less
// sharedSlack.
func (c *Chain) refreshShared(ctx context.Context) error {
	if !c.cluster || c.reader == nil {
		return nil
	}
	if c.feedOK {
		return c.readFeed(ctx)
	}
	now := c.clock.Now()
	since := c.refreshed.Add(-sharedSlack)
	window := c.expiry + c.monitor + time.Hour
	if c.refreshed.IsZero() || now.Sub(since) > window {
		since = now.Add(-window)
	}
	var stores []string
	if err := c.reader.Stores(ctx, func(st *kassa.Store) error {
		stores = append(stores, st.ID)
		return nil
	}); err != nil {
		return fmt.Errorf("chain watcher: stores: %w", err)
	}
	for _, id := range stores {
		_, err := c.reader.Invoices(ctx, id, kassa.ListQuery{From: since}, func(inv *kassa.Invoice) error {
			if until := inv.CreatedAt.Add(window); until.After(now) {
				c.watchInvoice(inv, until)
				if inv.DerivationIndex != nil {
					c.gap.allocate(inv.StoreID, int64(*inv.DerivationIndex))
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("chain watcher: recent invoices of store %s: %w", id, err)
		}
	}
	c.refreshed = now
	return nil
}

// readFeed watches the addresses the feed gives since the last pass,
// logging its progress when there are many (a watcher that took over
// after a long pause).
func (c *Chain) readFeed(ctx context.Context) error {
	now := c.clock.Now()
	window := c.expiry + c.monitor + time.Hour
	start, n := time.Now(), 0
	next, err := c.feed.NewAddresses(ctx, c.feedCursor, func(a kassa.WatchedAddress) error {
		if n++; n%feedProgress == 0 {
			c.log.Info("chain watcher: reading new addresses", "read", n, "elapsed", time.Since(start).Round(time.Millisecond))
		}
		until := a.CreatedAt.Add(window)
		if !until.After(now) {
			return nil
		}
		c.watchAddress(a.Address, &watch{address: a.Address, storeID: a.StoreID, index: a.Index, until: until, confirmations: a.Confirmations})
		if a.Index >= 0 {
			c.gap.allocate(a.StoreID, a.Index)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("chain watcher: new addresses: %w", err)
	}
	if n >= feedProgress {
		c.log.Info("chain watcher: read new addresses", "read", n, "elapsed", time.Since(start).Round(time.Millisecond))
	}
	c.feedCursor, c.refreshed = next, now
	return nil
}

// loadProgress is how many stores loadWatched reads between progress
// logs; loadFeed logs at as many addresses, then by feedProgress.
const loadProgress = 1000

// feedProgress is how many addresses readFeed reads between progress
// logs.
const feedProgress = 100_000

// watchInvoice watches inv's on-chain address until the given time.
func (c *Chain) watchInvoice(inv *kassa.Invoice, until time.Time) {
	if inv.OnchainAddress == "" {
		return
	}
	index := int64(-1)
	if inv.DerivationIndex != nil {
		index = int64(*inv.DerivationIndex)
	}
	c.watchAddress(inv.OnchainAddress, &watch{
		address: inv.OnchainAddress, storeID: inv.StoreID, index: index,
		until: until, confirmations: inv.ConfirmationsRequired,
	})
}

// watchAddress watches address for w.
func (c *Chain) watchAddress(address string, w *watch) {
	addr, err := btcutil.DecodeAddress(address, c.conn.Params)
	if err != nil {
		return // an address of another network: not ours to watch
	}
	script, err := derive.Script(addr)
	if err != nil {
		return
	}
	c.matcher.add(script, w)
}

// loadWatched watches again what the watcher watched before a restart:
// the address of every invoice that waits for a timer (open ones and
// expired ones inside their monitoring window), and the address of every
// invoice created within the window NewAddress watches a fresh address
// for, whatever its state, so that money paid again to a settled
// invoice's address is found after a restart as it was before it. Over
// an AddressFeed it reads them for all stores at once (loadFeed); over
// another reader, each store's recent invoices and each open invoice.
func (c *Chain) loadWatched(ctx context.Context) error {
	if c.reader == nil {
		return nil
	}
	watchInvoice := c.watchInvoice
	window := c.expiry + c.monitor + time.Hour
	now := c.clock.Now()
	var stores []string
	err := c.reader.Stores(ctx, func(st *kassa.Store) error {
		c.gap.setLimit(st)
		if st.NextAddressIndex > 0 {
			c.gap.allocate(st.ID, int64(st.NextAddressIndex)-1)
		}
		stores = append(stores, st.ID)
		return nil
	})
	if err != nil {
		return fmt.Errorf("chain watcher: load stores: %w", err)
	}
	if c.feed != nil {
		return c.loadFeed(ctx, now, window)
	}
	start := time.Now()
	for i, id := range stores {
		_, err := c.reader.Invoices(ctx, id, kassa.ListQuery{From: now.Add(-window)}, func(inv *kassa.Invoice) error {
			if until := inv.CreatedAt.Add(window); until.After(now) {
				watchInvoice(inv, until)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("chain watcher: load recent invoices of store %s: %w", id, err)
		}
		if (i+1)%loadProgress == 0 {
			c.log.Info("chain watcher: loading watched addresses", "stores", i+1, "of", len(stores),
				"watched", c.matcher.Len(), "elapsed", time.Since(start).Round(time.Millisecond))
		}
	}
	err = c.reader.OpenInvoices(ctx, func(id, storeID string, _ time.Time) error {
		inv, err := c.reader.Invoice(ctx, id)
		if err != nil {
			return err
		}
		if !inv.MonitoringDone {
			watchInvoice(inv, inv.MonitorUntil.Add(time.Hour))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("chain watcher: load open invoices: %w", err)
	}
	return nil
}

// loadFeed is loadWatched over an AddressFeed: one paged read, for all
// stores, of the addresses of the invoices created within the window
// and of the older ones that wait for a timer. An invoice's deadline
// is its expiry while New and the end of its monitoring after, which
// the feed does not tell apart: its address is watched as if a
// monitoring began at the deadline (the longer of the configured and
// the default one, which a reverted settlement sets), an hour more as
// NewAddress gives, which covers both.
func (c *Chain) loadFeed(ctx context.Context, now time.Time, window time.Duration) error {
	monitor := max(c.monitor, kassa.DefaultMonitoring) + time.Hour
	start, n := time.Now(), 0
	err := c.feed.WatchedAddresses(ctx, now.Add(-window), func(a kassa.WatchedAddress) error {
		if n++; n == loadProgress || n%feedProgress == 0 {
			c.log.Info("chain watcher: loading watched addresses", "read", n,
				"watched", c.matcher.Len(), "elapsed", time.Since(start).Round(time.Millisecond))
		}
		until := a.CreatedAt.Add(window)
		if !a.Deadline.IsZero() {
			until = maxTime(until, a.Deadline.Add(monitor))
		}
		if !until.After(now) {
			return nil
		}
		c.watchAddress(a.Address, &watch{address: a.Address, storeID: a.StoreID, index: a.Index, until: until, confirmations: a.Confirmations})
		return nil
	})
	if err != nil {
		return fmt.Errorf("chain watcher: load watched addresses: %w", err)
	}
	if n >= loadProgress {
		c.log.Info("chain watcher: loaded watched addresses", "read", n,
			"watched", c.matcher.Len(), "elapsed", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// maxTime is the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// notifications wakes the poll when a btcd node announces a block over
// its websocket. Nodes without it (bitcoind) are polled only.
func (c *Chain) notifications(ctx context.Context) {
	if c.client == nil || c.conn.Cookie != "" {
		return
	}
	cfg := &rpcclient.ConnConfig{
		Host: c.conn.Host, Endpoint: "ws", User: c.conn.User, Pass: c.conn.Pass,
		DisableTLS: c.conn.NoTLS, DisableAutoReconnect: false,
	}
	if c.conn.Cert != "" && !c.conn.NoTLS {
		pem, err := os.ReadFile(c.conn.Cert)
		if err != nil {
			return
		}
		cfg.Certificates = pem
	}
	handlers := &rpcclient.NotificationHandlers{
		OnFilteredBlockConnected:    func(int32, *wire.BlockHeader, []*btcutil.Tx) { c.Wake() },
		OnFilteredBlockDisconnected: func(int32, *wire.BlockHeader) { c.Wake() },
		OnTxAccepted:                func(*chainhash.Hash, btcutil.Amount) { c.Wake() },
	}
	ws, err := rpcclient.New(cfg, handlers)
	if err != nil {
		c.log.Debug("no websocket notifications from the node; polling only", "err", c.conn.redact(err.Error()))
		return
	}
	if err := ws.NotifyBlocks(); err != nil {
		ws.Shutdown()
		c.log.Debug("no websocket notifications from the node; polling only", "err", c.conn.redact(err.Error()))
		return
	}
	// New mempool transactions wake the poll too (btcd only).
	_ = ws.NotifyNewTransactions(false)
	<-ctx.Done()
	ws.Shutdown()
}

// Info describes the node and how far the watcher follows it.
func (c *Chain) Info(ctx context.Context) kassa.BackendInfo {
	info := c.health.info()
	c.health.mu.Lock()
	standby := c.health.standby
	c.health.mu.Unlock()
	if standby {
		info = c.standbyInfo(ctx, info)
	}
	if pool, ok := c.wallet.(WalletPool); ok {
		var warning string
		if left, err := pool.Left(ctx); err != nil {
			warning = "the address pool cannot be read: " + err.Error()
		} else {
			info.AddressPool = &left
			if left == 0 {
				warning = "the address pool of lnd's wallet is empty: while lnd is unreachable, stores without an xpub get no invoice"
			}
		}
		if warning != "" && info.Warning != "" {
			warning = info.Warning + "; " + warning
		}
		if warning != "" {
			info.Warning = warning
		}
	}
	return info
}

// scriptOf returns the output script of address on params' network.
func scriptOf(address string, params *chaincfg.Params) ([]byte, error) {
	addr, err := btcutil.DecodeAddress(address, params)
	if err != nil {
		return nil, err
	}
	return derive.Script(addr)
}

// nodeDown records that the node could not be reached.
func (c *Chain) nodeDown(err error) error {
	return fmt.Errorf("node %s unreachable: %w", c.conn.Host, err)
}
