package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
)

// unversioned returns the fixture of a kind as Kassa wrote it before
// format versions (persistence/format/testdata/v0), and it decoded.
func unversioned[T any](t *testing.T, name string) ([]byte, *T) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("format", "testdata", "v0", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return data, &v
}

// TestUnversionedDocumentsLoad: every kind of document as Pebble holds
// it from before format versions (no "_v") reads as it was written; a
// store snapshot of a newer format is refused with a VersionError.
func TestUnversionedDocumentsLoad(t *testing.T) {
	d, err := Open("", Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	set := func(k, v []byte) {
		t.Helper()
		if err := d.db.Set(k, v, pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	st, wantStore := unversioned[kassa.Store](t, "store")
	set(storeKey(wantStore.ID), append(u64(3), st...))
	inv, wantInvoice := unversioned[kassa.Invoice](t, "invoice")
	set(invoiceKey(wantInvoice.ID), append(u64(4), inv...))
	tx, wantTx := unversioned[kassa.Transaction](t, "transaction")
	set(transactionKey(wantTx.ID), tx)
	pr, wantPR := unversioned[kassa.PaymentRequest](t, "payment-request")
	set(paymentRequestKey(wantPR.ID), pr)
	wh, wantWebhook := unversioned[kassa.Webhook](t, "webhook")
	set(webhookKey(wantWebhook.ID), wh)
	dl, wantDelivery := unversioned[kassa.Delivery](t, "delivery")
	set(deliveryKey(wantDelivery.ID), dl)
	fw, wantForward := unversioned[kassa.Forward](t, "forward")
	set(forwardKey(wantForward.ID), fw)
	q, wantQueued := unversioned[kassa.QueuedTransfer](t, "queued-transfer")
	set(forwardQueueKey(wantQueued.StoreID, wantQueued.TransactionID), q)
	rr, wantRequest := unversioned[kassa.RequestRecord](t, "request-record")
	set(requestKey(wantRequest.StoreID, wantRequest.ID), rr)

	gotStore, seq, err := d.StoreSnapshot(ctx, wantStore.ID)
	if err != nil || seq != 3 {
		t.Fatalf("store snapshot: seq %d, %v", seq, err)
	}
	sameJSON(t, "store", gotStore, wantStore)
	gotInvoice, seq, err := d.InvoiceSnapshot(ctx, wantInvoice.ID)
	if err != nil || seq != 4 {
		t.Fatalf("invoice snapshot: seq %d, %v", seq, err)
	}
	sameJSON(t, "invoice", gotInvoice, wantInvoice)
	check := func(what string, got any, err error, want any) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		sameJSON(t, what, got, want)
	}
	gotTx, err := d.Transaction(ctx, wantTx.ID)
	check("transaction", gotTx, err, wantTx)
	gotPR, err := d.PaymentRequest(ctx, wantPR.ID)
	check("payment request", gotPR, err, wantPR)
	gotWebhook, err := d.Webhook(ctx, wantWebhook.ID)
	check("webhook", gotWebhook, err, wantWebhook)
	gotDelivery, err := d.Delivery(ctx, wantDelivery.ID)
	check("delivery", gotDelivery, err, wantDelivery)
	gotForward, err := d.Forward(ctx, wantForward.ID)
	check("forward", gotForward, err, wantForward)
	var gotQueued []kassa.QueuedTransfer
	err = d.QueuedTransfers(ctx, wantQueued.StoreID, func(q kassa.QueuedTransfer) error { gotQueued = append(gotQueued, q); return nil })
	check("queued transfers", gotQueued, err, []kassa.QueuedTransfer{*wantQueued})
	gotRequest, err := d.Request(ctx, wantRequest.StoreID, wantRequest.ID)
	check("request record", gotRequest, err, wantRequest)

	// A write now carries the version; a newer one is refused.
	b := d.NewBatch()
	b.PutStore(gotStore, 5)
	if err := d.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	raw, err := d.get(storeKey(wantStore.ID))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := format.Version(raw[8:]); !ok || v != format.Store.Version {
		t.Fatalf("a store written now declares version %d (%v): %s", v, ok, raw[8:])
	}
	set(storeKey("newer"), append(u64(1), `{"_v":99,"id":"newer"}`...))
	_, _, err = d.StoreSnapshot(ctx, "newer")
	var verr *format.VersionError
	if !errors.As(err, &verr) || verr.Found != 99 {
		t.Fatalf("a store snapshot of format 99: %v; want a VersionError", err)
	}
}
