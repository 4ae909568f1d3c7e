// Package lnd is Kassa's Lightning backend on a real lnd node, over its
// gRPC interface (lnrpc, invoicesrpc, routerrpc): it creates and cancels
// invoices, watches them settle, and pays the invoices that forward the
// money to stores' Lightning addresses.
//
// Watching resumes from a cursor, lnd's settle_index, kept in the
// service's key-value store. The cursor moves past a settle only once the
// handler returned nil, that is once the invoice actor made the settle
// durable; a settle whose handler failed is retried with backoff and
// never skipped. On every (re)connection the backend also looks up every
// open invoice's payment hash, since lnd has lost or delayed settle
// notifications before (docs/decisions.md, "Lightning on lnd").
//
// AddressPool gives the on-chain addresses of stores without an xpub
// from lnd's wallet, with addresses taken ahead for lnd's outages
// (docs/decisions.md, "On-chain payments without an xpub").
package lnd

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc"
)

var _ kassa.Lightning = (*Node)(nil)

// DefaultCursorKey is where the settle_index cursor is kept.
const DefaultCursorKey = "lnd/settle_index"

// cursorLife is how long the cursor record lives in the key-value store:
// for good.
var cursorLife = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// Config configures a Node.
type Config struct {
	// Cursor keeps the settle_index; required.
	Cursor kassa.KeyValue
	// CursorKey names the cursor record; empty means DefaultCursorKey.
	CursorKey string
	// OpenPaymentHashes calls fn with the payment hash of every invoice
	// that still waits for its payment; the reconcile pass after each
	// (re)connection looks them up. Nil skips the pass.
	OpenPaymentHashes func(ctx context.Context, fn func(paymentHash string) error) error
	Clock             kassa.Clock
	Logger            *slog.Logger
	// MinBackoff and MaxBackoff bound the wait before a reconnection or
	// a retried handler; zero means 500 ms and 30 s.
	MinBackoff, MaxBackoff time.Duration
	// CallTimeout bounds one unary call; zero means 15 s.
	CallTimeout time.Duration
	// Cluster says that the service runs as a cluster: the invoice
	// watcher runs through Watch, on the node that holds the
	// lightning-watcher lease, and health says "standby" while another
	// node watches. Creating and cancelling invoices works on every node.
	Cluster bool
}

// Node is the lnd backend. It is safe for concurrent use.
type Node struct {
	rpc RPC
	cfg Config
	log *slog.Logger

	mu        sync.Mutex
	connected bool   // the invoice stream is up
	lastErr   string // why it is not
	network   string
	// standby is set on a cluster's node while another node watches.
	standby bool
}

// New returns a Node on rpc.
func New(rpc RPC, cfg Config) (*Node, error) {
	if rpc == nil || cfg.Cursor == nil {
		return nil, errors.New("lightning: lnd backend needs an RPC connection and a cursor store")
	}
	if cfg.CursorKey == "" {
		cfg.CursorKey = DefaultCursorKey
	}
	if cfg.Clock == nil {
		cfg.Clock = kassa.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 500 * time.Millisecond
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 15 * time.Second
	}
	return &Node{rpc: rpc, cfg: cfg, log: cfg.Logger.With("component", "lnd"), lastErr: "not connected yet", standby: cfg.Cluster}, nil
}

// RPC returns the node's connection, for the payer of forwards.
func (n *Node) RPC() RPC { return n.rpc }

// Close closes the connection to lnd.
func (n *Node) Close() error { return n.rpc.Close() }

// CreateInvoice adds an invoice to lnd for amount (zero: any amount), with
// memo as its description, expiring after expiry rounded up to whole
// seconds (zero: lnd's default of a day).
func (n *Node) CreateInvoice(ctx context.Context, amount kassa.MSat, memo string, expiry time.Duration) (kassa.LightningInvoice, error) {
	if amount < 0 || amount > kassa.MaxSats.MSat() {
		return kassa.LightningInvoice{}, kassa.Errorf(kassa.Invalid, "the amount must be between 0 and 21 million bitcoin")
	}
	if expiry < 0 {
		return kassa.LightningInvoice{}, kassa.Errorf(kassa.Invalid, "the invoice expiry must not be negative")
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.CallTimeout)
	defer cancel()
	secs := int64((expiry + time.Second - 1) / time.Second)
	res, err := n.rpc.AddInvoice(ctx, &lnrpc.Invoice{Memo: cleanMemo(memo), ValueMsat: int64(amount), Expiry: secs})
	if err != nil {
		return kassa.LightningInvoice{}, fmt.Errorf("lnd AddInvoice: %w", err)
	}
	return kassa.LightningInvoice{PaymentRequest: res.PaymentRequest, PaymentHash: hex.EncodeToString(res.RHash)}, nil
}

// CancelInvoice cancels the open invoice with paymentHash. An invoice
// that is unknown, already cancelled or settled is left as it is.
func (n *Node) CancelInvoice(ctx context.Context, paymentHash string) error {
	hash, err := hex.DecodeString(paymentHash)
	if err != nil || len(hash) != 32 {
		return nil // no invoice of lnd has such a hash
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.CallTimeout)
	defer cancel()
	err = n.rpc.CancelInvoice(ctx, hash)
	if err != nil && containsAny(err, "unable to locate invoice", "not found", "already settled", "already canceled", "already cancelled") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lnd CancelInvoice: %w", err)
	}
	return nil
}

