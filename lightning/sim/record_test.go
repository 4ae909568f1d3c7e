package sim

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/kassapay/kassa/internal/simstore"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/lightning/bolt11"
)

// TestOpenNodeRecordsOnlyClosedInvoices checks that a node made by Open
// writes no record when it makes an invoice, one when an invoice is paid
// or cancelled, and that a node reopened on its store settles the
// invoices made before and refuses the closed ones.
func TestOpenNodeRecordsOnlyClosedInvoices(t *testing.T) {
	ctx := context.Background()
	store := simstore.NewMem()
	clock := kassatest.NewTestClock(epoch)
	n, err := Open(ctx, clock, store)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(t.Context(), (&recorder{}).handle); err != nil {
		t.Fatal(err)
	}
	paid := create(t, n, 1000, "paid", time.Hour)
	cancelled := create(t, n, 1000, "cancelled", time.Hour)
	open := create(t, n, 2000, "open", time.Hour)
	if got := n.invoiceCount(ctx); got != 0 {
		t.Fatalf("%d invoice records after three creates, want 0", got)
	}
	if _, err := n.Pay(ctx, paid.PaymentRequest, 0); err != nil {
		t.Fatal(err)
	}
	if err := n.CancelInvoice(ctx, cancelled.PaymentHash); err != nil {
		t.Fatal(err)
	}
	if got := n.invoiceCount(ctx); got != 2 {
		t.Fatalf("%d invoice records after a settle and a cancel, want 2", got)
	}

	again, err := Open(ctx, clock, store)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	if err := again.Start(t.Context(), r.handle); err != nil {
		t.Fatal(err)
	}
	if _, err := again.Pay(ctx, paid.PaymentRequest, 0); !errors.Is(err, ErrInvoiceAlreadyPaid) {
		t.Errorf("reopened: Pay of the paid invoice = %v, want ErrInvoiceAlreadyPaid", err)
	}
	if _, err := again.Pay(ctx, cancelled.PaymentRequest, 0); !errors.Is(err, ErrInvoiceCancelled) {
		t.Errorf("reopened: Pay of the cancelled invoice = %v, want ErrInvoiceCancelled", err)
	}
	if _, ok := again.Preimage(cancelled.PaymentHash); ok {
		t.Error("reopened: a preimage for the cancelled invoice")
	}
	if _, err := again.Pay(ctx, open.PaymentRequest, 0); err != nil {
		t.Fatalf("reopened: Pay of the open invoice: %v", err)
	}
	if evs := r.take(); len(evs) != 1 || evs[0].PaymentHash != open.PaymentHash || evs[0].AmountMSat != 2000 {
		t.Errorf("reopened: events %v, want the open invoice's 2000 msat", evs)
	}
	for _, inv := range []string{paid.PaymentHash, open.PaymentHash} {
		preimage, ok := again.Preimage(inv)
		raw, _ := hex.DecodeString(preimage)
		if sum := sha256.Sum256(raw); !ok || hex.EncodeToString(sum[:]) != inv {
			t.Errorf("reopened: preimage %q (%v) does not hash to %s", preimage, ok, inv)
		}
	}
}

// TestOpenNodeSettlesRecordedInvoice checks that an invoice with a
// record of its own preimage, as a node wrote for every invoice before
// it derived them, settles with that preimage, and that one signed by
// the node whose hash is not a derived one and has no record is unknown.
func TestOpenNodeSettlesRecordedInvoice(t *testing.T) {
	ctx := context.Background()
	clock := kassatest.NewTestClock(epoch)
	n, err := Open(ctx, clock, simstore.NewMem())
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	if err := n.Start(t.Context(), r.handle); err != nil {
		t.Fatal(err)
	}
	request := func(preimage [32]byte) (string, string) {
		var addr [32]byte
		_, _ = rand.Read(addr[:])
		hash := sha256.Sum256(preimage[:])
		description, expiry, msat := "before", time.Hour, uint64(3000)
		inv := &bolt11.Invoice{Net: Params, Timestamp: epoch, PaymentHash: &hash, PaymentAddr: &addr,
			Description: &description, ExpiryTime: &expiry, MilliSat: &msat, Features: []int{8, 14, 17}}
		req, err := inv.Encode(n.key)
		if err != nil {
			t.Fatal(err)
		}
		return req, hex.EncodeToString(hash[:])
	}
	var recorded, unrecorded [32]byte
	_, _ = rand.Read(recorded[:])
	_, _ = rand.Read(unrecorded[:])
	req, hash := request(recorded)
	rec := &invoiceRecord{AmountMSat: 3000, ExpiresAt: epoch.Add(time.Hour), Preimage: hex.EncodeToString(recorded[:])}
	if err := n.save(ctx, hash, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Pay(ctx, req, 0); err != nil {
		t.Fatalf("Pay of a recorded invoice: %v", err)
	}
	if got, ok := n.Preimage(hash); !ok || got != rec.Preimage {
		t.Errorf("preimage %q (%v), want the recorded %q", got, ok, rec.Preimage)
	}
	if evs := r.take(); len(evs) != 1 || evs[0].AmountMSat != 3000 {
		t.Errorf("events %v, want one of 3000 msat", evs)
	}
	req, _ = request(unrecorded)
	if _, err := n.Pay(ctx, req, 0); !errors.Is(err, ErrUnknownInvoice) {
		t.Errorf("Pay of a signed invoice with no record and no derived hash = %v, want ErrUnknownInvoice", err)
	}
}
