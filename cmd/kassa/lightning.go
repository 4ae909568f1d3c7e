package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/lightning/lnd"
	"github.com/kassapay/kassa/persistence"
)

// newLND connects the lnd backend of `--lightning lnd://…`. It does not
// wait for lnd: while lnd is unreachable health says so and the watcher
// reconnects with backoff.
func newLND(raw string, db *persistence.DB, clock kassa.Clock, log *slog.Logger) (*lnd.Node, error) {
	target, err := lnd.ParseTarget(raw)
	if err != nil {
		return nil, err
	}
	rpc, err := lnd.Dial(target)
	if err != nil {
		return nil, err
	}
	return lnd.New(rpc, lnd.Config{
		Cursor:            db,
		OpenPaymentHashes: openPaymentHashes(db),
		Clock:             clock,
		Logger:            log,
	})
}

// openPaymentHashes lists the payment hashes of the invoices that still
// wait for their payment, for the lnd backend's reconcile pass.
func openPaymentHashes(r kassa.Reader) func(context.Context, func(string) error) error {
	return func(ctx context.Context, fn func(string) error) error {
		return r.OpenInvoices(ctx, func(id, _ string, _ time.Time) error {
			inv, err := r.Invoice(ctx, id)
			if err != nil {
				if kassa.ErrorCode(err) == kassa.NotFound {
					return nil
				}
				return err
			}
			if inv.PaymentHash == "" || inv.Status != kassa.InvoiceNew {
				return nil
			}
			return fn(inv.PaymentHash)
		})
	}
}
