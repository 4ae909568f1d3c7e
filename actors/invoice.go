package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/protos"
	"github.com/kassapay/kassa/telemetry"
)

// invoiceActor owns one invoice: it applies inputs through the pure state
// machine, journals them, and owns the invoice's timer.
type invoiceActor struct {
	p *invoicePorts

	inv    kassa.Invoice
	seq    uint64
	cancel func()
	armed  time.Time
	// created is the traceparent of the invoice's creation, which the
	// spans of its webhook deliveries link to.
	created string
	// broken, once set, is why the invoice's journal does not replay:
	// the actor answers it to every command and journals nothing.
	broken *JournalFault
}

// createInvoice is the first message of a new invoice actor.
type createInvoice struct {
	call    callContext
	inv     kassa.Invoice
	effects []kassa.Effect
}

// crash makes an invoice actor panic. Only tests send it, to check that
// the supervisor restarts the actor from storage.
type crash struct{}

// load makes a started invoice actor load its state, unless a create
// message gave it one first. Every instance sends it to itself on start,
// so a new invoice is never read from storage and a restarted one always
// is.
type load struct{}

// deadlineFired is sent by the invoice's own timer.
type deadlineFired struct{ at time.Time }

func (a *invoiceActor) Receive(ctx actor.Context) {
	defer answerPanic(ctx, a.p.log)
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		ctx.Send(ctx.Self(), load{})
	case load:
		if a.inv.ID == "" && a.broken == nil {
			a.load(ctx)
		}
	case *createInvoice:
		ctx.Respond(a.create(ctx, msg))
	case *protos.InvoiceEvent:
		a.handleEvent(ctx, context.Background(), msg)
	case *tracedEvent:
		parent, cancel := msg.call.context()
		a.handleEvent(ctx, parent, msg.event)
		cancel()
	case *deadlineFired:
		if a.broken != nil || !msg.at.Equal(a.armed) {
			return // a timer that was re-armed or cancelled after it fired
		}
		a.armed = time.Time{}
		if _, err := a.deadline(ctx, context.Background(), a.p.clock.Now().UTC()); err != nil && !ignorable(err) && !notDue(err) {
			a.p.log.Error("invoice deadline", "invoice", a.inv.ID, "err", err)
		}
	case crash:
		panic("crash requested")
	case *actor.Stopping:
		a.disarm()
	case *actor.Restarting:
		a.disarm()
	}
}

// tracedEvent is an invoice event with the call context of the request
// that caused it, so that the invoice's spans join that trace. Across
// nodes the bare protobuf event travels and the trace context goes in
// headers.
type tracedEvent struct {
	call  callContext
	event *protos.InvoiceEvent
}

func (a *invoiceActor) handleEvent(ctx actor.Context, parent context.Context, ev *protos.InvoiceEvent) {
	if parent == nil {
		parent = context.Background()
	}
	if a.inv.ID == "" && a.broken == nil {
		a.load(ctx) // an event can come before the load message
	}
	if a.broken != nil {
		if ctx.Sender() != nil {
			ctx.Respond(reply{err: a.broken})
		}
		return
	}
	in, err := inputOf(ev)
	if err != nil {
		if ctx.Sender() != nil {
			ctx.Respond(reply{err: err})
		}
		return
	}
	var inv *kassa.Invoice
	switch in := in.(type) {
	case kassa.ExpiryReached:
		inv, err = a.deadline(ctx, parent, in.At)
	case kassa.MonitoringEnded:
		inv, err = a.deadline(ctx, parent, in.At)
	default:
		inv, err = a.apply(ctx, parent, in)
	}
	if ctx.Sender() != nil {
		ctx.Respond(reply{value: inv, err: err})
	}
}

// load rebuilds the invoice from its snapshot and any later events.
func (a *invoiceActor) load(ctx actor.Context) {
	self := ctx.Self().Id
	id := self[strings.LastIndex(self, "/inv/")+len("/inv/"):]
	err := a.replay(id)
	if errors.Is(err, errSnapshotBehind) {
		// Another activation (a node of the cluster) committed the
		// create between the two reads: its snapshot is there now.
		err = a.replay(id)
	}
	var fault *JournalFault
	if !errors.As(err, &fault) {
		fault = snapshotFault(kassa.Stream{Kind: kassa.KindInvoice, ID: id}, err)
	}
	if fault != nil {
		// Not a crash to retry: the journal holds what it holds.
		a.broken = a.p.faults.record(fault)
		a.disarm()
		return
	}
	if err != nil {
		panic(fmt.Sprintf("load invoice %s: %v", id, err))
	}
	if a.inv.ID == "" {
		// A new invoice whose create message is still on its way: the
		// load raced ahead of it. The create gives the actor its state.
		return
	}
	a.arm(ctx)
	a.maybePassivate(ctx)
}

