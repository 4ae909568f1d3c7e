// Package sim is a simulation of a Bitcoin chain, the on-chain backend of
// `kassa serve --chain=sim`: an in-memory regtest chain with no daemon,
// whose payments and blocks are made on demand by Pay, Mine and Drop.
package sim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
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

// Chain is a simulated regtest chain held in memory. Pay puts a
// transaction in its mempool, Mine confirms it, Drop double-spends it; each
// change is reported to the handler given to Start. It is safe for
// concurrent use.
//
// Handler calls happen outside the Chain's lock, in the order of the
// changes they report, and before the call that made the change returns.
// The handler gets the context of that call. It may call NewAddress and
// Info but not Pay, Mine or Drop, which wait for earlier handler calls to
// end. Changes made while no handler is started are not reported later.
type Chain struct {
	clock kassa.Clock

	mu     sync.Mutex
	height int64
	// outputs holds every output ever paid, by txid.
	outputs map[string]*output
	// watched holds the outputs that are neither dropped nor at
	// ReportedDepth yet, oldest first: the ones Mine reports on.
	watched []*output
	wallets map[walletID]*wallet
	handle  func(context.Context, kassa.ChainEvent) error
	running context.Context
	// tickets counts the batches of events handed out for delivery.
	tickets uint64

	order deliveryOrder
}

// output is one simulated transaction output paying an address.
type output struct {
	payment kassa.Payment
	// blockHeight is the height of the block that holds the output; zero
	// while it is in the mempool.
	blockHeight int64
}

// New returns a chain whose tip is at StartHeight and whose mempool is
// empty. clock stamps payments; nil means the system clock.
func New(clock kassa.Clock) *Chain {
	if clock == nil {
		clock = kassa.SystemClock{}
	}
	c := &Chain{
		clock:   clock,
		height:  StartHeight,
		outputs: make(map[string]*output),
		wallets: make(map[walletID]*wallet),
	}
	c.order.cond.L = &c.order.mu
	return c
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
func (c *Chain) Start(ctx context.Context, handle func(context.Context, kassa.ChainEvent) error) error {
	if handle == nil {
		return errors.New("start simulated chain: no handler")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.handle, c.running = handle, ctx
	c.mu.Unlock()
	return nil
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
	o := &output{payment: kassa.Payment{
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
	c.outputs[txid] = o
	c.watched = append(c.watched, o)
	d := c.prepare([]kassa.ChainEvent{o.event()})
	c.mu.Unlock()

	if err := c.deliver(ctx, d); err != nil {
		return txid, err
	}
	return txid, nil
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
	c.height += int64(n)
	height = c.height
	var events []kassa.ChainEvent
	still := c.watched[:0]
	for _, o := range c.watched {
		if o.blockHeight == 0 {
			o.blockHeight = firstBlock
		}
		depth := int32(height - o.blockHeight + 1)
		if depth != o.payment.Confirmations {
			o.payment.Confirmations = depth
			events = append(events, o.event())
		}
		if depth < ReportedDepth {
			still = append(still, o)
		}
	}
	clear(c.watched[len(still):])
	c.watched = still
	d := c.prepare(events)
	c.mu.Unlock()

	if err := c.deliver(ctx, d); err != nil {
		return height, err
	}
	return height, nil
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
	o, ok := c.outputs[txid]
	switch {
	case !ok:
		c.mu.Unlock()
		return fmt.Errorf("drop %s: %w", txid, ErrUnknownTransaction)
	case o.payment.Dropped:
		c.mu.Unlock()
		return fmt.Errorf("drop %s: %w", txid, ErrAlreadyDropped)
	}
	o.payment.Dropped = true
	o.payment.Confirmations = 0
	o.blockHeight = 0
	for i, w := range c.watched {
		if w == o {
			c.watched = append(c.watched[:i], c.watched[i+1:]...)
			break
		}
	}
	d := c.prepare([]kassa.ChainEvent{o.event()})
	c.mu.Unlock()

	return c.deliver(ctx, d)
}

// event is the chain event that reports o as it is now.
func (o *output) event() kassa.ChainEvent {
	return kassa.ChainEvent{
		Address: o.payment.Destination,
		Payment: o.payment,
		Dropped: o.payment.Dropped,
	}
}

// delivery is a batch of events waiting for its turn to be handled.
type delivery struct {
	ticket  uint64
	handle  func(context.Context, kassa.ChainEvent) error
	running context.Context
	events  []kassa.ChainEvent
}

// prepare numbers a batch of events in the order of the changes made under
// c.mu, which must be held.
func (c *Chain) prepare(events []kassa.ChainEvent) *delivery {
	if len(events) == 0 || c.handle == nil {
		return nil
	}
	d := &delivery{ticket: c.tickets, handle: c.handle, running: c.running, events: events}
	c.tickets++
	return d
}

// deliver calls the handler with the events of d once every earlier batch
// has been handled, without holding c.mu. It returns the first handler
// error: the change it reports was not made durable by the service, and
// the caller must not report it as done.
func (c *Chain) deliver(ctx context.Context, d *delivery) error {
	if d == nil {
		return nil
	}
	c.order.wait(d.ticket)
	defer c.order.done()
	var first error
	for _, ev := range d.events {
		if d.running.Err() != nil {
			return nil
		}
		if err := d.handle(ctx, ev); err != nil && first == nil {
			first = fmt.Errorf("%w: %w", ErrNotRecorded, err)
		}
	}
	return first
}

// deliveryOrder lets batches of events through one at a time, in ticket
// order.
type deliveryOrder struct {
	mu   sync.Mutex
	cond sync.Cond
	next uint64
}

func (o *deliveryOrder) wait(ticket uint64) {
	o.mu.Lock()
	for o.next != ticket {
		o.cond.Wait()
	}
	o.mu.Unlock()
}

func (o *deliveryOrder) done() {
	o.mu.Lock()
	o.next++
	o.mu.Unlock()
	o.cond.Broadcast()
}
