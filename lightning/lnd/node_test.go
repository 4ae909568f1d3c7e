package lnd_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/lightning/lnd"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc/routerrpc"
	"github.com/kassapay/kassa/persistence"
)

// fakeRPC is lnd's RPC as function fields; a nil field fails the call.
type fakeRPC struct {
	getInfo           func(context.Context) (*lnrpc.GetInfoResponse, error)
	addInvoice        func(context.Context, *lnrpc.Invoice) (*lnrpc.AddInvoiceResponse, error)
	lookupInvoice     func(context.Context, []byte) (*lnrpc.Invoice, error)
	subscribeInvoices func(context.Context, uint64) (func() (*lnrpc.Invoice, error), error)
	cancelInvoice     func(context.Context, []byte) error
	sendPayment       func(context.Context, *routerrpc.SendPaymentRequest) (func() (*lnrpc.Payment, error), error)
	trackPayment      func(context.Context, []byte) (func() (*lnrpc.Payment, error), error)
	queryRoutes       func(context.Context, *lnrpc.QueryRoutesRequest) (*lnrpc.QueryRoutesResponse, error)
	newAddress        func(context.Context) (string, error)
}

var errNotFaked = errors.New("not faked")

func (f *fakeRPC) GetInfo(ctx context.Context) (*lnrpc.GetInfoResponse, error) {
	if f.getInfo == nil {
		return nil, errNotFaked
	}
	return f.getInfo(ctx)
}
func (f *fakeRPC) AddInvoice(ctx context.Context, in *lnrpc.Invoice) (*lnrpc.AddInvoiceResponse, error) {
	if f.addInvoice == nil {
		return nil, errNotFaked
	}
	return f.addInvoice(ctx, in)
}
func (f *fakeRPC) LookupInvoice(ctx context.Context, h []byte) (*lnrpc.Invoice, error) {
	if f.lookupInvoice == nil {
		return nil, errNotFaked
	}
	return f.lookupInvoice(ctx, h)
}
func (f *fakeRPC) SubscribeInvoices(ctx context.Context, i uint64) (func() (*lnrpc.Invoice, error), error) {
	if f.subscribeInvoices == nil {
		return nil, errNotFaked
	}
	return f.subscribeInvoices(ctx, i)
}
func (f *fakeRPC) CancelInvoice(ctx context.Context, h []byte) error {
	if f.cancelInvoice == nil {
		return errNotFaked
	}
	return f.cancelInvoice(ctx, h)
}
func (f *fakeRPC) SendPayment(ctx context.Context, r *routerrpc.SendPaymentRequest) (func() (*lnrpc.Payment, error), error) {
	if f.sendPayment == nil {
		return nil, errNotFaked
	}
	return f.sendPayment(ctx, r)
}
func (f *fakeRPC) TrackPayment(ctx context.Context, h []byte) (func() (*lnrpc.Payment, error), error) {
	if f.trackPayment == nil {
		return nil, errNotFaked
	}
	return f.trackPayment(ctx, h)
}
func (f *fakeRPC) NewAddress(ctx context.Context) (string, error) {
	if f.newAddress == nil {
		return "", errNotFaked
	}
	return f.newAddress(ctx)
}
func (f *fakeRPC) QueryRoutes(ctx context.Context, r *lnrpc.QueryRoutesRequest) (*lnrpc.QueryRoutesResponse, error) {
	if f.queryRoutes == nil {
		return nil, errNotFaked
	}
	return f.queryRoutes(ctx, r)
}
func (f *fakeRPC) Close() error { return nil }