// errSnapshotBehind is a created event without the invoice document
// whose snapshot was not there when load read it.
var errSnapshotBehind = errors.New("the invoice's created event holds no document and the snapshot read before it has none")

// replay reads the invoice's snapshot, then applies the events after it.
// The snapshot written in the same batch as the created event holds the
// invoice document (older journals also hold it in the created event,
// which load still reads), so a snapshot at or after the created event
// is needed.
func (a *invoiceActor) replay(id string) error {
	bg := context.Background()
	inv, seq, err := a.p.journal.InvoiceSnapshot(bg, id)
	if err != nil && kassa.ErrorCode(err) != kassa.NotFound {
		return err
	}
	if inv != nil {
		a.inv, a.seq = *inv, seq
	}
	stream := kassa.Stream{Kind: kassa.KindInvoice, ID: id}
	err = a.p.journal.Events(bg, stream, a.seq, func(seq uint64, data []byte) error {
		var ev protos.InvoiceEvent
		if err := proto.Unmarshal(data, &ev); err != nil {
			return &JournalFault{Stream: stream, Seq: seq, Event: "undecodable", Err: err}
		}
		if c := ev.GetCreated(); c != nil {
			if len(c.Invoice) == 0 {
				return errSnapshotBehind
			}
			var created kassa.Invoice
			if err := jsonUnmarshal(c.Invoice, &created); err != nil {
				return &JournalFault{Stream: stream, Seq: seq, Event: eventKind(ev.Kind), Err: err}
			}
			a.inv, a.created = created, ev.TraceParent
		} else {
			in, err := inputOf(&ev)
			if err != nil {
				return &JournalFault{Stream: stream, Seq: seq, Event: eventKind(ev.Kind), Err: err}
			}
			// Every journaled event applied when it was written: one
			// that does not now means the journal or the state machine
			// changed under it, and the state is unknown.
			next, _, err := a.inv.Apply(in)
			if err != nil {
				return &JournalFault{Stream: stream, Seq: seq, Event: eventKind(ev.Kind), Err: err}
			}
			a.inv = next
		}
		a.seq = seq
		return nil
	})
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	return nil
}

func (a *invoiceActor) stream() kassa.Stream {
	return kassa.Stream{Kind: kassa.KindInvoice, ID: a.inv.ID}
}

func (a *invoiceActor) create(ctx actor.Context, msg *createInvoice) reply {
	parent, cancel := msg.call.context()
	defer cancel()
	created, deliveries, err := a.p.writeNew(parent, &msg.inv, msg.effects)
	if err != nil {
		ctx.Send(ctx.Parent(), &feeReleased{invoiceID: msg.inv.ID})
		ctx.Send(ctx.Parent(), &passivate{invoiceID: msg.inv.ID})
		return reply{err: err}
	}
	a.inv, a.seq, a.created = msg.inv, 1, created
	inv := a.inv
	a.perform(ctx, parent, &inv, msg.effects)
	a.p.outbox.notify(deliveries)
	a.maybePassivate(ctx)
	return reply{value: &inv}
}

// writeNew commits a new invoice in one batch: its created event, its
// snapshot, the request id that made it and the webhook deliveries of
// its first event, under the span invoice.Create. It returns the
// creation's traceparent and the deliveries to notify; the caller
// performs the effects. The invoice's actor calls it, or, for an invoice
// that would passivate at once, the create itself (Service.createInvoice).
func (p *invoicePorts) writeNew(parent context.Context, inv *kassa.Invoice, effects []kassa.Effect) (string, []*kassa.Delivery, error) {
	_, span := p.tracer.Start(parent, "invoice.Create", trace.WithAttributes(
		attribute.String("invoice.id", inv.ID), attribute.String("store.id", inv.StoreID)))
	defer span.End()
	spanCtx := trace.ContextWithSpan(parent, span)
	ev := createdEvent(inv)
	ev.TraceParent = telemetry.TraceParent(spanCtx)
	data, err := marshal(ev)
	if err != nil {
		return "", nil, err
	}
	b := p.journal.NewBatch()
	b.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: inv.ID}, 1, data)
	b.PutInvoice(inv, nil, 1)
	putRequest(parent, b, inv.StoreID, kassa.RequestInvoice, inv.ID)
	deliveries, err := p.deliveries(spanCtx, b, inv, effects, func() string { return ev.TraceParent })
	if err == nil {
		err = p.commit(spanCtx, b)
	}
	if err != nil {
		return "", nil, err
	}
	countCreated(p.metrics, inv)
	return ev.TraceParent, deliveries, nil
}

