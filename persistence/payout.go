package persistence

import (
	"context"

	"github.com/kassapay/kassa"
)

// Refunds: pull payments and payouts (docs/decisions.md, "Refunds: pull
// payments and payouts"). Keys:
//
//	ppl/<id>                        pull payment JSON
//	pps/<store>\0<created:8><id>    pull payments of a store
//	pay/<id>                        payout JSON
//	pys/<store>\0<created:8><id>    payouts of a store
//	pyo/<id>                        payouts to send (Approved, InProgress) → store

var (
	_ kassa.PayoutBatch = (*Batch)(nil)
	_ kassa.PayoutStore = (*DB)(nil)
)

var (
	errPullPaymentNotFound = kassa.Errorf(kassa.NotFound, "pull payment not found")
	errPayoutNotFound      = kassa.Errorf(kassa.NotFound, "payout not found")
)

func pullPaymentKey(id string) []byte { return key("ppl/", str(id)) }
func pullPaymentByStorePrefix(store string) []byte {
	return key("pps/", str(store), sepb)
}
func payoutKey(id string) []byte              { return key("pay/", str(id)) }
func payoutByStorePrefix(store string) []byte { return key("pys/", str(store), sepb) }
func payoutToSendKey(id string) []byte        { return key("pyo/", str(id)) }
func payoutToSendPrefix() []byte              { return []byte("pyo/") }
func pullPaymentIndexKey(pp *kassa.PullPayment) []byte {
	return key("pps/", str(pp.StoreID), sepb, ms(pp.CreatedAt), str(pp.ID))
}

// PutPullPayment writes a pull payment and its index.
func (b *Batch) PutPullPayment(pp *kassa.PullPayment) {
	b.setJSON(pullPaymentKey(pp.ID), nil, pp)
	b.set(pullPaymentIndexKey(pp), nil)
}

// PutPayout writes a payout, its index and its place among those to
// send.
func (b *Batch) PutPayout(p *kassa.Payout) {
	b.setJSON(payoutKey(p.ID), nil, p)
	b.set(key("pys/", str(p.StoreID), sepb, ms(p.CreatedAt), str(p.ID)), nil)
	if p.State == kassa.PayoutApproved || p.State == kassa.PayoutInProgress {
		b.set(payoutToSendKey(p.ID), str(p.StoreID))
	} else {
		b.del(payoutToSendKey(p.ID))
	}
}

// PullPayment returns a pull payment, or NotFound.
func (d *DB) PullPayment(ctx context.Context, id string) (*kassa.PullPayment, error) {
	return getJSON[kassa.PullPayment](d, pullPaymentKey(id), errPullPaymentNotFound)
}

// PullPayments calls fn for the store's pull payments, newest first.
func (d *DB) PullPayments(ctx context.Context, storeID string, fn func(*kassa.PullPayment) error) error {
	_, err := d.scanRange(ctx, pullPaymentByStorePrefix(storeID), kassa.ListQuery{}, func(suffix []byte) error {
		pp, err := d.PullPayment(ctx, string(suffix[8:]))
		if err != nil {
			return err
		}
		return fn(pp)
	})
	return err
}

// Payout returns a payout, or NotFound.
func (d *DB) Payout(ctx context.Context, id string) (*kassa.Payout, error) {
	return getJSON[kassa.Payout](d, payoutKey(id), errPayoutNotFound)
}

// Payouts calls fn for the store's payouts, newest first.
func (d *DB) Payouts(ctx context.Context, storeID string, fn func(*kassa.Payout) error) error {
	_, err := d.scanRange(ctx, payoutByStorePrefix(storeID), kassa.ListQuery{}, func(suffix []byte) error {
		p, err := d.Payout(ctx, string(suffix[8:]))
		if err != nil {
			return err
		}
		return fn(p)
	})
	return err
}

// PayoutsToSend calls fn for each Approved or InProgress payout.
func (d *DB) PayoutsToSend(ctx context.Context, fn func(*kassa.Payout) error) error {
	var ids []string
	if err := d.scanPrefix(ctx, payoutToSendPrefix(), func(rest, _ []byte) error {
		ids = append(ids, string(rest))
		return nil
	}); err != nil {
		return err
	}
	for _, id := range ids {
		p, err := d.Payout(ctx, id)
		if err != nil {
			return err
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}
