// Package sim is a simulation of a Bitcoin chain, the on-chain backend of
// `kassa serve --chain=sim`: an in-memory regtest chain with no daemon,
// whose payments and blocks are made on demand by Pay, Mine and Drop.
package sim

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kassapay/kassa/internal/simstore"
	"slices"
	"strings"
	"sync"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"

	"github.com/kassapay/kassa"
)

var _ kassa.Chain = (*Chain)(nil)

const (
	// StartHeight is the height of the tip of a new Chain.
	StartHeight int64 = 100

	// ReportedDepth is the depth up to which Mine reports confirmations:
	// an output that reached it gets no further events.
	ReportedDepth int32 = 6

	// MaxBlocksPerMine is the most blocks one call of Mine makes.
	MaxBlocksPerMine = 10_000

	// SimulatedFeeRate and SimulatedNetworkFee are the fee every simulated
	// payment pays: 1 sat/vB for a one-input, two-output P2WPKH
	// transaction of 141 vB.
	SimulatedFeeRate    kassa.Sats = 1
	SimulatedNetworkFee kassa.Sats = 141
)

// Params are the network parameters of the simulated chain.
var Params = &chaincfg.RegressionNetParams

var (
	// ErrUnknownTransaction is returned by Drop for a txid that the
	// simulated chain never saw.
	ErrUnknownTransaction = kassa.Errorf(kassa.NotFound, "the simulated chain has no such transaction")

	// ErrAlreadyDropped is returned by Drop for a transaction that was
	// dropped before.
	ErrAlreadyDropped = kassa.Errorf(kassa.Conflict, "the transaction was already dropped")

	// ErrNotRegtestAddress is returned by Pay for an address that is not a
	// valid regtest address.
	ErrNotRegtestAddress = kassa.Errorf(kassa.Invalid, "not a valid regtest address")

	// ErrBadAmount is returned by Pay for an amount that is not positive
	// or is more than all bitcoin.
	ErrBadAmount = kassa.Errorf(kassa.Invalid, "the amount must be between 1 satoshi and 21 million bitcoin")

	// ErrNotRecorded is returned when the service did not make a change
	// of the chain durable: the payment exists on the simulated chain but
	// the invoice does not show it yet.
	ErrNotRecorded = kassa.Errorf(kassa.Unavailable, "the service did not record the change")

	// ErrBadBlockCount is returned by Mine for a block count below one or
	// above MaxBlocksPerMine.
	ErrBadBlockCount = kassa.Errorf(kassa.Invalid, "the number of blocks must be between 1 and %d", MaxBlocksPerMine)
)

// Chain is a simulated regtest chain. Pay puts a transaction in its
// mempool, Mine confirms it, Drop double-spends it; each change is
// reported to the handler given to Start. It is safe for concurrent use.
//
// Handler calls happen outside the Chain's lock, in the order of the
// changes they report, and before the call that made the change returns.
// The handler gets the context of that call. It may call NewAddress and
// Info but not Pay, Mine or Drop, which wait for earlier handler calls to
// end. An event whose handler failed, or that came while no handler ran,
// is kept and delivered again, in order, until the handler accepts it: by
// a retry loop with backoff, and before any later event.
//
// The chain keeps its height, its outputs and
// its unacknowledged events in a Store: with Open on the service's store
// they survive a restart, and only outputs still short of ReportedDepth
// stay in memory. New keeps everything in memory, for tests.
type Chain struct {
	clock kassa.Clock
	store Store

	mu     sync.Mutex
	height int64
	// watched holds the outputs that are neither dropped nor at
	// ReportedDepth yet, oldest first: the ones Mine reports on.
	watched []*output
	wallets map[walletID]*wallet
	// events are the events not acknowledged yet, pushed under mu so
	// that they keep the order of the changes they report.
	events *simstore.Queue[kassa.ChainEvent]
}

// Store is where a Chain keeps its state: small records under keys of
// its own. persistence.DB.State gives one on the service's store.
type Store = simstore.Store

// Keys of the chain's records in its Store.
const (
	keyHeight        = "height"
	keyOutputPrefix  = "out/"     // + txid: output
	keyPendingPrefix = "pending/" // + sequence, 16 hex digits: ChainEvent
)

// output is one simulated transaction output paying an address.
type output struct {
	Payment kassa.Payment `json:"payment"`
	// BlockHeight is the height of the block that holds the output; zero
	// while it is in the mempool.
	BlockHeight int64 `json:"blockHeight"`
}

// New returns a chain whose tip is at StartHeight and whose mempool is
// empty, keeping its state in memory. clock stamps payments; nil means
// the system clock.
func New(clock kassa.Clock) *Chain {
	c, err := Open(context.Background(), clock, simstore.NewMem())
	if err != nil {
		panic(err) // an empty memory store cannot fail
	}
	return c
}