// apply runs in through the state machine, journals it with everything
// that follows from it in one batch, then performs the effects.
//
// When the journal refuses the event's sequence number (a Conflict),
// another activation of this invoice wrote first: in a cluster two
// activations of one identity can briefly coexist. The actor reloads
// from the journal and applies in once more to the state it finds, so
// that the input is neither lost nor applied twice (the state machine
// refuses an input already applied, by its natural id).
func (a *invoiceActor) apply(ctx actor.Context, parent context.Context, in kassa.InvoiceInput) (*kassa.Invoice, error) {
	inv, err := a.applyOnce(ctx, parent, in)
	if err != nil && errors.Is(err, errStaleState) {
		a.p.log.Warn("invoice written by another activation; reloading", "invoice", a.inv.ID, "seq", a.seq)
		a.load(ctx)
		inv, err = a.applyOnce(ctx, parent, in)
	}
	return inv, err
}

// errStaleState marks a commit the journal refused because the actor's
// state was stale.
var errStaleState = errors.New("stale actor state")

func (a *invoiceActor) applyOnce(ctx actor.Context, parent context.Context, in kassa.InvoiceInput) (*kassa.Invoice, error) {
	if a.broken != nil {
		return nil, a.broken
	}
	if a.inv.ID == "" {
		return nil, kassa.Errorf(kassa.NotFound, "invoice not found")
	}
	prev := a.inv
	next, effects, err := a.inv.Apply(in)
	if err != nil {
		return &prev, err
	}
	spanCtx, span := a.p.tracer.Start(parent, "invoice.Apply", trace.WithAttributes(
		attribute.String("invoice.id", a.inv.ID), attribute.String("store.id", a.inv.StoreID), attribute.String("input", fmt.Sprintf("%T", in))))
	defer span.End()
	ev := eventOf(in)
	ev.TraceParent = telemetry.TraceParent(spanCtx)
	data, err := marshal(ev)
	if err != nil {
		return nil, err
	}
	seq := a.seq + 1
	b := a.p.journal.NewBatch()
	b.AppendEvent(a.stream(), seq, data)
	for _, line := range kassa.SettlementLines(&next, effects, a.p.ledger.custody) {
		if err := a.p.ledger.put(spanCtx, b, &line); err != nil {
			return nil, err
		}
	}
	if next.PaymentLinkID != "" && slices.ContainsFunc(effects, isSettle) {
		b.MarkPaymentRequestPaid(next.PaymentLinkID, next.ID)
	}
	b.PutInvoice(&next, &a.inv, seq)
	deliveries, err := a.p.deliveries(spanCtx, b, &next, effects, a.creationTrace)
	if err != nil {
		return nil, err
	}
	if err := a.p.commit(spanCtx, b); err != nil {
		if kassa.ErrorCode(err) == kassa.Conflict {
			return nil, fmt.Errorf("persist invoice %s: %w: %w", a.inv.ID, errStaleState, err)
		}
		return nil, fmt.Errorf("persist invoice %s: %w", a.inv.ID, err)
	}
	if reservesFee(prev.Status) && !reservesFee(next.Status) {
		ctx.Send(ctx.Parent(), &feeReleased{invoiceID: next.ID})
	}
	a.inv, a.seq = next, seq
	countSettled(a.p.metrics, effects)
	out := a.inv
	a.perform(ctx, spanCtx, &out, effects)
	a.p.outbox.notify(deliveries)
	a.p.ledger.wake(spanCtx, &next, effects)
	a.maybePassivate(ctx)
	return &out, nil
}

// deliveries adds to b a pending delivery for each webhook that wants
// each event the effects emit, so that the event and its deliveries
// commit together: after a crash, every delivery is still sent. Each
// links to the invoice's creation, whose traceparent creation gives
// (called only when there is a delivery).
func (p *invoicePorts) deliveries(ctx context.Context, b kassa.Batch, inv *kassa.Invoice, effects []kassa.Effect, creation func() string) ([]*kassa.Delivery, error) {
	var all []*kassa.Delivery
	for _, e := range effects {
		switch e.(type) {
		case kassa.Emit, kassa.Notice:
			ds, err := p.outbox.deliveriesFor(ctx, inv, e, inv.UpdatedAt)
			if err != nil {
				return nil, fmt.Errorf("webhooks of store %s: %w", inv.StoreID, err)
			}
			for _, d := range ds {
				d.TraceParent, d.CreationTrace = telemetry.TraceParent(ctx), creation()
				b.PutDelivery(d, true)
			}
			all = append(all, ds...)
		}
	}
	return all, nil
}

