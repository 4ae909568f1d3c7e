package actors

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/protos"
)

// command sends an event to an invoice actor, on the node that runs its
// store, and returns the invoice after it.
func (s *Runtime) command(ctx context.Context, storeID, invoiceID string, ev *protos.InvoiceEvent) (*kassa.Invoice, error) {
	if out, ok, err := cmdInvoiceCommand.route(ctx, s.cluster, storeID, func() *protos.InvoiceCommandCall {
		return &protos.InvoiceCommandCall{InvoiceId: invoiceID, Event: ev}
	}); ok {
		return out, err
	}
	res, err := s.request(ctx, s.store(storeID), &invoiceCommand{call: callOf(ctx), invoiceID: invoiceID, event: ev})
	if err != nil {
		return nil, err
	}
	return res.(*kassa.Invoice), nil
}

// commandByInvoice looks up the store of an invoice and sends it ev.
func (s *Service) commandByInvoice(ctx context.Context, invoiceID string, ev *protos.InvoiceEvent) (*kassa.Invoice, error) {
	inv, err := s.cfg.Reader.Invoice(ctx, invoiceID)
	if err != nil {
		return nil, err
	}
	return s.rt.command(ctx, inv.StoreID, invoiceID, ev)
}

// HandleChainEvent applies what the chain watcher saw to the invoice that
// owns the address. Outputs to addresses of no invoice are ignored. It
// returns nil only once the effect is durable (or there is none, such as
// an input seen twice), so the watcher may acknowledge the event; on an
// error the watcher must deliver it again later.
func (s *Service) HandleChainEvent(ctx context.Context, ev kassa.ChainEvent) error {
	ctx, span := s.tracer.Start(ctx, "actors.HandleChainEvent")
	defer span.End()
	id, err := s.cfg.Reader.InvoiceIDByAddress(ctx, ev.Address)
	if err != nil {
		if kassa.ErrorCode(err) == kassa.NotFound {
			return nil
		}
		return fmt.Errorf("chain event: look up address %s: %w", ev.Address, err)
	}
	now := s.cfg.Clock.Now().UTC()
	var in kassa.InvoiceInput = kassa.PaymentObserved{Payment: ev.Payment, At: now}
	if ev.Dropped {
		in = kassa.PaymentDropped{PaymentID: ev.Payment.ID, ReplacedByFee: ev.Payment.ReplaceByFee, At: now}
	}
	span.SetAttributes(attribute.String("invoice.id", id))
	_, err = s.commandByInvoice(ctx, id, eventOf(in))
	if ev.Dropped && errors.Is(err, kassa.ErrUnknownPayment) {
		return nil // never recorded: nothing to take back
	}
	if err != nil && !ignorable(err) {
		s.log.Error("chain event not recorded", "invoice", id, "txid", ev.Payment.TxID, "err", err)
		return fmt.Errorf("chain event for invoice %s: %w", id, err)
	}
	return nil
}

// HandleLightningEvent applies a settled Lightning invoice. Like
// HandleChainEvent it returns nil only once the settle is durable.
func (s *Service) HandleLightningEvent(ctx context.Context, ev kassa.LightningEvent) error {
	ctx, span := s.tracer.Start(ctx, "actors.HandleLightningEvent")
	defer span.End()
	id, err := s.cfg.Reader.InvoiceIDByPaymentHash(ctx, ev.PaymentHash)
	if err != nil {
		if kassa.ErrorCode(err) == kassa.NotFound {
			return nil
		}
		return fmt.Errorf("lightning event: look up hash: %w", err)
	}
	at := ev.SettledAt
	if at.IsZero() {
		at = s.cfg.Clock.Now()
	}
	span.SetAttributes(attribute.String("invoice.id", id))
	in := kassa.LightningPaid{PaymentHash: ev.PaymentHash, AmountMSat: ev.AmountMSat, At: at.UTC()}
	_, err = s.commandByInvoice(ctx, id, eventOf(in))
	if err != nil && !ignorable(err) {
		s.log.ErrorContext(ctx, "lightning event not recorded", "invoice", id, "err", err)
		return fmt.Errorf("lightning event for invoice %s: %w", id, err)
	}
	if err == nil && !ev.SettledAt.IsZero() {
		s.cfg.Metrics.SettleLag.Observe(max(s.cfg.Clock.Now().Sub(ev.SettledAt), 0).Seconds())
	}
	return nil
}

// ignorable reports errors that only say an input came too late or twice.
func ignorable(err error) bool {
	return errors.Is(err, kassa.ErrNothingChanged) || errors.Is(err, kassa.ErrInvoiceNotOpen)
}
