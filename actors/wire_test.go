package actors

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/protos"
)

// forwarded is call about store as another node sends it, with a new
// request id.
func forwarded(store string, call *protos.StoreCall) *protos.StoreCall {
	call.StoreId, call.RequestId = store, kassa.NewID("req_")
	return call
}

// forwardedCommand is the Command StoreCall for invoice id of store
// with input in.
func forwardedCommand(t *testing.T, store, id string, ev *protos.InvoiceEvent) *protos.StoreCall {
	t.Helper()
	return forwarded(store, &protos.StoreCall{Call: &protos.StoreCall_Command{Command: &protos.InvoiceCommandCall{InvoiceId: id, Event: ev}}})
}

// forwardedCreateStore is the CreateStore StoreCall for st.
func forwardedCreateStore(st *kassa.Store) *protos.StoreCall {
	return forwarded(st.ID, &protos.StoreCall{Call: &protos.StoreCall_CreateStore{CreateStore: &protos.CreateStoreCall{Store: toDoc[*protos.StoreDoc](st)}}})
}

// forwardedTopUp is the TopUp StoreCall for store.
func forwardedTopUp(store string, amount kassa.Sats, reference string) *protos.StoreCall {
	return forwarded(store, &protos.StoreCall{Call: &protos.StoreCall_TopUp{TopUp: &protos.TopUpCall{AmountSat: int64(amount), Reference: reference}}})
}

// TestForwardedCreateStoreIsANewStore: a CreateStore from another node
// creates only a store as CreateStore makes it. One that brings a second
// API key, a larger credit limit, top-up references or an address index
// is refused, and so are invalid settings; the store a node's own
// CreateStore sends (the positive control) is created. Before, the
// receiving node stored whatever store the call carried.
func TestForwardedCreateStoreIsANewStore(t *testing.T) {
	clock := kassatest.NewTestClock(time.Now())
	h := newHarness(t, openMem(t), clock)
	ctx := context.Background()
	fresh := func() *kassa.Store {
		return kassa.NewStore(kassa.NewID(""), kassa.StoreSettings{Name: "Shop", Currency: kassa.EUR}, clock.Now().UTC())
	}
	for name, change := range map[string]func(*kassa.Store){
		"a second API key": func(st *kassa.Store) {
			st.APIKeys = append(st.APIKeys, kassa.APIKey{ID: "key_attacker", Label: "x", Key: kassa.NewSecret(), CreatedAt: st.CreatedAt})
		},
		"no API key":            func(st *kassa.Store) { st.APIKeys = nil },
		"a larger credit limit": func(st *kassa.Store) { st.CreditLimit = kassa.MaxSats },
		"top-up references":     func(st *kassa.Store) { st.TopUpRefs = []kassa.TopUpRef{{Reference: "r", TransactionID: 1}} },
		"an address index":      func(st *kassa.Store) { st.NextAddressIndex = 1 << 30 },
		"wallet bounds":         func(st *kassa.Store) { st.WalletMaxSendable = kassa.MaxSats.MSat() },
		"an invalid name":       func(st *kassa.Store) { st.Name = "" },
		"a fee over 100%": func(st *kassa.Store) {
			st.PercentFee = decimal.NewFromInt(101)
		},
		"a date in the future": func(st *kassa.Store) { st.CreatedAt = st.CreatedAt.Add(time.Hour) },
	} {
		st := fresh()
		change(st)
		rep := h.sys.Cluster.serveCall(forwardedCreateStore(st))
		if rep.Code == "" {
			t.Errorf("a forwarded store with %s was created", name)
		}
		if _, err := h.db.Store(ctx, st.ID); kassa.ErrorCode(err) != kassa.NotFound {
			t.Errorf("a forwarded store with %s: stored (%v)", name, err)
		}
	}
	st := fresh()
	if rep := h.sys.Cluster.serveCall(forwardedCreateStore(st)); rep.Code != "" {
		t.Fatalf("the store a node's CreateStore sends: %s %s", rep.Code, rep.Message)
	}
	if got, err := h.db.Store(ctx, st.ID); err != nil || len(got.APIKeys) != 1 || got.APIKeys[0].Key != st.APIKeys[0].Key {
		t.Fatalf("stored %+v, %v", got, err)
	}
}

