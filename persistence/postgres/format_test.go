package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
)

// unversioned returns the fixture of a kind as Kassa wrote it before
// format versions (persistence/format/testdata/v0), and it decoded.
func unversioned[T any](t *testing.T, name string) ([]byte, *T) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "format", "testdata", "v0", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return data, &v
}

func sameJSON(t *testing.T, what string, got any, err error, want any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

// TestUnversionedDocumentsLoad: every kind of document as PostgreSQL
// holds it from before format versions (no "_v") reads as it was
// written; a store of a newer format is refused with a VersionError.
func TestUnversionedDocumentsLoad(t *testing.T) {
	d := openTest(t)
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := d.pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	st, wantStore := unversioned[kassa.Store](t, "store")
	exec(`INSERT INTO stores (id, seq, doc) VALUES ($1, 3, $2)`, wantStore.ID, st)
	inv, wantInvoice := unversioned[kassa.Invoice](t, "invoice")
	exec(`INSERT INTO invoices (id, store_id, created_ms, seq, doc) VALUES ($1, $2, 0, 4, $3)`, wantInvoice.ID, wantInvoice.StoreID, inv)
	tx, wantTx := unversioned[kassa.Transaction](t, "transaction")
	exec(`INSERT INTO transactions (id, store_id, invoice_id, created_ms, doc) VALUES ($1, $2, $3, 0, $4)`, wantTx.ID, wantTx.StoreID, wantTx.InvoiceID, tx)
	pr, wantPR := unversioned[kassa.PaymentRequest](t, "payment-request")
	exec(`INSERT INTO payment_requests (id, store_id, created_ms, doc) VALUES ($1, $2, 0, $3)`, wantPR.ID, wantPR.StoreID, pr)
	wh, wantWebhook := unversioned[kassa.Webhook](t, "webhook")
	exec(`INSERT INTO webhooks (id, store_id, doc) VALUES ($1, $2, $3)`, wantWebhook.ID, wantWebhook.StoreID, wh)
	dl, wantDelivery := unversioned[kassa.Delivery](t, "delivery")
	exec(`INSERT INTO deliveries (id, webhook_id, created_ms, doc) VALUES ($1, $2, 0, $3)`, wantDelivery.ID, wantDelivery.WebhookID, dl)
	fw, wantForward := unversioned[kassa.Forward](t, "forward")
	exec(`INSERT INTO forwards (id, store_id, open, doc) VALUES ($1, $2, false, $3)`, wantForward.ID, wantForward.StoreID, fw)
	q, wantQueued := unversioned[kassa.QueuedTransfer](t, "queued-transfer")
	exec(`INSERT INTO forward_queue (store_id, transaction_id, doc) VALUES ($1, $2, $3)`, wantQueued.StoreID, wantQueued.TransactionID, q)
	rr, wantRequest := unversioned[kassa.RequestRecord](t, "request-record")
	exec(`INSERT INTO requests (store_id, request_id, doc) VALUES ($1, $2, $3)`, wantRequest.StoreID, wantRequest.ID, rr)

	gotStore, seq, err := d.StoreSnapshot(ctx, wantStore.ID)
	if seq != 3 {
		t.Fatalf("store snapshot seq %d", seq)
	}
	sameJSON(t, "store", gotStore, err, wantStore)
	gotInvoice, seq, err := d.InvoiceSnapshot(ctx, wantInvoice.ID)
	if seq != 4 {
		t.Fatalf("invoice snapshot seq %d", seq)
	}
	sameJSON(t, "invoice", gotInvoice, err, wantInvoice)
	gotTx, err := d.Transaction(ctx, wantTx.ID)
	sameJSON(t, "transaction", gotTx, err, wantTx)
	gotPR, err := d.PaymentRequest(ctx, wantPR.ID)
	sameJSON(t, "payment request", gotPR, err, wantPR)
	gotWebhook, err := d.Webhook(ctx, wantWebhook.ID)
	sameJSON(t, "webhook", gotWebhook, err, wantWebhook)
	gotDelivery, err := d.Delivery(ctx, wantDelivery.ID)
	sameJSON(t, "delivery", gotDelivery, err, wantDelivery)
	gotForward, err := d.Forward(ctx, wantForward.ID)
	sameJSON(t, "forward", gotForward, err, wantForward)
	var gotQueued []kassa.QueuedTransfer
	err = d.QueuedTransfers(ctx, wantQueued.StoreID, func(q kassa.QueuedTransfer) error { gotQueued = append(gotQueued, q); return nil })
	sameJSON(t, "queued transfers", gotQueued, err, []kassa.QueuedTransfer{*wantQueued})
	gotRequest, err := d.Request(ctx, wantRequest.StoreID, wantRequest.ID)
	sameJSON(t, "request record", gotRequest, err, wantRequest)

	// A write now carries the version; a newer one is refused.
	b := d.NewBatch()
	b.PutStore(gotStore, 5)
	if err := d.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	if err := d.pool.QueryRow(ctx, `SELECT doc FROM stores WHERE id = $1`, wantStore.ID).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if v, ok := format.Version(raw); !ok || v != format.Store.Version {
		t.Fatalf("a store written now declares version %d (%v): %s", v, ok, raw)
	}
	exec(`INSERT INTO stores (id, seq, doc) VALUES ('newer', 1, $1)`, []byte(`{"_v":99,"id":"newer"}`))
	_, _, err = d.StoreSnapshot(ctx, "newer")
	var verr *format.VersionError
	if !errors.As(err, &verr) || verr.Found != 99 {
		t.Fatalf("a store snapshot of format 99: %v; want a VersionError", err)
	}
}
