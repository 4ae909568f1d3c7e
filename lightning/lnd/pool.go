package lnd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kassapay/kassa"
)

// DefaultPoolSize is how many addresses of lnd's wallet the pool keeps
// taken ahead.
const DefaultPoolSize = 20

// PoolStore is where the address pool lives: its list of addresses in
// a key-value record, and each address's take as a request record,
// which a commit records once only (kassa.RequestBatch): the take, not
// the list, decides that an address is used, on every node of a
// cluster and across restarts. The list is written only over the
// list it was made from (SwapValue): two nodes refilling at once never
// write over each other's new addresses. Both stores (Pebble,
// PostgreSQL) are one.
type PoolStore interface {
	kassa.KeyValue
	kassa.RequestReader
	NewBatch() kassa.Batch
	Commit(ctx context.Context, b kassa.Batch) error
	// SwapValue sets key to value until expires only while key still
	// holds old (a nil old: while key holds no value), in one step
	// with that check, and says whether it did.
	SwapValue(ctx context.Context, key string, old, value []byte, expires time.Time) (bool, error)
}

// PoolConfig configures an AddressPool.
type PoolConfig struct {
	Store PoolStore
	// Size is how many unused addresses the pool keeps; zero means
	// DefaultPoolSize.
	Size int
	// Interval is how often the pool checks that it is full while no
	// take asked it to; zero means 30 s.
	Interval time.Duration
	Clock    kassa.Clock
	Logger   *slog.Logger
}

// poolKey names the pool's record; poolName is the owner of its take
// records.
const (
	poolKey  = "lnd/address-pool"
	poolName = "lnd-address-pool"
)

// poolLife is how long the pool's record lives: for good.
var poolLife = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// poolRecord is the pool as stored: the identity key of the node whose
// wallet gave the addresses, and the addresses, oldest first. It may
// still list addresses taken since it was written; the take records
// say which.
type poolRecord struct {
	Node      string   `json:"node"`
	Addresses []string `json:"addresses"`
}

// AddressPool gives the on-chain addresses of stores without an xpub:
// a fresh address of lnd's wallet while lnd answers, and while it does
// not, one of the addresses taken from it ahead of time, each handed
// out once (docs/decisions.md, "On-chain payments without an xpub"). Run
// keeps the pool full while lnd is up. It is safe for concurrent use.
type AddressPool struct {
	node     *Node
	store    PoolStore
	size     int
	interval time.Duration
	clock    kassa.Clock
	log      *slog.Logger
	kick     chan struct{}

	mu sync.Mutex
	// taken holds addresses whose take is recorded: taken for good.
	taken map[string]bool
}