// Open returns the chain whose state is in store (a new one at
// StartHeight when it is empty). Events not acknowledged before are
// delivered once Start is called.
func Open(ctx context.Context, clock kassa.Clock, store Store) (*Chain, error) {
	if clock == nil {
		clock = kassa.SystemClock{}
	}
	c := &Chain{
		clock:   clock,
		store:   store,
		height:  StartHeight,
		wallets: make(map[walletID]*wallet),
	}
	if v, ok, err := store.Get(ctx, keyHeight); err != nil {
		return nil, fmt.Errorf("simulated chain height: %w", err)
	} else if ok && len(v) == 8 {
		c.height = int64(binary.BigEndian.Uint64(v))
	}
	err := store.Scan(ctx, keyOutputPrefix, func(k string, v []byte) error {
		o := new(output)
		if err := json.Unmarshal(v, o); err != nil {
			return fmt.Errorf("output %s: %w", k, err)
		}
		if !o.Payment.Dropped && o.Payment.Confirmations < ReportedDepth {
			c.watched = append(c.watched, o)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("simulated chain: %w", err)
	}
	// Outputs are stored by txid; Mine reports them oldest first.
	slices.SortStableFunc(c.watched, func(a, b *output) int { return a.Payment.ReceivedAt.Compare(b.Payment.ReceivedAt) })
	if c.events, err = simstore.OpenQueue[kassa.ChainEvent](ctx, store, keyPendingPrefix); err != nil {
		return nil, fmt.Errorf("simulated chain: %w", err)
	}
	return c, nil
}

// saveOutput stores o; c.mu must be held.
func (c *Chain) saveOutput(ctx context.Context, o *output) error {
	v, err := json.Marshal(o)
	if err != nil {
		return err
	}
	return c.store.Put(ctx, keyOutputPrefix+o.Payment.TxID, v)
}

// NewAddress returns a fresh regtest P2WPKH address for an invoice of
// store: the next BIP84 receive address of store.Xpub (see the accepted
// keys at parseAccountKey), or the address of a new random key when the
// store has no xpub.
func (c *Chain) NewAddress(ctx context.Context, store *kassa.Store, invoiceID string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if store == nil || strings.TrimSpace(store.Xpub) == "" {
		return randomAddress()
	}
	return c.deriveAddress(store)
}

// randomAddress returns a P2WPKH address with a random 20-byte witness
// program. No key stands behind it: simulated coins are never spent, and
// skipping the key saves an elliptic-curve multiplication per invoice.
func randomAddress() (string, error) {
	var program [20]byte
	if _, err := rand.Read(program[:]); err != nil {
		return "", fmt.Errorf("new address: %w", err)
	}
	addr, err := btcutil.NewAddressWitnessPubKeyHash(program[:], Params)
	if err != nil {
		return "", fmt.Errorf("new address: %w", err)
	}
	return addr.EncodeAddress(), nil
}

// p2wpkhAddress is the regtest P2WPKH address of pub.
func p2wpkhAddress(pub *btcec.PublicKey) (string, error) {
	addr, err := btcutil.NewAddressWitnessPubKeyHash(btcutil.Hash160(pub.SerializeCompressed()), Params)
	if err != nil {
		return "", fmt.Errorf("p2wpkh address: %w", err)
	}
	return addr.EncodeAddress(), nil
}

// Start delivers chain events to handle from now until ctx ends. It
// returns at once. A second Start replaces the handler of the first.
// Events kept from before (made while no handler ran, or whose handler
// failed) are delivered first.
func (c *Chain) Start(ctx context.Context, handle func(context.Context, kassa.ChainEvent) error) error {
	if handle == nil {
		return errors.New("start simulated chain: no handler")
	}
	return c.events.Start(ctx, handle)
}

// Info describes the simulated chain: always synced, at its current
// height.
func (c *Chain) Info(ctx context.Context) kassa.BackendInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return kassa.BackendInfo{
		Backend:   "sim",
		Network:   "regtest",
		Simulated: true,
		Synced:    true,
		Height:    c.height,
	}
}

// Pay puts a transaction in the mempool that pays amount to address in its
// output 0, reports it at zero confirmations and returns its txid.
func (c *Chain) Pay(ctx context.Context, address string, amount kassa.Sats) (txid string, err error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if amount <= 0 || amount > kassa.MaxSats {
		return "", fmt.Errorf("pay %d sats: %w", amount, ErrBadAmount)
	}
	address, err = regtestAddress(address)
	if err != nil {
		return "", err
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("pay: %w", err)
	}
	txid = hex.EncodeToString(raw[:])
	return txid, c.put(ctx, txid, address, amount)
}

// put puts transaction txid, which pays amount to address in its output
// 0, in the mempool and reports it.
func (c *Chain) put(ctx context.Context, txid, address string, amount kassa.Sats) error {
	o := &output{Payment: kassa.Payment{
		ID:          txid + ":0",
		Method:      kassa.MethodOnchain,
		TxID:        txid,
		Vout:        0,
		Amount:      amount,
		Destination: address,
		NetworkFee:  SimulatedNetworkFee,
		FeeRate:     SimulatedFeeRate,
		ReceivedAt:  c.clock.Now(),
	}}

	c.mu.Lock()
	if err := c.saveOutput(ctx, o); err != nil {
		c.mu.Unlock()
		return fmt.Errorf("pay: %w", err)
	}
	c.watched = append(c.watched, o)
	err := c.events.Push(ctx, o.event())
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	return c.deliver(ctx)
}

// regtestAddress checks that address is a regtest address and returns it
// in its canonical spelling (lower case for bech32).
func regtestAddress(address string) (string, error) {
	addr, err := btcutil.DecodeAddress(strings.TrimSpace(address), Params)
	if err != nil {
		return "", fmt.Errorf("pay to %q: %w", address, ErrNotRegtestAddress)
	}
	canonical := addr.EncodeAddress()
	if !addr.IsForNet(Params) || !strings.EqualFold(canonical, strings.TrimSpace(address)) {
		return "", fmt.Errorf("pay to %q: %w", address, ErrNotRegtestAddress)
	}
	return canonical, nil
}

// Mine mines n blocks, which confirm every transaction in the mempool, and
// returns the new height. It reports each watched output whose
// confirmation count changed, once, at its new depth; outputs deeper than
// ReportedDepth before the call are not reported again.
func (c *Chain) Mine(ctx context.Context, n int) (height int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if n < 1 || n > MaxBlocksPerMine {
		return 0, fmt.Errorf("mine %d blocks: %w", n, ErrBadBlockCount)
	}

	c.mu.Lock()
	firstBlock := c.height + 1
	height = c.height + int64(n)
	if err := c.store.Put(ctx, keyHeight, binary.BigEndian.AppendUint64(nil, uint64(height))); err != nil {
		c.mu.Unlock()
		return 0, fmt.Errorf("mine: %w", err)
	}
	c.height = height
	var events []kassa.ChainEvent
	still := c.watched[:0]
	var saveErr error
	for _, o := range c.watched {
		if o.BlockHeight == 0 {
			o.BlockHeight = firstBlock
		}
		depth := int32(height - o.BlockHeight + 1)
		if depth != o.Payment.Confirmations {
			o.Payment.Confirmations = depth
			events = append(events, o.event())
			if err := c.saveOutput(ctx, o); err != nil && saveErr == nil {
				saveErr = err
			}
		}
		if depth < ReportedDepth {
			still = append(still, o)
		}
	}
	clear(c.watched[len(still):])
	c.watched = still
	err = c.events.Push(ctx, events...)
	c.mu.Unlock()
	if err = errors.Join(saveErr, err); err != nil {
		return height, fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	return height, c.deliver(ctx)
}

// Drop simulates a double-spend (or, for a confirmed transaction, a
// reorganisation) that removes transaction txid from the chain, and
// reports its output as dropped.
func (c *Chain) Drop(ctx context.Context, txid string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	txid = strings.ToLower(strings.TrimSpace(txid))

	c.mu.Lock()
	o, err := c.findOutput(ctx, txid)
	switch {
	case err != nil:
		c.mu.Unlock()
		return fmt.Errorf("drop %s: %w", txid, err)
	case o == nil:
		c.mu.Unlock()
		return fmt.Errorf("drop %s: %w", txid, ErrUnknownTransaction)
	case o.Payment.Dropped:
		c.mu.Unlock()
		return fmt.Errorf("drop %s: %w", txid, ErrAlreadyDropped)
	}
	o.Payment.Dropped = true
	o.Payment.Confirmations = 0
	o.BlockHeight = 0
	for i, w := range c.watched {
		if w == o {
			c.watched = append(c.watched[:i], c.watched[i+1:]...)
			break
		}
	}
	if err := c.saveOutput(ctx, o); err != nil {
		c.mu.Unlock()
		return fmt.Errorf("drop %s: %w", txid, err)
	}
	err = c.events.Push(ctx, o.event())
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	return c.deliver(ctx)
}

// findOutput returns the output of txid: the watched one, or the one in
// the store; nil when there is none. c.mu must be held.
func (c *Chain) findOutput(ctx context.Context, txid string) (*output, error) {
	for _, o := range c.watched {
		if o.Payment.TxID == txid {
			return o, nil
		}
	}
	v, ok, err := c.store.Get(ctx, keyOutputPrefix+txid)
	if err != nil || !ok {
		return nil, err
	}
	o := new(output)
	if err := json.Unmarshal(v, o); err != nil {
		return nil, fmt.Errorf("output %s: %w", txid, err)
	}
	return o, nil
}

// event is the chain event that reports o as it is now.
func (o *output) event() kassa.ChainEvent {
	return kassa.ChainEvent{
		Address: o.Payment.Destination,
		Payment: o.Payment,
		Dropped: o.Payment.Dropped,
	}
}

// deliver hands the pending events to the handler (simstore.Queue). It
// returns ErrNotRecorded when the handler refused one: the change it
// reports was not made durable by the service, and the caller must not
// report it as done.
func (c *Chain) deliver(ctx context.Context) error {
	if err := c.events.Deliver(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	return nil
}
