package postgres

import (
	"context"

	"github.com/kassapay/kassa"
)

// Refunds: pull payments and payouts (docs/decisions.md, "Refunds: pull
// payments and payouts"), each a document row indexed by store, and the
// payouts to send under a partial index.

var (
	_ kassa.PayoutBatch = (*Batch)(nil)
	_ kassa.PayoutStore = (*DB)(nil)
)

var (
	errPullPaymentNotFound = kassa.Errorf(kassa.NotFound, "pull payment not found")
	errPayoutNotFound      = kassa.Errorf(kassa.NotFound, "payout not found")
)

// PutPullPayment writes a pull payment.
func (b *Batch) PutPullPayment(pp *kassa.PullPayment) {
	b.queue(`INSERT INTO pull_payments (id, store_id, created_ms, doc) VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc`, pp.ID, pp.StoreID, ms(pp.CreatedAt), b.json(pp))
}

// PutPayout writes a payout, marked to send while Approved or
// InProgress.
func (b *Batch) PutPayout(p *kassa.Payout) {
	toSend := p.State == kassa.PayoutApproved || p.State == kassa.PayoutInProgress
	b.queue(`INSERT INTO payouts (id, store_id, created_ms, to_send, doc) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO UPDATE SET to_send = EXCLUDED.to_send, doc = EXCLUDED.doc`,
		p.ID, p.StoreID, ms(p.CreatedAt), toSend, b.json(p))
}

// PullPayment returns a pull payment, or NotFound.
func (d *DB) PullPayment(ctx context.Context, id string) (*kassa.PullPayment, error) {
	return getDoc[kassa.PullPayment](ctx, d, errPullPaymentNotFound, `SELECT doc FROM pull_payments WHERE id = $1`, id)
}

// PullPayments calls fn for the store's pull payments, newest first.
func (d *DB) PullPayments(ctx context.Context, storeID string, fn func(*kassa.PullPayment) error) error {
	return eachDoc(ctx, d, fn, `SELECT doc FROM pull_payments WHERE store_id = $1 ORDER BY created_ms DESC, id DESC`, storeID)
}

// Payout returns a payout, or NotFound.
func (d *DB) Payout(ctx context.Context, id string) (*kassa.Payout, error) {
	return getDoc[kassa.Payout](ctx, d, errPayoutNotFound, `SELECT doc FROM payouts WHERE id = $1`, id)
}

// Payouts calls fn for the store's payouts, newest first.
func (d *DB) Payouts(ctx context.Context, storeID string, fn func(*kassa.Payout) error) error {
	return eachDoc(ctx, d, fn, `SELECT doc FROM payouts WHERE store_id = $1 ORDER BY created_ms DESC, id DESC`, storeID)
}

// PayoutsToSend calls fn for each Approved or InProgress payout.
func (d *DB) PayoutsToSend(ctx context.Context, fn func(*kassa.Payout) error) error {
	return eachDoc(ctx, d, fn, `SELECT doc FROM payouts WHERE to_send ORDER BY id`)
}