// NewAddress returns a fresh receive address (P2WPKH) of lnd's on-chain
// wallet: the address of an on-chain invoice of a store without an xpub,
// whose payment the chain watcher follows and forwarding sends on.
func (n *Node) NewAddress(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.CallTimeout)
	defer cancel()
	addr, err := n.rpc.NewAddress(ctx)
	if err != nil {
		return "", fmt.Errorf("lnd NewAddress: %s", grpcMessage(err))
	}
	return addr, nil
}

// Info asks lnd how it is; an unreachable lnd is reported in Error.
func (n *Node) Info(ctx context.Context) kassa.BackendInfo {
	info := kassa.BackendInfo{Backend: "lnd"}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	res, err := n.rpc.GetInfo(ctx)
	if err != nil {
		info.Error = "lnd is unreachable: " + grpcMessage(err)
		// The network does not change while lnd is away.
		n.mu.Lock()
		info.Network = n.network
		n.mu.Unlock()
		return info
	}
	if len(res.Chains) > 0 {
		info.Network = res.Chains[0].Network
		n.mu.Lock()
		n.network = info.Network
		n.mu.Unlock()
	}
	info.Height = int64(res.BlockHeight)
	n.mu.Lock()
	connected, lastErr, standby := n.connected, n.lastErr, n.standby
	n.mu.Unlock()
	if standby {
		// Another node of the cluster watches the invoices.
		info.Synced = res.SyncedToChain
		info.Warning = "standby: the invoice watcher runs on the node holding the lightning-watcher lease (see cluster.leases)"
		if !res.SyncedToChain {
			info.Error = "lnd is not synced to the chain"
		}
		return info
	}
	info.Synced = res.SyncedToChain && connected
	if !connected {
		info.Error = "invoice stream down: " + lastErr
	} else if !res.SyncedToChain {
		info.Error = "lnd is not synced to the chain"
	}
	return info
}

// Network returns lnd's network ("regtest", "mainnet", …), asking lnd
// when it is not known yet.
func (n *Node) Network(ctx context.Context) (string, error) {
	n.mu.Lock()
	net := n.network
	n.mu.Unlock()
	if net != "" {
		return net, nil
	}
	if info := n.Info(ctx); info.Network != "" {
		return info.Network, nil
	}
	return "", kassa.Errorf(kassa.Unavailable, "lnd is unreachable")
}

// Start watches invoices until ctx ends, delivering each settle to handle
// (see kassa.Lightning). It returns at once; the watch reconnects with
// backoff whenever the stream breaks.
func (n *Node) Start(ctx context.Context, handle func(context.Context, kassa.LightningEvent) error) error {
	if handle == nil {
		return errors.New("start lnd backend: no handler")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	go n.run(ctx, n.cfg.Cursor, handle)
	return nil
}

// Watch watches invoices as Start does, but in the caller's goroutine and
// with the settle cursor in kv, until ctx ends: it is the work of the
// lightning-watcher lease (lease.Runner), kv the lease's fenced store. It
// resumes from the cursor the previous holder saved; when a cursor write
// is refused because another node took the lease, the Runner ends ctx
// and Watch returns. One Watch runs at a time.
func (n *Node) Watch(ctx context.Context, kv kassa.KeyValue, handle func(context.Context, kassa.LightningEvent) error) error {
	if handle == nil || kv == nil {
		return errors.New("watch lnd invoices: no handler or no cursor store")
	}
	n.mu.Lock()
	n.standby = false
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.standby, n.connected, n.lastErr = true, false, "not watching"
		n.mu.Unlock()
	}()
	n.run(ctx, kv, handle)
	return nil
}

func (n *Node) run(ctx context.Context, kv kassa.KeyValue, handle func(context.Context, kassa.LightningEvent) error) {
	wait := n.cfg.MinBackoff
	for ctx.Err() == nil {
		healthy, err := n.watch(ctx, kv, handle)
		n.setState(false, err)
		if ctx.Err() != nil {
			return
		}
		if healthy {
			wait = n.cfg.MinBackoff
		}
		n.log.Warn("lnd invoice stream down; reconnecting", "in", wait, "err", err)
		if !n.sleep(ctx, wait) {
			return
		}
		wait = min(2*wait, n.cfg.MaxBackoff)
	}
}

func (n *Node) setState(connected bool, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.connected = connected
	if err != nil {
		n.lastErr = grpcMessage(err)
	} else if connected {
		n.lastErr = ""
	}
}