// NewPool returns the address pool of node's wallet.
func NewPool(node *Node, cfg PoolConfig) (*AddressPool, error) {
	if node == nil || cfg.Store == nil {
		return nil, errors.New("lnd address pool: needs the node and a store")
	}
	if cfg.Size <= 0 {
		cfg.Size = DefaultPoolSize
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = kassa.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &AddressPool{
		node: node, store: cfg.Store, size: cfg.Size, interval: cfg.Interval, clock: cfg.Clock,
		log: cfg.Logger.With("component", "lnd-address-pool"), kick: make(chan struct{}, 1), taken: map[string]bool{},
	}, nil
}

// Address returns an address of lnd's wallet for invoiceID: a fresh
// one from lnd, or, when lnd gives none, one of the pool's, recorded as
// taken by invoiceID before it is returned. With lnd unreachable and the
// pool used up it fails with kassa.ErrNoWalletAddress.
func (p *AddressPool) Address(ctx context.Context, invoiceID string) (string, error) {
	addr, err := p.node.NewAddress(ctx)
	if err == nil {
		return addr, nil
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	addr, terr := p.take(ctx, invoiceID)
	p.wake()
	if terr != nil {
		p.log.Error("lnd gives no address and the pool none either", "invoice", invoiceID, "lnd", err, "pool", terr)
		return "", terr
	}
	p.log.Warn("lnd gives no address; one of the pool's handed out", "invoice", invoiceID, "address", addr, "err", err)
	return addr, nil
}

// take records the pool's oldest address that no one took as taken by
// invoiceID and returns it.
func (p *AddressPool) take(ctx context.Context, invoiceID string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rec, err := p.load(ctx)
	if err != nil {
		return "", err
	}
	for _, addr := range rec.Addresses {
		if p.taken[addr] {
			continue
		}
		b := p.store.NewBatch()
		rb, ok := b.(kassa.RequestBatch)
		if !ok {
			return "", fmt.Errorf("lnd address pool: the store's batch %T records no takes", b)
		}
		rb.PutRequest(kassa.RequestRecord{StoreID: poolName, ID: addr, Kind: kassa.RequestPoolAddress, ResultID: invoiceID})
		switch err := p.store.Commit(ctx, b); {
		case errors.Is(err, kassa.ErrRequestDone):
			p.taken[addr] = true // another node, or a take before a restart
		case err != nil:
			return "", fmt.Errorf("lnd address pool: record a take: %w", err)
		default:
			p.taken[addr] = true
			return addr, nil
		}
	}
	return "", kassa.ErrNoWalletAddress
}

// Left returns how many addresses the pool has that no one took.
func (p *AddressPool) Left(ctx context.Context) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rec, err := p.load(ctx)
	if err != nil {
		return 0, err
	}
	left, err := p.untaken(ctx, rec)
	return len(left), err
}

// load reads the pool's record; the caller holds mu.
func (p *AddressPool) load(ctx context.Context) (poolRecord, error) {
	rec, _, err := p.read(ctx)
	return rec, err
}

// read reads the pool's record and its stored form (nil when there is
// none); the caller holds mu.
func (p *AddressPool) read(ctx context.Context) (poolRecord, []byte, error) {
	var rec poolRecord
	b, ok, err := p.store.GetValue(ctx, poolKey)
	if err != nil {
		return rec, nil, fmt.Errorf("lnd address pool: read: %w", err)
	}
	if !ok {
		return rec, nil, nil
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, nil, fmt.Errorf("lnd address pool: decode: %w", err)
	}
	return rec, b, nil
}

// untaken returns rec's addresses whose take is not recorded; the
// caller holds mu.
func (p *AddressPool) untaken(ctx context.Context, rec poolRecord) ([]string, error) {
	var left []string
	for _, addr := range rec.Addresses {
		if p.taken[addr] {
			continue
		}
		_, err := p.store.Request(ctx, poolName, addr)
		switch {
		case err == nil:
			p.taken[addr] = true
		case kassa.ErrorCode(err) == kassa.NotFound:
			left = append(left, addr)
		default:
			return nil, fmt.Errorf("lnd address pool: read a take: %w", err)
		}
	}
	return left, nil
}

// Fill tops the pool up to its size with fresh addresses of lnd's
// wallet and writes it without the addresses taken since. The pool of
// another node (lnd's identity key changed) is dropped: its addresses
// are not this wallet's. It fails while lnd cannot be reached.
func (p *AddressPool) Fill(ctx context.Context) error {
	infoCtx, cancel := context.WithTimeout(ctx, p.node.cfg.CallTimeout)
	info, err := p.node.rpc.GetInfo(infoCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("lnd GetInfo: %s", grpcMessage(err))
	}
	identity := info.IdentityPubkey
	p.mu.Lock()
	rec, err := p.load(ctx)
	var left []string
	if err == nil {
		left, err = p.untaken(ctx, rec)
	}
	p.mu.Unlock()
	if err != nil {
		return err
	}
	if rec.Node != "" && rec.Node != identity {
		p.log.Warn("lnd's identity key changed: the address pool of the former node is dropped", "addresses", len(left), "was", rec.Node, "now", identity)
		left = nil
	}
	var fresh []string
	for range p.size - len(left) {
		addr, err := p.node.NewAddress(ctx)
		if err != nil {
			if len(fresh) == 0 {
				return err
			}
			break // keep what lnd gave
		}
		fresh = append(fresh, addr)
	}
	if len(fresh) == 0 && len(left) == len(rec.Addresses) && rec.Node == identity {
		return nil // full, and nothing taken to prune
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// Read again and write over what was read only: takes since the
	// first reading leave the list, and a record another node wrote
	// meanwhile keeps its addresses, this fill's join them.
	for {
		var raw []byte
		if rec, raw, err = p.read(ctx); err != nil {
			return err
		}
		if rec.Node != identity {
			rec.Addresses = nil
		}
		if left, err = p.untaken(ctx, rec); err != nil {
			return err
		}
		rec = poolRecord{Node: identity, Addresses: append(left, fresh...)}
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		swapped, err := p.store.SwapValue(ctx, poolKey, raw, b, poolLife)
		if err != nil {
			return fmt.Errorf("lnd address pool: write: %w", err)
		}
		if swapped {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if len(fresh) > 0 {
		p.log.Info("address pool filled", "added", len(fresh), "left", len(rec.Addresses), "size", p.size)
	}
	return nil
}

// Run keeps the pool full until ctx ends: it fills it at start, after
// each take and every Interval, and waits Interval after a failure
// (lnd unreachable).
func (p *AddressPool) Run(ctx context.Context) {
	failing := false
	for ctx.Err() == nil {
		if err := p.Fill(ctx); err != nil {
			if !failing && ctx.Err() == nil {
				p.log.Warn("address pool not filled; trying again", "in", p.interval, "err", err)
			}
			failing = true
		} else {
			failing = false
		}
		done := make(chan struct{})
		stop := p.clock.AfterFunc(p.interval, func() { close(done) })
		select {
		case <-ctx.Done():
		case <-done:
		case <-p.kick:
		}
		stop()
	}
}

// wake asks Run to fill the pool now.
func (p *AddressPool) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}