// TestForwardedInvoiceCommandsAsWatchersSendThem: an invoice command
// from another node is taken only as a watcher, a timer or the merchant
// sends it. A payment to an address that is not the invoice's, a
// Lightning settle of another payment hash, a command about another
// store's invoice, an invoice's creation, and an expiry dated in the
// future are refused and leave the invoice New; the watchers' own
// events (the positive control) settle it. Before, each of these was
// applied: a forged payment settled the invoice, a future date expired
// it early.
func TestForwardedInvoiceCommandsAsWatchersSendThem(t *testing.T) {
	clock := kassatest.NewTestClock(time.Now())
	h := newHarness(t, openMem(t), clock)
	ctx := context.Background()
	other := h.createStore("0", "0")
	st := h.createStore("0", "0")
	chainInv := h.invoice("5000", kassa.SATS)
	lnInv := h.invoice("6000", kassa.SATS)
	later := clock.Now().Add(time.Hour).UTC()
	payment := func(dest string) kassa.InvoiceInput {
		return kassa.PaymentObserved{At: clock.Now().UTC(), Payment: kassa.Payment{
			ID: "aa:0", TxID: "aa", Amount: 5000, Destination: dest, Confirmations: 1,
		}}
	}
	for name, c := range map[string]struct {
		store, invoice string
		in             kassa.InvoiceInput
		ev             *protos.InvoiceEvent
	}{
		"a payment to another address":     {st.ID, chainInv.ID, payment("bcrt1qattacker"), nil},
		"a payment to no address":          {st.ID, chainInv.ID, payment(""), nil},
		"a payment to the other invoice's": {st.ID, chainInv.ID, payment(lnInv.OnchainAddress), nil},
		"a payment of no amount": {st.ID, chainInv.ID, kassa.PaymentObserved{At: clock.Now(), Payment: kassa.Payment{
			ID: "aa:0", TxID: "aa", Amount: 0, Destination: chainInv.OnchainAddress}}, nil},
		"a settle of another hash":    {st.ID, lnInv.ID, kassa.LightningPaid{PaymentHash: chainInv.PaymentHash, AmountMSat: kassa.Sats(6000).MSat(), At: clock.Now()}, nil},
		"a settle of no hash":         {st.ID, lnInv.ID, kassa.LightningPaid{AmountMSat: kassa.Sats(6000).MSat(), At: clock.Now()}, nil},
		"another store's invoice":     {other.ID, chainInv.ID, payment(chainInv.OnchainAddress), nil},
		"an expiry dated an hour on":  {st.ID, chainInv.ID, kassa.ExpiryReached{At: later}, nil},
		"the end of monitoring later": {st.ID, chainInv.ID, kassa.MonitoringEnded{At: later.Add(48 * time.Hour)}, nil},
		"an invoice's creation": {st.ID, chainInv.ID, nil, &protos.InvoiceEvent{AtUnixNano: clock.Now().UnixNano(),
			Kind: &protos.InvoiceEvent_Created{Created: &protos.InvoiceCreated{Invoice: []byte(`{"id":"x"}`)}}}},
		"no input": {st.ID, chainInv.ID, nil, &protos.InvoiceEvent{AtUnixNano: clock.Now().UnixNano()}},
	} {
		ev := c.ev
		if ev == nil {
			ev = eventOf(c.in)
		}
		if rep := h.sys.Cluster.serveCall(forwardedCommand(t, c.store, c.invoice, ev)); rep.Code == "" {
			t.Errorf("%s: applied", name)
		}
	}
	for _, inv := range []*kassa.Invoice{chainInv, lnInv} {
		if got, err := h.db.Invoice(ctx, inv.ID); err != nil || got.Status != kassa.InvoiceNew || len(got.Payments) != 0 {
			t.Fatalf("invoice %s after the refused commands: %+v, %v", inv.ID, got, err)
		}
	}

	// The positive control: the watchers' events settle both.
	if rep := h.sys.Cluster.serveCall(forwardedCommand(t, st.ID, chainInv.ID, eventOf(payment(chainInv.OnchainAddress)))); rep.Code != "" {
		t.Fatalf("the chain watcher's payment: %s %s", rep.Code, rep.Message)
	}
	clock.Advance(2 * time.Minute)
	settledAt := clock.Now().Add(-time.Minute).UTC() // lnd's settle time, a little before
	if rep := h.sys.Cluster.serveCall(forwardedCommand(t, st.ID, lnInv.ID, eventOf(kassa.LightningPaid{
		PaymentHash: lnInv.PaymentHash, AmountMSat: kassa.Sats(6000).MSat(), At: settledAt}))); rep.Code != "" {
		t.Fatalf("the Lightning watcher's settle: %s %s", rep.Code, rep.Message)
	}
	for _, inv := range []*kassa.Invoice{chainInv, lnInv} {
		if got, err := h.db.Invoice(ctx, inv.ID); err != nil || got.Status != kassa.InvoiceSettled {
			t.Fatalf("invoice %s after the watcher's event: %+v, %v", inv.ID, got, err)
		}
	}
	if got, _ := h.db.Invoice(ctx, lnInv.ID); !got.Payments[0].ReceivedAt.Equal(settledAt) {
		t.Errorf("the Lightning payment was received at %s, want lnd's settle time %s", got.Payments[0].ReceivedAt, settledAt)
	}

	// The merchant's "mark invalid", dated by this node, is taken.
	open := h.invoice("7000", kassa.SATS)
	if rep := h.sys.Cluster.serveCall(forwardedCommand(t, st.ID, open.ID, eventOf(kassa.MarkedInvalid{At: later}))); rep.Code != "" {
		t.Fatalf("mark invalid: %s %s", rep.Code, rep.Message)
	}
	if got, err := h.db.Invoice(ctx, open.ID); err != nil || got.Status != kassa.InvoiceInvalid || !got.UpdatedAt.Before(later) {
		t.Fatalf("invoice after mark invalid: %+v, %v", got, err)
	}
}

// TestForwardedTopUpCheckedAsTheAPIChecksIt: a TopUp from another node
// needs a positive amount within MaxSats and a well-formed reference,
// as the admin API does.
func TestForwardedTopUpCheckedAsTheAPIChecksIt(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Now()))
	st := h.createStore("0", "0")
	type topUp struct {
		amount    kassa.Sats
		reference string
	}
	for name, a := range map[string]topUp{
		"no amount":                {0, "r1"},
		"a negative amount":        {-5, "r2"},
		"more than all bitcoin":    {kassa.MaxSats + 1, "r3"},
		"a reference with a space": {100, "a b"},
	} {
		if rep := h.sys.Cluster.serveCall(forwardedTopUp(st.ID, a.amount, a.reference)); rep.Code != kassa.Invalid {
			t.Errorf("a forwarded top-up with %s: %q %s, want invalid", name, rep.Code, rep.Message)
		}
	}
	if rep := h.sys.Cluster.serveCall(forwardedTopUp(st.ID, 100, "ok")); rep.Code != "" {
		t.Fatalf("a valid forwarded top-up: %s %s", rep.Code, rep.Message)
	}
	if b, err := h.db.Balance(context.Background(), st.ID); err != nil || b != 100 {
		t.Fatalf("balance %d, %v; want 100", b, err)
	}
}