// sleep waits d on the node's clock; false when ctx ended first.
func (n *Node) sleep(ctx context.Context, d time.Duration) bool {
	done := make(chan struct{})
	stop := n.cfg.Clock.AfterFunc(d, func() { close(done) })
	defer stop()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// watch subscribes from the cursor, reconciles the open invoices, then
// delivers settles until the stream breaks. healthy reports that the
// stream was up and the reconcile done, so the backoff starts afresh.
func (n *Node) watch(ctx context.Context, kv kassa.KeyValue, handle func(context.Context, kassa.LightningEvent) error) (healthy bool, err error) {
	cursor, err := n.cursor(ctx, kv)
	if err != nil {
		return false, fmt.Errorf("read settle cursor: %w", err)
	}
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	recv, err := n.rpc.SubscribeInvoices(streamCtx, cursor)
	if err != nil {
		return false, fmt.Errorf("SubscribeInvoices: %w", err)
	}
	// The subscription is made before the reconcile, so a settle is
	// either seen by the look-up or comes on the stream.
	if err := n.reconcile(ctx, handle); err != nil {
		return false, fmt.Errorf("reconcile open invoices: %w", err)
	}
	n.setState(true, nil)
	n.log.Info("watching lnd invoices", "settle_index", cursor)
	for {
		inv, err := recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("lnd closed the invoice stream")
			}
			return true, err
		}
		if inv.State != lnrpc.Invoice_SETTLED || inv.SettleIndex == 0 {
			continue
		}
		if err := n.deliver(ctx, handle, inv); err != nil {
			return true, err
		}
		if inv.SettleIndex > cursor {
			if err := n.setCursor(ctx, kv, inv.SettleIndex); err != nil {
				return true, fmt.Errorf("store settle cursor: %w", err)
			}
			cursor = inv.SettleIndex
		}
	}
}

// reconcile looks up every open invoice and delivers those lnd settled.
// The cursor is not moved: only the ordered stream moves it.
func (n *Node) reconcile(ctx context.Context, handle func(context.Context, kassa.LightningEvent) error) error {
	if n.cfg.OpenPaymentHashes == nil {
		return nil
	}
	found := 0
	err := n.cfg.OpenPaymentHashes(ctx, func(h string) error {
		hash, err := hex.DecodeString(h)
		if err != nil || len(hash) != 32 {
			return nil
		}
		callCtx, cancel := context.WithTimeout(ctx, n.cfg.CallTimeout)
		inv, err := n.rpc.LookupInvoice(callCtx, hash)
		cancel()
		if err != nil {
			if containsAny(err, "unable to locate invoice", "not found") {
				return nil // made by another node, or lost with lnd's data
			}
			return fmt.Errorf("LookupInvoice %s: %w", h, err)
		}
		if inv.State != lnrpc.Invoice_SETTLED {
			return nil
		}
		found++
		return n.deliver(ctx, handle, inv)
	})
	if found > 0 {
		n.log.Info("reconcile found settled invoices", "count", found)
	}
	return err
}

// deliver hands a settle to handle until it is acknowledged, waiting
// with backoff between attempts; it gives up only when ctx ends.
func (n *Node) deliver(ctx context.Context, handle func(context.Context, kassa.LightningEvent) error, inv *lnrpc.Invoice) error {
	ev := kassa.LightningEvent{
		PaymentHash: hex.EncodeToString(inv.RHash),
		AmountMSat:  kassa.MSat(inv.AmtPaidMsat),
		SettledAt:   time.Unix(inv.SettleDate, 0).UTC(),
	}
	if inv.SettleDate == 0 {
		ev.SettledAt = time.Time{}
	}
	wait := n.cfg.MinBackoff
	for {
		err := handle(ctx, ev)
		if err == nil {
			return nil
		}
		n.log.Error("settle not recorded; retrying", "payment_hash", ev.PaymentHash, "in", wait, "err", err)
		if !n.sleep(ctx, wait) {
			return ctx.Err()
		}
		wait = min(2*wait, n.cfg.MaxBackoff)
	}
}

func (n *Node) cursor(ctx context.Context, kv kassa.KeyValue) (uint64, error) {
	v, ok, err := kv.GetValue(ctx, n.cfg.CursorKey)
	if err != nil || !ok {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("malformed settle cursor %x", v)
	}
	return binary.BigEndian.Uint64(v), nil
}

func (n *Node) setCursor(ctx context.Context, kv kassa.KeyValue, index uint64) error {
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], index)
	return kv.PutValue(ctx, n.cfg.CursorKey, v[:], cursorLife)
}

// SettleIndex returns the stored cursor (tests and diagnostics).
func (n *Node) SettleIndex(ctx context.Context) (uint64, error) { return n.cursor(ctx, n.cfg.Cursor) }

// maxMemoBytes is lnd's limit on an invoice memo.
const maxMemoBytes = 639

// cleanMemo makes memo fit lnd's limit, cut at a character boundary.
func cleanMemo(memo string) string {
	memo = strings.ToValidUTF8(memo, "\uFFFD")
	if len(memo) <= maxMemoBytes {
		return memo
	}
	cut := maxMemoBytes
	for cut > 0 && (memo[cut]&0xC0) == 0x80 {
		cut--
	}
	return memo[:cut]
}

// grpcMessage shortens a gRPC error for health and logs.
func grpcMessage(err error) string {
	s := err.Error()
	if i := strings.Index(s, "desc = "); i >= 0 {
		s = s[i+len("desc = "):]
	}
	return s
}
