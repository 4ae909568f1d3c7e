package actors

import (
	"context"
	"fmt"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
	"github.com/kassapay/kassa/protos"
	"github.com/kassapay/kassa/telemetry"
)

var _ kassa.RefundLedger = (*Service)(nil)

// changeRefunds has the store actor decide and record a change of the
// store's refunds (kassa.RefundLedger): in its mailbox, so that the
// balance it checks moves only by what it writes.
type changeRefunds struct {
	call callContext
	cmd  *kassa.RefundCommand
}

// ChangeRefunds has the store's actor decide cmd and commit its change
// (kassa.RefundLedger), on the node that runs the store: the command is
// data, which the cluster carries (cmdChangeRefunds).
func (s *Service) ChangeRefunds(ctx context.Context, storeID string, cmd *kassa.RefundCommand) (*kassa.RefundChange, error) {
	if out, routed, err := cmdChangeRefunds.route(ctx, s.cluster, storeID, func() *protos.ChangeRefundsCall {
		return &protos.ChangeRefundsCall{Command: toDoc[*protos.RefundCommandDoc](cmd)}
	}); routed {
		return out, err
	}
	ctx, span := s.tracer.Start(ctx, "actors.ChangeRefunds")
	defer span.End()
	res, err := s.ask(ctx, storeID, &changeRefunds{call: callOf(ctx), cmd: cmd})
	if err != nil {
		return nil, err
	}
	return res.(*kassa.RefundChange), nil
}

// changeRefunds decides msg's change with the store's available balance
// and commits it, its ledger lines and its journal event, as one batch.
func (a *storeActor) changeRefunds(msg *changeRefunds) reply {
	rctx, cancel := msg.call.context()
	defer cancel()
	if a.st == nil {
		return reply{err: kassa.Errorf(kassa.NotFound, "store not found")}
	}
	if _, ok := a.p.journal.NewBatch().(kassa.PayoutBatch); !ok {
		return reply{err: fmt.Errorf("storage %T cannot record payouts", a.p.journal)}
	}
	payouts, ok := a.p.reader.(kassa.RefundReader)
	if !ok {
		return reply{err: fmt.Errorf("storage %T cannot read payouts", a.p.reader)}
	}
	balance, err := a.p.reader.Balance(rctx, a.id)
	if err != nil {
		return reply{err: err}
	}
	ch, err := msg.cmd.Decide(rctx, a.st, balance-a.reservedTotal, payouts)
	if err != nil {
		return reply{err: err}
	}
	if ch.Repeat {
		return reply{value: ch}
	}
	ev := &protos.RefundsChanged{}
	if ch.PullPayment != nil {
		if ev.PullPayment, err = format.Marshal(ch.PullPayment); err != nil {
			return reply{err: err}
		}
	}
	if ch.Payout != nil {
		if ev.Payout, err = format.Marshal(ch.Payout); err != nil {
			return reply{err: err}
		}
	}
	now := a.p.clock.Now()
	// The payout's webhook events go to the outbox in the batch that
	// records the change: after a crash, every one is still sent.
	var deliveries []*kassa.Delivery
	if ch.Payout != nil && a.p.outbox != nil {
		for _, typ := range ch.Events {
			ds, err := a.p.outbox.payoutDeliveries(rctx, ch.Payout, typ, now)
			if err != nil {
				return reply{err: fmt.Errorf("webhooks of store %s: %w", a.id, err)}
			}
			deliveries = append(deliveries, ds...)
		}
	}
	err = a.commitLine(rctx, &protos.StoreEvent{AtUnixNano: now.UnixNano(), Kind: &protos.StoreEvent_RefundsChanged{RefundsChanged: ev}}, refundLine(ch), func(b kassa.Batch, _ uint64) {
		pb := b.(kassa.PayoutBatch)
		if ch.PullPayment != nil {
			pb.PutPullPayment(ch.PullPayment)
		}
		if ch.Payout != nil {
			pb.PutPayout(ch.Payout)
		}
		for i := range ch.Lines {
			b.PutTransaction(&ch.Lines[i])
		}
		for _, d := range deliveries {
			d.TraceParent = telemetry.TraceParent(rctx)
			b.PutDelivery(d, true)
		}
	})
	if err != nil {
		return reply{err: err}
	}
	a.p.outbox.notify(deliveries)
	return reply{value: ch}
}