// creationTrace returns the traceparent of the invoice's creation, which
// its deliveries link to. An actor loaded from a snapshot did not replay
// the created event that holds it: it reads that event once, here, as
// only a delivery needs it. A journal without it gives "" (no link).
func (a *invoiceActor) creationTrace() string {
	if a.created != "" || a.inv.ID == "" {
		return a.created
	}
	err := a.p.journal.Events(context.Background(), a.stream(), 0, func(_ uint64, data []byte) error {
		var ev protos.InvoiceEvent
		if err := proto.Unmarshal(data, &ev); err == nil && ev.GetCreated() != nil {
			a.created = ev.TraceParent
		}
		return errStopScan
	})
	if err != nil && !errors.Is(err, errStopScan) {
		a.p.log.Warn("read the invoice's created event for its trace link", "invoice", a.inv.ID, "err", err)
	}
	return a.created
}

// errStopScan ends a journal scan after the event it needed.
var errStopScan = errors.New("stop scan")

// perform carries out effects once their event is durable.
func (a *invoiceActor) perform(ctx actor.Context, parent context.Context, inv *kassa.Invoice, effects []kassa.Effect) {
	for _, e := range effects {
		switch e := e.(type) {
		case kassa.Emit:
			a.p.emit(parent, inv, e)
		case kassa.PaidAgain:
			a.p.log.Warn("invoice paid again after it settled; recorded in the ledger", "invoice", inv.ID, "store", inv.StoreID,
				"amount", int64(e.Amount), "method", e.Method.String(), "hash", e.Hash)
		case kassa.CancelLightning:
			a.p.lightning.cancel(e.PaymentHash, inv.ID)
		case kassa.ArmTimer:
			a.arm(ctx)
		case kassa.ReleaseAddress:
			ctx.Send(ctx.Parent(), &releaseAddress{index: e.Index})
		case kassa.StopWatching:
			a.disarm()
		}
	}
}

// emit logs an invoice event and hands it to the event sink, once it is
// durable.
func (p *invoicePorts) emit(parent context.Context, inv *kassa.Invoice, e kassa.Emit) {
	// Enabled first: the line's arguments cost allocations on every
	// create even when debug lines are off.
	if level := eventLevel(e); p.log.Enabled(context.Background(), level) {
		p.log.Log(context.Background(), level, "invoice event", "invoice", inv.ID, "store", inv.StoreID, "type", string(e.Type), "additionalStatus", e.AdditionalStatus.String())
	}
	if p.events != nil {
		p.events.InvoiceEvent(parent, inv, e)
	}
}

// eventLevel is the log level of an invoice event's line. New is at
// debug: every create has one, and kassa_invoices_created_total counts
// them, so at info a create writes no line (a successful request's line
// is at debug too). The events that move money or close an invoice
// (Processing, Settled, Expired) stay at info.
func eventLevel(e kassa.Emit) slog.Level {
	if e.Type == kassa.EventNew {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// arm sets the timer to the invoice's deadline, if it has one within
// sweepAhead. A later deadline needs no timer: the actor passivates
// (maybePassivate) and the deadline sweeper wakes it before then.
func (a *invoiceActor) arm(ctx actor.Context) {
	at, ok := a.inv.Deadline()
	if !ok || at.Equal(a.armed) {
		return
	}
	a.disarm()
	if dueLater(at, a.p.clock.Now()) {
		return
	}
	a.armed = at
	a.cancel = a.p.timers.after(at.Sub(a.p.clock.Now()), ctx.Self(), &deadlineFired{at: at})
}

func (a *invoiceActor) disarm() {
	if a.cancel != nil {
		a.cancel()
		a.cancel = nil
	}
	a.armed = time.Time{}
}

// maybePassivate asks the store to stop this actor once the invoice waits
// for nothing near; a later payment or request activates it again, and
// the system's sweeper wakes it shortly before its deadline (sweepAhead),
// when it arms its own timer. So a new invoice, due in 15 minutes by
// default, passivates as soon as it is created: memory and the garbage
// collector's work follow the invoices due soon, not all those open.
func (a *invoiceActor) maybePassivate(ctx actor.Context) {
	at, ok := a.inv.Deadline()
	if !ok || dueLater(at, a.p.clock.Now()) {
		a.disarm()
		ctx.Send(ctx.Parent(), &passivate{invoiceID: a.inv.ID})
	}
}

// dueLater reports whether a deadline at is beyond the sweeper's reach
// at now: its invoice needs no actor and no timer until the sweeper wakes
// it, sweepAhead before.
func dueLater(at, now time.Time) bool {
	return at.Sub(now) > sweepAhead
}

func isSettle(e kassa.Effect) bool {
	_, ok := e.(kassa.Settle)
	return ok
}

// reservesFee reports whether an invoice in status s keeps its fee
// reserved in its store's credit: until it settles or can no longer.
func reservesFee(s kassa.InvoiceStatus) bool {
	return s == kassa.InvoiceNew || s == kassa.InvoiceProcessing
}
