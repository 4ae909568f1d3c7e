package kassatest

import (
	"context"
	"testing"

	"github.com/kassapay/kassa"
)

// ChainHarness is a chain backend under test and the means to move the
// chain it watches.
type ChainHarness struct {
	Chain kassa.Chain
	// Store is what NewAddress is asked for (nil: a store without an
	// xpub, when the backend allows it).
	Store *kassa.Store
	// Watch, when set, is called with every address NewAddress gave, for
	// backends that watch only the addresses of stored invoices.
	Watch func(ctx context.Context, address string) error
	// Pay sends amount to address in a new transaction and returns its
	// txid; an error means that no payment was made.
	Pay func(ctx context.Context, address string, amount kassa.Sats) (txid string, err error)
	// Mine mines n blocks on top of the chain.
	Mine func(ctx context.Context, n int) error
}

// RunChain runs the contract of kassa.Chain against fresh backends made
// by open: addresses, Info, each payment reported in the mempool and then
// at its depth, an event whose handler failed delivered again until the
// handler accepts it, and an accepted event not delivered again.
func RunChain(t *testing.T, open func(t *testing.T) ChainHarness) {
	cases := []struct {
		name string
		fn   func(t *testing.T, h ChainHarness)
	}{
		{"NewAddress", chainNewAddress},
		{"Info", chainInfo},
		{"PaymentReported", chainPaymentReported},
		{"RefusedEventDeliveredAgain", chainRefusedEventDeliveredAgain},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open(t)) })
	}
}

func (h ChainHarness) address(t *testing.T, invoiceID string) string {
	t.Helper()
	addr, err := h.Chain.NewAddress(t.Context(), h.Store, invoiceID)
	if err != nil {
		t.Fatalf("NewAddress: %v", err)
	}
	if h.Watch != nil {
		if err := h.Watch(t.Context(), addr); err != nil {
			t.Fatalf("watch %s: %v", addr, err)
		}
	}
	return addr
}

func chainNewAddress(t *testing.T, h ChainHarness) {
	seen := map[string]bool{}
	for i := range 5 {
		addr := h.address(t, "inv_"+string(rune('a'+i)))
		if addr == "" || seen[addr] {
			t.Fatalf("NewAddress gave %q, empty or given before", addr)
		}
		seen[addr] = true
	}
}

func chainInfo(t *testing.T, h ChainHarness) {
	info := h.Chain.Info(t.Context())
	if info.Backend == "" || info.Network == "" {
		t.Errorf("Info = %+v: backend and network must be named", info)
	}
}

// forOutput selects the events of one output.
func forOutput(evs []kassa.ChainEvent, txid string) []kassa.ChainEvent {
	var out []kassa.ChainEvent
	for _, ev := range evs {
		if ev.Payment.TxID == txid {
			out = append(out, ev)
		}
	}
	return out
}

func chainPaymentReported(t *testing.T, h ChainHarness) {
	ctx := t.Context()
	r := newRecorder[kassa.ChainEvent]()
	if err := h.Chain.Start(ctx, r.handle); err != nil {
		t.Fatal(err)
	}
	addr := h.address(t, "inv_paid")
	txid, err := h.Pay(ctx, addr, 15_000)
	if err != nil {
		t.Fatal(err)
	}
	evs := r.waitFor(t, "the payment in the mempool", func(evs []kassa.ChainEvent) bool { return len(forOutput(evs, txid)) > 0 })
	first := forOutput(evs, txid)[0]
	if first.Address != addr || first.Payment.Amount != 15_000 || first.Payment.Confirmations != 0 || first.Dropped {
		t.Errorf("first event = %+v, want the unconfirmed output of 15000 sat to %s", first, addr)
	}
	if err := h.Mine(ctx, 1); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "the payment at one confirmation", func(evs []kassa.ChainEvent) bool {
		for _, ev := range forOutput(evs, txid) {
			if ev.Payment.Confirmations >= 1 {
				return true
			}
		}
		return false
	})
	for _, ev := range forOutput(r.events(), txid) {
		if ev.Address != addr || ev.Payment.Amount != 15_000 || ev.Payment.ID == "" {
			t.Errorf("event %+v does not describe the same output", ev)
		}
	}
}

func chainRefusedEventDeliveredAgain(t *testing.T, h ChainHarness) {
	ctx := t.Context()
	r := newRecorder[kassa.ChainEvent]()
	refused := 0
	r.refuse = func(ev kassa.ChainEvent) bool {
		// The first two deliveries of the unconfirmed output fail.
		if ev.Payment.Confirmations == 0 && refused < 2 {
			refused++
			return true
		}
		return false
	}
	if err := h.Chain.Start(ctx, r.handle); err != nil {
		t.Fatal(err)
	}
	addr := h.address(t, "inv_refused")
	txid, err := h.Pay(ctx, addr, 20_000)
	if err != nil {
		t.Fatal(err)
	}
	unconfirmed := func(evs []kassa.ChainEvent) int {
		n := 0
		for _, ev := range forOutput(evs, txid) {
			if ev.Payment.Confirmations == 0 {
				n++
			}
		}
		return n
	}
	r.waitFor(t, "the refused event delivered a third time", func(evs []kassa.ChainEvent) bool { return unconfirmed(evs) >= 3 })

	// Once accepted, the event is not delivered again: a later event of
	// the same output comes, and no fourth unconfirmed one before it.
	if err := h.Mine(ctx, 1); err != nil {
		t.Fatal(err)
	}
	evs := r.waitFor(t, "the confirmation after the accepted event", func(evs []kassa.ChainEvent) bool {
		out := forOutput(evs, txid)
		return len(out) > 0 && out[len(out)-1].Payment.Confirmations >= 1
	})
	if n := unconfirmed(evs); n != 3 {
		t.Errorf("the unconfirmed output was delivered %d times, want 3 (two refused, one accepted)", n)
	}
}