func openDB(t *testing.T) *persistence.DB {
	t.Helper()
	db, err := persistence.Open("", persistence.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func hashOf(i int) []byte {
	h := sha256.Sum256([]byte{byte(i)})
	return h[:]
}

func settled(i int, index uint64) *lnrpc.Invoice {
	return &lnrpc.Invoice{RHash: hashOf(i), State: lnrpc.Invoice_SETTLED, SettleIndex: index, AmtPaidMsat: int64(i) * 1000, SettleDate: 1_700_000_000}
}

// stream is one subscription: what it receives and where it started.
type stream struct {
	from uint64
	ch   chan *lnrpc.Invoice
	ctx  context.Context
}

// streams records subscriptions so a test can feed and break them.
type streams struct {
	mu   sync.Mutex
	all  []*stream
	news chan *stream
}

func newStreams() *streams { return &streams{news: make(chan *stream, 16)} }

func (s *streams) subscribe(ctx context.Context, from uint64) (func() (*lnrpc.Invoice, error), error) {
	st := &stream{from: from, ch: make(chan *lnrpc.Invoice, 16), ctx: ctx}
	s.mu.Lock()
	s.all = append(s.all, st)
	s.mu.Unlock()
	s.news <- st
	return func() (*lnrpc.Invoice, error) {
		select {
		case inv, ok := <-st.ch:
			if !ok {
				return nil, io.EOF
			}
			return inv, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}, nil
}

func (s *streams) next(t *testing.T) *stream {
	t.Helper()
	select {
	case st := <-s.news:
		return st
	case <-time.After(10 * time.Second):
		t.Fatal("no subscription")
		return nil
	}
}

// acks records what the handler acknowledged, in order.
type acks struct {
	mu     sync.Mutex
	events []kassa.LightningEvent
	ch     chan kassa.LightningEvent
	// fail makes the handler fail for a hash this many times.
	fail map[string]int
}

func newAcks() *acks { return &acks{ch: make(chan kassa.LightningEvent, 64), fail: map[string]int{}} }

func (a *acks) handle(ctx context.Context, ev kassa.LightningEvent) error {
	a.mu.Lock()
	if a.fail[ev.PaymentHash] > 0 {
		a.fail[ev.PaymentHash]--
		a.mu.Unlock()
		return errors.New("journal unavailable")
	}
	a.events = append(a.events, ev)
	a.mu.Unlock()
	a.ch <- ev
	return nil
}

func (a *acks) next(t *testing.T) kassa.LightningEvent {
	t.Helper()
	select {
	case ev := <-a.ch:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no settle delivered")
		return kassa.LightningEvent{}
	}
}

func newNode(t *testing.T, rpc lnd.RPC, db *persistence.DB, open func(context.Context, func(string) error) error) *lnd.Node {
	t.Helper()
	n, err := lnd.New(rpc, lnd.Config{Cursor: db, OpenPaymentHashes: open, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitCursor waits until the node stored want as its cursor: it does so
// just after the handler returned.
func waitCursor(t *testing.T, n *lnd.Node, want uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := n.SettleIndex(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cursor %d, want %d", got, want)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCreateInvoice(t *testing.T) {
	var got *lnrpc.Invoice
	rpc := &fakeRPC{addInvoice: func(_ context.Context, in *lnrpc.Invoice) (*lnrpc.AddInvoiceResponse, error) {
		got = in
		return &lnrpc.AddInvoiceResponse{RHash: hashOf(1), PaymentRequest: "lnbcrt1…"}, nil
	}}
	n := newNode(t, rpc, openDB(t), nil)
	li, err := n.CreateInvoice(context.Background(), 1_234_567, "Shop order 42", 14*time.Minute+100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if got.ValueMsat != 1_234_567 || got.Memo != "Shop order 42" || got.Expiry != 14*60+1 {
		t.Fatalf("AddInvoice got %v", got)
	}
	if li.PaymentHash != hex.EncodeToString(hashOf(1)) || li.PaymentRequest != "lnbcrt1…" {
		t.Fatalf("invoice %+v", li)
	}
	// Amountless, and a memo over lnd's limit cut at a character.
	if _, err := n.CreateInvoice(context.Background(), 0, strings.Repeat("é", 400), time.Minute); err != nil {
		t.Fatal(err)
	}
	if got.ValueMsat != 0 || len(got.Memo) > 639 || !strings.HasSuffix(got.Memo, "é") {
		t.Fatalf("amountless: %d msat, memo of %d bytes", got.ValueMsat, len(got.Memo))
	}
	if _, err := n.CreateInvoice(context.Background(), -1, "", time.Minute); kassa.ErrorCode(err) != kassa.Invalid {
		t.Fatalf("negative amount: %v", err)
	}
}

func TestCancelInvoiceIgnoresWhatCannotBeCancelled(t *testing.T) {
	var reply error
	var cancelled []byte
	rpc := &fakeRPC{cancelInvoice: func(_ context.Context, h []byte) error { cancelled = h; return reply }}
	n := newNode(t, rpc, openDB(t), nil)
	ctx := context.Background()
	hash := hex.EncodeToString(hashOf(3))
	if err := n.CancelInvoice(ctx, hash); err != nil || hex.EncodeToString(cancelled) != hash {
		t.Fatalf("cancel: %v, sent %x", err, cancelled)
	}
	for _, msg := range []string{"rpc error: code = Unknown desc = unable to locate invoice", "invoice already settled", "invoice already canceled"} {
		reply = errors.New(msg)
		if err := n.CancelInvoice(ctx, hash); err != nil {
			t.Errorf("%q: %v", msg, err)
		}
	}
	reply = errors.New("rpc error: code = Unavailable desc = connection refused")
	if err := n.CancelInvoice(ctx, hash); err == nil {
		t.Fatal("an unreachable lnd must be an error: the invoice is still open")
	}
	if err := n.CancelInvoice(ctx, "not hex"); err != nil {
		t.Fatalf("a hash no lnd invoice can have: %v", err)
	}
}

func TestSettlesAdvanceTheCursorOnlyWhenAcknowledged(t *testing.T) {
	db := openDB(t)
	subs := newStreams()
	rpc := &fakeRPC{subscribeInvoices: subs.subscribe}
	n := newNode(t, rpc, db, nil)
	a := newAcks()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := n.Start(ctx, a.handle); err != nil {
		t.Fatal(err)
	}
	st := subs.next(t)
	if st.from != 0 {
		t.Fatalf("first subscription from %d, want 0", st.from)
	}
	// An open (added) invoice is not a settle.
	st.ch <- &lnrpc.Invoice{RHash: hashOf(9), State: lnrpc.Invoice_OPEN, AddIndex: 1}
	st.ch <- settled(1, 1)
	if ev := a.next(t); ev.PaymentHash != hex.EncodeToString(hashOf(1)) || ev.AmountMSat != 1000 || ev.SettledAt.Unix() != 1_700_000_000 {
		t.Fatalf("event %+v", ev)
	}
	// The handler fails twice for settle 2: it is retried, and the
	// cursor does not pass it until the third attempt succeeds.
	a.mu.Lock()
	a.fail[hex.EncodeToString(hashOf(2))] = 2
	a.mu.Unlock()
	st.ch <- settled(2, 2)
	if ev := a.next(t); ev.PaymentHash != hex.EncodeToString(hashOf(2)) {
		t.Fatalf("event %+v", ev)
	}
	st.ch <- settled(3, 3)
	a.next(t)
	waitCursor(t, n, 3)
	// The stream breaks: the node subscribes again from the cursor.
	close(st.ch)
	st2 := subs.next(t)
	if st2.from != 3 {
		t.Fatalf("resubscribed from %d, want 3", st2.from)
	}
	if idx, _ := n.SettleIndex(context.Background()); idx != 3 {
		t.Fatalf("stored cursor %d", idx)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.events) != 3 {
		t.Fatalf("%d events acknowledged, want 3 (each once)", len(a.events))
	}
}

func TestCursorSurvivesARestart(t *testing.T) {
	db := openDB(t)
	subs := newStreams()
	rpc := &fakeRPC{subscribeInvoices: subs.subscribe}
	a := newAcks()
	ctx, cancel := context.WithCancel(context.Background())
	n := newNode(t, rpc, db, nil)
	n.Start(ctx, a.handle)
	st := subs.next(t)
	st.ch <- settled(1, 41)
	a.next(t)
	waitCursor(t, n, 41)
	// A settle whose handler never succeeds before the stop is not
	// acknowledged.
	a.mu.Lock()
	a.fail[hex.EncodeToString(hashOf(2))] = 1 << 30
	a.mu.Unlock()
	st.ch <- settled(2, 42)
	cancel()

	subs2 := newStreams()
	n2 := newNode(t, &fakeRPC{subscribeInvoices: subs2.subscribe}, db, nil)
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	n2.Start(ctx2, newAcks().handle)
	if st := subs2.next(t); st.from != 41 {
		t.Fatalf("after a restart the node subscribed from %d, want 41 (42 was never acknowledged)", st.from)
	}
}

func TestReconcileFindsSettlesTheStreamMissed(t *testing.T) {
	db := openDB(t)
	subs := newStreams()
	lookups := make(chan string, 8)
	rpc := &fakeRPC{
		subscribeInvoices: subs.subscribe,
		lookupInvoice: func(_ context.Context, h []byte) (*lnrpc.Invoice, error) {
			lookups <- hex.EncodeToString(h)
			switch hex.EncodeToString(h) {
			case hex.EncodeToString(hashOf(5)):
				return settled(5, 77), nil
			case hex.EncodeToString(hashOf(6)):
				return &lnrpc.Invoice{RHash: h, State: lnrpc.Invoice_OPEN}, nil
			}
			return nil, errors.New("rpc error: code = NotFound desc = unable to locate invoice")
		},
	}
	open := func(ctx context.Context, fn func(string) error) error {
		for _, i := range []int{5, 6, 7} {
			if err := fn(hex.EncodeToString(hashOf(i))); err != nil {
				return err
			}
		}
		return nil
	}
	n := newNode(t, rpc, db, open)
	a := newAcks()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n.Start(ctx, a.handle)
	st := subs.next(t)
	if ev := a.next(t); ev.PaymentHash != hex.EncodeToString(hashOf(5)) || ev.AmountMSat != 5000 {
		t.Fatalf("reconcile delivered %+v", ev)
	}
	// Every reconnection reconciles again.
	for range 3 {
		<-lookups
	}
	close(st.ch)
	subs.next(t)
	if ev := a.next(t); ev.PaymentHash != hex.EncodeToString(hashOf(5)) {
		t.Fatalf("second reconcile delivered %+v", ev)
	}
	// The reconcile does not move the cursor: only the ordered stream does.
	if idx, _ := n.SettleIndex(context.Background()); idx != 0 {
		t.Fatalf("cursor %d after reconcile, want 0", idx)
	}
}

func TestInfo(t *testing.T) {
	subs := newStreams()
	up := true
	var mu sync.Mutex
	rpc := &fakeRPC{
		subscribeInvoices: subs.subscribe,
		getInfo: func(context.Context) (*lnrpc.GetInfoResponse, error) {
			mu.Lock()
			defer mu.Unlock()
			if !up {
				return nil, errors.New("rpc error: code = Unavailable desc = connection error: connection refused")
			}
			return &lnrpc.GetInfoResponse{BlockHeight: 150, SyncedToChain: true, Chains: []*lnrpc.Chain{{Chain: "bitcoin", Network: "regtest"}}}, nil
		},
	}
	n := newNode(t, rpc, openDB(t), nil)
	if info := n.Info(context.Background()); info.Synced || info.Error == "" {
		t.Fatalf("before the stream is up: %+v", info)
	}
	a := newAcks()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n.Start(ctx, a.handle)
	st := subs.next(t)
	st.ch <- settled(1, 1)
	a.next(t) // the stream is up
	info := n.Info(context.Background())
	if !info.Synced || info.Error != "" || info.Network != "regtest" || info.Height != 150 || info.Backend != "lnd" || info.Simulated {
		t.Fatalf("up: %+v", info)
	}
	mu.Lock()
	up = false
	mu.Unlock()
	if info := n.Info(context.Background()); info.Synced || !strings.Contains(info.Error, "unreachable") || strings.Contains(info.Error, "rpc error") {
		t.Fatalf("down: %+v", info)
	}
}

// While lnd is unreachable, health still names the network lnd was last
// seen on.
func TestInfoKeepsTheLastKnownNetwork(t *testing.T) {
	var down atomic.Bool
	rpc := &fakeRPC{getInfo: func(context.Context) (*lnrpc.GetInfoResponse, error) {
		if down.Load() {
			return nil, errors.New("rpc error: code = Unavailable desc = connection refused")
		}
		return &lnrpc.GetInfoResponse{BlockHeight: 150, SyncedToChain: true, Chains: []*lnrpc.Chain{{Chain: "bitcoin", Network: "regtest"}}}, nil
	}}
	n := newNode(t, rpc, openDB(t), nil)
	if info := n.Info(context.Background()); info.Network != "regtest" {
		t.Fatalf("up: %+v", info)
	}
	down.Store(true)
	if info := n.Info(context.Background()); info.Network != "regtest" || info.Error == "" {
		t.Fatalf("lnd down: %+v, want the last known network and an error", info)
	}
}
