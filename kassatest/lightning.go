package kassatest

import (
	"encoding/hex"
	"testing"
	"time"

	"context"

	"github.com/kassapay/kassa"
)

// LightningHarness is a Lightning backend under test and the means to pay
// its invoices from outside.
type LightningHarness struct {
	Lightning kassa.Lightning
	// Pay pays a BOLT11 request of the node with amount (zero: what it
	// asks); an error means that no payment was made.
	Pay func(ctx context.Context, paymentRequest string, amount kassa.MSat) error
}

// RunLightning runs the contract of kassa.Lightning against fresh
// backends made by open: invoices, Info, each settlement delivered, a
// settlement whose handler failed delivered again until accepted and not
// after, and CancelInvoice.
func RunLightning(t *testing.T, open func(t *testing.T) LightningHarness) {
	cases := []struct {
		name string
		fn   func(t *testing.T, h LightningHarness)
	}{
		{"CreateInvoice", lightningCreateInvoice},
		{"Info", lightningInfo},
		{"SettleDelivered", lightningSettleDelivered},
		{"RefusedSettleDeliveredAgain", lightningRefusedSettleDeliveredAgain},
		{"CancelInvoice", lightningCancelInvoice},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open(t)) })
	}
}

func (h LightningHarness) invoice(t *testing.T, amount kassa.MSat, memo string) kassa.LightningInvoice {
	t.Helper()
	inv, err := h.Lightning.CreateInvoice(t.Context(), amount, memo, time.Hour)
	if err != nil {
		t.Fatalf("CreateInvoice(%d): %v", amount, err)
	}
	return inv
}

func lightningCreateInvoice(t *testing.T, h LightningHarness) {
	seen := map[string]bool{}
	for _, amount := range []kassa.MSat{1_000_000, 1_000_000, 0} {
		inv := h.invoice(t, amount, "order 42")
		hash, err := hex.DecodeString(inv.PaymentHash)
		if err != nil || len(hash) != 32 || inv.PaymentRequest == "" {
			t.Fatalf("CreateInvoice = %+v: want a request and a 32-byte hex hash", inv)
		}
		if seen[inv.PaymentHash] {
			t.Fatalf("payment hash %s given twice", inv.PaymentHash)
		}
		seen[inv.PaymentHash] = true
	}
}

func lightningInfo(t *testing.T, h LightningHarness) {
	info := h.Lightning.Info(t.Context())
	if info.Backend == "" || info.Network == "" {
		t.Errorf("Info = %+v: backend and network must be named", info)
	}
}

func countHash(evs []kassa.LightningEvent, hash string) int {
	n := 0
	for _, ev := range evs {
		if ev.PaymentHash == hash {
			n++
		}
	}
	return n
}

func lightningSettleDelivered(t *testing.T, h LightningHarness) {
	ctx := t.Context()
	r := newRecorder[kassa.LightningEvent]()
	if err := h.Lightning.Start(ctx, r.handle); err != nil {
		t.Fatal(err)
	}
	inv := h.invoice(t, 2_000_000, "settle")
	if err := h.Pay(ctx, inv.PaymentRequest, 0); err != nil {
		t.Fatal(err)
	}
	evs := r.waitFor(t, "the settlement", func(evs []kassa.LightningEvent) bool { return countHash(evs, inv.PaymentHash) > 0 })
	for _, ev := range evs {
		if ev.PaymentHash == inv.PaymentHash && (ev.AmountMSat != 2_000_000 || ev.SettledAt.IsZero()) {
			t.Errorf("settlement %+v, want 2000000 msat and a time", ev)
		}
	}
}

func lightningRefusedSettleDeliveredAgain(t *testing.T, h LightningHarness) {
	ctx := t.Context()
	r := newRecorder[kassa.LightningEvent]()
	first := h.invoice(t, 3_000_000, "refused")
	refused := 0
	r.refuse = func(ev kassa.LightningEvent) bool {
		if ev.PaymentHash == first.PaymentHash && refused < 2 {
			refused++
			return true
		}
		return false
	}
	if err := h.Lightning.Start(ctx, r.handle); err != nil {
		t.Fatal(err)
	}
	if err := h.Pay(ctx, first.PaymentRequest, 0); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "the refused settlement delivered a third time", func(evs []kassa.LightningEvent) bool {
		return countHash(evs, first.PaymentHash) >= 3
	})
	// Once accepted it is not delivered again: a later settlement comes,
	// and no fourth delivery of the first before it.
	second := h.invoice(t, 1_000_000, "after")
	if err := h.Pay(ctx, second.PaymentRequest, 0); err != nil {
		t.Fatal(err)
	}
	evs := r.waitFor(t, "the next settlement", func(evs []kassa.LightningEvent) bool { return countHash(evs, second.PaymentHash) > 0 })
	if n := countHash(evs, first.PaymentHash); n != 3 {
		t.Errorf("the refused settlement was delivered %d times, want 3 (two refused, one accepted)", n)
	}
}

func lightningCancelInvoice(t *testing.T, h LightningHarness) {
	ctx := t.Context()
	inv := h.invoice(t, 1_500_000, "cancel")
	if err := h.Lightning.CancelInvoice(ctx, inv.PaymentHash); err != nil {
		t.Fatal(err)
	}
	if err := h.Lightning.CancelInvoice(ctx, inv.PaymentHash); err != nil {
		t.Errorf("cancelling twice: %v", err)
	}
	if err := h.Lightning.CancelInvoice(ctx, hex.EncodeToString(make([]byte, 32))); err != nil {
		t.Errorf("cancelling an unknown invoice: %v", err)
	}
	if err := h.Pay(ctx, inv.PaymentRequest, 0); err == nil {
		t.Error("a cancelled invoice was paid")
	}
}
