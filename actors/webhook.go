package actors

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
	"github.com/kassapay/kassa/protos"
	"github.com/kassapay/kassa/telemetry"
	"github.com/kassapay/kassa/webhook"
)

// webhookActor is one webhook endpoint. Its mailbox serializes the
// endpoint's deliveries, so a slow or dead URL delays only its own events,
// never another endpoint or the invoice that caused them.
//
// The order of sending comes from the endpoint's outbox, not from the
// order of the notices: every notice makes the actor send whatever is due
// in its outbox, oldest first. So after a restart the recovered
// deliveries go out in the order their events were committed, even when a
// fresh event (an invoice expiring during recovery) is announced first.
//
// On a store shared by several nodes (Config.Claims) the actor claims
// each delivery before sending it, so that two activations of one
// endpoint (a topology change, a stalled node that wakes) never send its
// deliveries side by side, and a lost node's claims pass to this one once
// they run out (see drainClaimed).
type webhookActor struct {
	p      *webhookPorts
	id     string
	timers map[string]func()
	// retry is the timer that tries the endpoint's claim again, due at
	// retryAt; nil when none is armed.
	retry   func()
	retryAt time.Time
}

// claimRetry tells a webhook actor to try its endpoint's claim again.
type claimRetry struct{}

// redeliver asks a webhook actor to re-send a delivery by hand.
type redeliver struct {
	call       callContext
	deliveryID string
}

func (a *webhookActor) Receive(ctx actor.Context) {
	defer answerPanic(ctx, a.p.log)
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		a.timers = map[string]func(){}
		if a.p.recovered() {
			// A restart after a panic lost the mailbox: send what this
			// endpoint still has in the outbox.
			a.drain(ctx)
		}
	case *protos.DeliverWebhook:
		delete(a.timers, msg.DeliveryId)
		a.drain(ctx)
	case claimRetry:
		a.retry = nil
		a.drain(ctx)
	case *redeliver:
		ctx.Respond(a.redeliver(ctx, msg))
	case crash:
		panic("crash requested")
	case *actor.Stopping, *actor.Restarting:
		// A restarted actor is a new instance that arms its own timers
		// (its recovery pass): this one's die with it.
		for _, cancel := range a.timers {
			cancel()
		}
		if a.retry != nil {
			a.retry()
		}
	}
}

// drain sends the endpoint's pending deliveries that are due, in outbox
// order. It stops at the first attempt it cannot record, so that nothing
// later overtakes it; the outbox keeps it for the next notice or restart.
func (a *webhookActor) drain(ctx actor.Context) {
	if a.p.claims != nil {
		a.drainClaimed(ctx)
		return
	}
	var ids []string
	err := a.p.reader.WebhookOutbox(context.Background(), a.id, func(id string) error {
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		a.p.log.Error("webhook actor: read outbox", "webhook", a.id, "err", err)
		return
	}
	for _, id := range ids {
		if _, err := a.send(ctx, id, nil); err != nil {
			return
		}
	}
}

// drainClaimed is drain on a store shared by several nodes: it claims
// the endpoint's next due delivery with up to deliveryRun-1 due ones
// after it, sends them in order and records their attempts in one
// commit under the claim (sendRun), until nothing is left to claim. The claim is what
// keeps the endpoint's order when two nodes run its actor: only the
// holder of the endpoint's next delivery sends, and the delivery leaves
// the outbox only when its holder records the attempt (a holder whose
// claim another took over while it stalled records nothing). When
// another holder has the endpoint, or a failed attempt is released until
// later, the actor tries again: at the release's time, and within
// ClaimRetry while another node's claim runs, so a lost node's claims
// are taken over at most ClaimRetry after they run out. Retries that are
// not due yet get their timers, as on one node (docs/decisions.md,
// "Outbox claims").
func (a *webhookActor) drainClaimed(ctx actor.Context) {
	claims, bg := a.p.claims, context.Background()
	for {
		if a.p.stopping().Err() != nil {
			return // a drain ran out of time: the outbox keeps the rest
		}
		c, ok, err := claims.ClaimRun(bg, a.id, a.p.claimHolder(), a.p.claimTTL, deliveryRun)
		now := a.p.clock.Now()
		if err != nil {
			a.p.log.Error("webhook delivery: claim", "webhook", a.id, "err", err)
			a.retryClaim(ctx, now.Add(a.p.claimRetry))
			return
		}
		if !ok {
			a.held(ctx, c, now)
			return
		}
		if c, err = a.sendRun(ctx, c, now); err != nil {
			if errors.Is(err, kassa.ErrClaimLost) {
				// Another node took the deliveries over while this one
				// sent them (the claim ran out): its attempts count.
				a.p.log.Warn("webhook delivery: claim lost while sending; the new holder's attempts are kept",
					"webhook", a.id, "delivery", c.DeliveryID)
				a.retryClaim(ctx, now.Add(a.p.claimRetry))
				return
			}
			retryAt := now.Add(a.p.claimRetry)
			if errors.Is(err, errAbandoned) {
				retryAt = time.Time{} // the next start takes it at once
			}
			c.Run = nil
			if err := claims.ReleaseDelivery(bg, c, retryAt); err != nil {
				a.p.log.Error("webhook delivery: release claim", "delivery", c.DeliveryID, "err", err)
			}
			if !retryAt.IsZero() {
				a.retryClaim(ctx, retryAt)
			}
			return
		}
	}
}

// deliveryRun is how many of an endpoint's due deliveries a node claims,
// sends and records at a time on a shared store: a backlog (the Expired
// events of many invoices due together) costs a claim and a commit per
// run, not per delivery. A crash in a run sends its deliveries again
// (at least once, as receivers are told).
const deliveryRun = 32

// held handles a claim that found nothing to take: c names what holds
// the endpoint back, if anything. Without that, the actor arms the
// timers of retries not yet due, and tries again soon when a due
// delivery is pending (another claimer was at work on the endpoint).
func (a *webhookActor) held(ctx actor.Context, c kassa.DeliveryClaim, now time.Time) {
	switch {
	case !c.Expires.IsZero() && c.Holder == "":
		a.retryClaim(ctx, c.Expires) // a failed attempt, released until then
		return
	case !c.Expires.IsZero():
		a.retryClaim(ctx, minTime(c.Expires, now.Add(a.p.claimRetry)))
		return
	}
	due := false
	err := a.p.reader.WebhookOutbox(context.Background(), a.id, func(id string) error {
		d, err := a.p.reader.Delivery(context.Background(), id)
		if err != nil {
			return err
		}
		if d.Status != kassa.DeliveryPending || !d.NotBefore.After(now) {
			due = true
			return nil
		}
		a.armTimer(ctx, d, now)
		return nil
	})
	if err != nil {
		a.p.log.Error("webhook actor: read outbox", "webhook", a.id, "err", err)
		due = true
	}
	if due {
		a.retryClaim(ctx, now.Add(a.p.claimRetry))
	}
}

// retryClaim arms the claim's retry timer for at, unless one is armed
// for earlier.
func (a *webhookActor) retryClaim(ctx actor.Context, at time.Time) {
	if a.retry != nil {
		if !at.Before(a.retryAt) {
			return
		}
		a.retry()
	}
	a.retryAt = at
	a.retry = a.p.timers.after(at.Sub(a.p.clock.Now()), ctx.Self(), claimRetry{})
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// armTimer wakes the actor when d, a retry, is due.
func (a *webhookActor) armTimer(ctx actor.Context, d *kassa.Delivery, now time.Time) {
	if _, armed := a.timers[d.ID]; armed {
		return
	}
	a.timers[d.ID] = a.p.timers.after(d.NotBefore.Sub(now), ctx.Self(), &protos.DeliverWebhook{DeliveryId: d.ID})
}

// send delivers a pending delivery once, records the attempt and, for a
// webhook that opted in, schedules a retry. A delivery not yet due gets a
// timer. The error says the delivery could not be read or its attempt
// not recorded; it is logged here. With a claim the delivery is due,
// and its attempt is recorded only while the claim is held
// (kassa.ErrClaimLost otherwise).
func (a *webhookActor) send(ctx actor.Context, deliveryID string, claim *kassa.DeliveryClaim) (*kassa.Delivery, error) {
	at, err := a.try(ctx, deliveryID, claim != nil)
	if err != nil || at == nil {
		if at != nil {
			return at.d, err
		}
		return nil, err
	}
	defer at.end()
	b := a.p.journal.NewBatch()
	at.put(b)
	commit := a.p.commit
	if claim != nil {
		commit = func(ctx context.Context, b kassa.Batch) error { return a.p.claims.CommitClaimed(ctx, *claim, b) }
	}
	if err := commit(at.spanCtx, b); err != nil {
		// The delivery stays in the outbox and is sent again after a
		// restart (or by the new holder of its claim): at least once,
		// as receivers are told.
		if !errors.Is(err, kassa.ErrClaimLost) {
			a.p.log.ErrorContext(at.spanCtx, "webhook delivery: record attempt", "delivery", at.d.ID, "err", err)
		}
		return at.d, err
	}
	a.recorded(ctx, at)
	return at.d, nil
}

// sendRun sends the deliveries of run, a claim of a run (ClaimRun), in
// order, and records their attempts in one commit under the claim: one
// write a run, not a delivery. It stops early, and records what it sent,
// at the first delivery it cannot attempt (that delivery's error is
// returned with its claim, the rest stay claimed until the claim runs
// out) and once half the claim's life has passed, so that the commit is
// in before the claim can be taken over. The error is that of the
// delivery that stopped the run, or of the commit (with the run's first
// claim).
func (a *webhookActor) sendRun(ctx actor.Context, run kassa.DeliveryClaim, started time.Time) (kassa.DeliveryClaim, error) {
	b := a.p.journal.NewBatch()
	var done []*deliveryAttempt
	var stopErr error
	failed := run
	ids := run.Deliveries()
	for i, id := range ids {
		if i > 0 && a.p.clock.Now().Sub(started) > a.p.claimTTL/2 {
			break
		}
		at, err := a.try(ctx, id, true)
		if err != nil {
			stopErr = err
			failed = kassa.DeliveryClaim{WebhookID: run.WebhookID, DeliveryID: id, Holder: run.Holder, Expires: run.Expires}
			if at != nil {
				at.end()
			}
			break
		}
		at.put(b)
		done = append(done, at)
	}
	if len(done) == 0 {
		return failed, stopErr
	}
	held := run
	held.Run = run.Run[:len(done)-1]
	err := a.p.claims.CommitClaimed(context.Background(), held, b)
	for _, at := range done {
		at.end()
	}
	if err != nil {
		if !errors.Is(err, kassa.ErrClaimLost) {
			a.p.log.Error("webhook delivery: record the attempts of a run", "webhook", a.id, "deliveries", len(done), "err", err)
		}
		return held, err
	}
	for _, at := range done {
		a.recorded(ctx, at)
	}
	return failed, stopErr
}

// deliveryAttempt is one delivery's attempt, made and not yet recorded.
type deliveryAttempt struct {
	d, retry  *kassa.Delivery
	attempted bool
	// takeOut: d was recorded before; only its outbox entry is left.
	takeOut bool
	spanCtx context.Context
	end     func()
}

// put records the attempt in b.
func (at *deliveryAttempt) put(b kassa.Batch) {
	b.PutDelivery(at.d, false)
	if at.retry != nil {
		b.PutDelivery(at.retry, true)
	}
}

// recorded finishes an attempt once it is recorded: counted, logged and
// its retry's timer armed.
func (a *webhookActor) recorded(ctx actor.Context, at *deliveryAttempt) {
	if at.takeOut {
		return
	}
	d := at.d
	countDelivery(a.p.metrics, d, at.attempted)
	a.p.log.DebugContext(at.spanCtx, "webhook delivery", "webhook", d.WebhookID, "delivery", d.ID, "type", string(d.Type),
		"status", d.Status.String(), "code", d.StatusCode, "duration", d.Duration)
	if at.retry != nil {
		a.armTimer(ctx, at.retry, a.p.clock.Now())
	}
}

// try reads delivery deliveryID and makes its attempt: nil, with no
// error, when there is nothing to record (sent already, or, unclaimed,
// not yet due: it gets a timer). A delivery recorded yet still in the
// outbox (claimed) is returned to be taken out. The error says it could
// not be read or attempted (a drain ran out of time: errAbandoned); an
// attempt the receiver refused is no error.
func (a *webhookActor) try(ctx actor.Context, deliveryID string, claimed bool) (*deliveryAttempt, error) {
	bg := context.Background()
	stopping := a.p.stopping()
	if stopping.Err() != nil {
		return nil, errAbandoned // a drain ran out of time: the outbox keeps it
	}
	d, err := a.p.reader.Delivery(bg, deliveryID)
	if err != nil {
		a.p.log.Error("webhook delivery: read", "delivery", deliveryID, "err", err)
		return nil, err
	}
	if d.Status != kassa.DeliveryPending {
		if claimed {
			// Recorded, yet in the outbox: take it out, or the claim
			// would hand it out again and again.
			return &deliveryAttempt{d: d, takeOut: true, spanCtx: bg, end: func() {}}, nil
		}
		return nil, nil // sent already
	}
	now := a.p.clock.Now()
	if !claimed && d.NotBefore.After(now) {
		a.armTimer(ctx, d, now)
		return nil, nil
	}
	spanCtx, span := a.p.tracer.Start(telemetry.ContextWithParent(bg, d.TraceParent), "webhook.Deliver", deliverySpanOptions(d)...)
	at := &deliveryAttempt{d: d, spanCtx: spanCtx, end: func() { span.End() }}

	w, err := a.p.reader.Webhook(spanCtx, d.WebhookID)
	switch {
	case err != nil && kassa.ErrorCode(err) == kassa.NotFound:
		d.Status, d.Error = kassa.DeliveryFailed, "the webhook was deleted before this event could be sent"
	case err != nil:
		a.p.log.Error("webhook delivery: read webhook", "webhook", d.WebhookID, "err", err)
		return at, err
	case !w.Enabled:
		d.Status, d.Error = kassa.DeliveryFailed, "the webhook was disabled before this event could be sent"
	default:
		d.Headers = a.p.deliveryHeaders(w, d, now)
		headers := http.Header{}
		for name, value := range d.Headers {
			headers.Set(name, value)
		}
		d.Headers["Content-Type"] = "application/json"
		deliverCtx, stop := context.WithCancel(spanCtx)
		unhook := context.AfterFunc(stopping, stop)
		attempt := a.p.client.Deliver(deliverCtx, w.URL, headers, d.Payload)
		unhook()
		stop()
		if !attempt.OK && stopping.Err() != nil {
			// Cut off by a drain that ran out of time, not refused by the
			// receiver: left pending in the outbox, not recorded as failed.
			a.p.log.Info("webhook delivery left in the outbox for the next start", "delivery", d.ID, "webhook", d.WebhookID)
			return at, errAbandoned
		}
		at.attempted = true
		d.StatusCode, d.ResponseBody, d.Duration, d.Error = attempt.StatusCode, string(attempt.ResponseBody), attempt.Duration, attempt.Err
		d.SentAt = now
		d.Status = kassa.DeliveryFailed
		if attempt.OK {
			d.Status = kassa.DeliveryDelivered
		}
		span.SetAttributes(attribute.Int("http.status_code", attempt.StatusCode))
		if !attempt.OK {
			span.SetStatus(codes.Error, attempt.Err)
			if w.AutomaticRedelivery && kassa.Retryable(attempt.StatusCode) && d.Attempt < kassa.MaxAutomaticRetries {
				original := d.RedeliveryOf
				if original == "" {
					original = d.ID
				}
				at.retry = &kassa.Delivery{
					ID: kassa.NewID(""), WebhookID: d.WebhookID, StoreID: d.StoreID, InvoiceID: d.InvoiceID, EventID: d.Event(),
					Type: d.Type, Payload: d.Payload, Status: kassa.DeliveryPending, RedeliveryOf: original,
					Attempt: d.Attempt + 1, NotBefore: now.Add(kassa.RetryDelay(d.Attempt + 1)), CreatedAt: now,
					TraceParent: telemetry.TraceParent(spanCtx), CreationTrace: d.CreationTrace,
				}
				if w.Format == kassa.FormatGreenfield {
					// BTCPay retries as a redelivery: a new deliveryId.
					at.retry.Payload = kassa.GreenfieldRedelivery(d.Payload, at.retry.ID)
				}
			}
		}
	}
	return at, nil
}

// deliveryHeaders are the headers of delivery d to w, signed now: for a
// Coinsnap-format webhook X-Service-Signature, X-Service-Sig (and its
// aliases), the event and delivery ids; for a Greenfield one BTCPay's
// BTCPay-Sig, "sha256=" and the hex HMAC-SHA256 of the body
// (WebhookSender.cs, BTCPay 2.4.1), the same value as X-Service-Sig.
func (p *webhookPorts) deliveryHeaders(w *kassa.Webhook, d *kassa.Delivery, now time.Time) map[string]string {
	signature, sig := webhook.Sign(w.Secret, d.Payload, now)
	if w.Format == kassa.FormatGreenfield {
		return map[string]string{kassa.GreenfieldSigHeader: sig}
	}
	headers := map[string]string{
		webhook.SignatureHeader: signature, webhook.SigHeader: sig,
		webhook.EventIDHeader: d.Event(), webhook.DeliveryIDHeader: d.ID,
	}
	for _, alias := range p.sigAliases {
		headers[http.CanonicalHeaderKey(alias)] = sig
	}
	return headers
}

// errAbandoned says a delivery was not attempted, or its attempt not
// recorded, because a drain ran out of time; it stays in the outbox.
var errAbandoned = errors.New("webhook delivery abandoned at shutdown")

func (a *webhookActor) redeliver(ctx actor.Context, msg *redeliver) reply {
	c, cancel := msg.call.context()
	defer cancel()
	orig, err := a.p.reader.Delivery(c, msg.deliveryID)
	if err != nil {
		return reply{err: err}
	}
	w, err := a.p.reader.Webhook(c, orig.WebhookID)
	if err != nil {
		return reply{err: err}
	}
	now := a.p.clock.Now()
	d := &kassa.Delivery{
		ID: kassa.NewID(""), WebhookID: orig.WebhookID, StoreID: orig.StoreID, InvoiceID: orig.InvoiceID, EventID: orig.Event(),
		Type: orig.Type, Payload: kassa.RedeliveryPayload(orig.Type, orig.InvoiceID),
		Status: kassa.DeliveryPending, RedeliveryOf: orig.ID, CreatedAt: now,
		TraceParent: telemetry.TraceParent(c), CreationTrace: orig.CreationTrace,
	}
	if w.Format == kassa.FormatGreenfield {
		// BTCPay re-sends the whole body with a new deliveryId.
		d.Payload = kassa.GreenfieldRedelivery(orig.Payload, d.ID)
	}
	b := a.p.journal.NewBatch()
	b.PutDelivery(d, true)
	if err := a.p.commit(c, b); err != nil {
		return reply{err: err}
	}
	if a.p.claims != nil {
		// Sent in its turn, under a claim, with what is due before it;
		// the answer is its record then (still Pending when another
		// node holds the endpoint).
		a.drainClaimed(ctx)
		if sent, err := a.p.reader.Delivery(c, d.ID); err == nil {
			d = sent
		}
		return reply{value: d}
	}
	if sent, _ := a.send(ctx, d.ID, nil); sent != nil {
		d = sent
	}
	return reply{value: d}
}

// webhook returns the actor of webhook endpoint id.
func (s *Runtime) webhook(id string) *actor.PID {
	if pid, ok := s.webhooks.Load(id); ok {
		return pid.(*actor.PID)
	}
	return s.spawn(&s.webhooks, s.webhookActorProps(id), "webhook/", id)
}

// webhookOutbox makes the webhook deliveries of invoice events and tells
// the endpoints' actors about them once they are in the outbox.
type webhookOutbox struct {
	reader kassa.Reader
	lists  webhookLists
	// wake tells the actor of endpoint webhookID about a delivery in its
	// outbox.
	wake func(webhookID, deliveryID string)
}

// deliveriesFor returns the pending deliveries of an invoice event (an
// Emit or a Notice), one per enabled webhook of the store that selected
// its type in the webhook's format, all with one new event id. A
// Coinsnap-format webhook is sent the Emits (docs/api.md); a Greenfield
// one both, as Greenfield's types (kassa.GreenfieldType).
func (o *webhookOutbox) deliveriesFor(ctx context.Context, inv *kassa.Invoice, e kassa.Effect, now time.Time) ([]*kassa.Delivery, error) {
	hooks, err := o.storeWebhooks(ctx, inv.StoreID)
	if err != nil {
		return nil, err
	}
	var out []*kassa.Delivery
	eventID := ""
	emit, isEmit := e.(kassa.Emit)
	gfType, isGreenfield := kassa.GreenfieldType(e)
	for _, w := range hooks {
		if !w.Enabled {
			continue
		}
		d := &kassa.Delivery{ID: kassa.NewID(""), WebhookID: w.ID, StoreID: inv.StoreID, InvoiceID: inv.ID,
			Status: kassa.DeliveryPending, CreatedAt: now}
		switch {
		case w.Format == kassa.FormatGreenfield && isGreenfield && w.Selects(gfType):
			d.Type, d.Payload = gfType, kassa.GreenfieldPayload(inv, e, gfType, w.ID, d.ID, now)
		case w.Format == kassa.FormatCoinsnap && isEmit && w.Selects(emit.Type):
			d.Type, d.Payload = emit.Type, kassa.EventPayload(inv, emit)
		default:
			continue
		}
		if eventID == "" {
			eventID = kassa.NewID("")
		}
		d.EventID = eventID
		out = append(out, d)
	}
	return out, nil
}

// payoutDeliveries returns the pending deliveries of payout event typ
// of p (after its change): one per enabled Greenfield webhook of the
// store that names typ, in Greenfield's format, all with one new event
// id. A Coinsnap-format webhook is sent no payout event: its types are
// the invoice's (docs/api.md).
func (o *webhookOutbox) payoutDeliveries(ctx context.Context, p *kassa.Payout, typ kassa.EventType, now time.Time) ([]*kassa.Delivery, error) {
	hooks, err := o.storeWebhooks(ctx, p.StoreID)
	if err != nil {
		return nil, err
	}
	var out []*kassa.Delivery
	eventID := ""
	for _, w := range hooks {
		if !w.Enabled || w.Format != kassa.FormatGreenfield || !w.Selects(typ) {
			continue
		}
		if eventID == "" {
			eventID = kassa.NewID("")
		}
		d := &kassa.Delivery{ID: kassa.NewID(""), WebhookID: w.ID, StoreID: p.StoreID, InvoiceID: p.InvoiceID,
			Type: typ, Status: kassa.DeliveryPending, EventID: eventID, CreatedAt: now}
		d.Payload = kassa.GreenfieldPayoutPayload(p, typ, w.ID, d.ID, now)
		out = append(out, d)
	}
	return out, nil
}

// webhookLists caches each store's webhooks for its invoice events, which
// would otherwise scan storage on every event, also of the many stores
// that have none. The store actor calls changed after every save or
// delete; a list read from storage while a change lands is used once but
// not kept (the generation tells).
type webhookLists struct {
	mu     sync.Mutex
	stores map[string]*webhookList
}

type webhookList struct {
	generation uint64
	loaded     bool
	webhooks   []*kassa.Webhook // shared: read only
}

// storeWebhooks returns the store's webhooks, from the cache when it can.
func (o *webhookOutbox) storeWebhooks(ctx context.Context, storeID string) ([]*kassa.Webhook, error) {
	c := &o.lists
	c.mu.Lock()
	if c.stores == nil {
		c.stores = map[string]*webhookList{}
	}
	l := c.stores[storeID]
	if l == nil {
		l = &webhookList{}
		c.stores[storeID] = l
	}
	if l.loaded {
		hooks := l.webhooks
		c.mu.Unlock()
		return hooks, nil
	}
	generation := l.generation
	c.mu.Unlock()
	var hooks []*kassa.Webhook
	err := o.reader.Webhooks(ctx, storeID, func(w *kassa.Webhook) error {
		hooks = append(hooks, w)
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if l.generation == generation {
		l.webhooks, l.loaded = hooks, true
	}
	c.mu.Unlock()
	return hooks, nil
}

// changed drops the cached webhook list of a store. The store actor
// calls it after each webhook save or delete, before it answers.
func (o *webhookOutbox) changed(storeID string) {
	c := &o.lists
	c.mu.Lock()
	if l := c.stores[storeID]; l != nil {
		l.generation++
		l.loaded, l.webhooks = false, nil
	}
	c.mu.Unlock()
}

// notify tells the endpoint actors about deliveries now in the outbox.
func (o *webhookOutbox) notify(deliveries []*kassa.Delivery) {
	for _, d := range deliveries {
		o.wake(d.WebhookID, d.ID)
	}
}

// wakeWebhook tells the actor of webhook endpoint webhookID about a
// delivery in its outbox.
func (s *Runtime) wakeWebhook(webhookID, deliveryID string) {
	s.actorSystem().Root.Send(s.webhook(webhookID), &protos.DeliverWebhook{DeliveryId: deliveryID})
}

// RecoverDeliveries sends every delivery left in the outbox, for example
// by a crash between an invoice event and its delivery: it wakes each
// endpoint that has some, and the endpoint sends them in outbox order. It
// returns how many deliveries were pending.
func (s *Runtime) RecoverDeliveries(ctx context.Context) (int, error) {
	n := 0
	last := ""
	skip := false
	err := s.cfg.Reader.PendingDeliveries(ctx, func(webhookID, deliveryID string) error {
		if webhookID != last {
			last = webhookID
			// In a cluster, the node that runs the webhook's store sends.
			skip = s.cluster.clusterState() != nil && !s.cluster.ownsWebhook(ctx, webhookID)
			if !skip {
				s.actorSystem().Root.Send(s.webhook(webhookID), &protos.DeliverWebhook{})
			}
		}
		if !skip {
			n++
		}
		return nil
	})
	if err == nil {
		s.deliveriesRecovered.Store(true)
	}
	return n, err
}

// Webhook registration: the URL check runs in the caller's goroutine
// (it can take 5 s); the store actor enforces the cap and persists.
type (
	// saveWebhook stores a new webhook (create) or applies an update to
	// webhook id as stored when the store actor takes the message, so
	// that concurrent updates and a delete are applied one after the
	// other, none lost and nothing deleted brought back.
	saveWebhook struct {
		call   callContext
		create *kassa.Webhook
		id     string
		update *kassa.WebhookInput
	}
	deleteWebhook struct {
		call    callContext
		webhook *kassa.Webhook
	}
)

// CreateWebhook validates the URL with one unsigned POST and registers it.
func (s *Service) CreateWebhook(ctx context.Context, storeID string, in *kassa.WebhookInput) (*kassa.Webhook, error) {
	if out, ok, err := cmdCreateWebhook.route(ctx, s.cluster, storeID, func() *protos.CreateWebhookCall {
		return &protos.CreateWebhookCall{Input: toDoc[*protos.WebhookInputDoc](in)}
	}); ok {
		return out, err
	}
	ctx, span := s.tracer.Start(ctx, "actors.CreateWebhook")
	defer span.End()
	return onceOnly(ctx, s, storeID, kassa.RequestWebhook, s.answerWebhook, func() (*kassa.Webhook, error) {
		return s.createWebhook(ctx, storeID, in)
	})
}

// createWebhook checks and registers a webhook on the store's node.
func (s *Service) createWebhook(ctx context.Context, storeID string, in *kassa.WebhookInput) (*kassa.Webhook, error) {
	if err := in.Validate(true); err != nil {
		return nil, err
	}
	if _, err := s.cfg.Reader.Store(ctx, storeID); err != nil {
		return nil, err
	}
	count := 0
	if err := s.cfg.Reader.Webhooks(ctx, storeID, func(*kassa.Webhook) error { count++; return nil }); err != nil {
		return nil, err
	}
	if count >= kassa.MaxWebhooksPerStore {
		// Checked again by the store actor, which alone decides; this
		// spares a full store the URL check.
		return nil, errWebhookLimit
	}
	if err := s.checkURL(ctx, in.URL, in.Format); err != nil {
		return nil, err
	}
	w := kassa.NewWebhook(kassa.NewID(""), storeID, in, s.cfg.Clock.Now().UTC())
	if _, err := s.ask(ctx, storeID, &saveWebhook{call: callOf(ctx), create: w}); err != nil {
		return nil, err
	}
	return w, nil
}

var errWebhookNotFound = kassa.Errorf(kassa.NotFound, "webhook not found")

// errWebhookLimit refuses a webhook beyond MaxWebhooksPerStore.
var errWebhookLimit = kassa.Errorf(kassa.Conflict, "a store can have at most %d webhooks", kassa.MaxWebhooksPerStore)

// checkURL checks a webhook's URL before it is saved: its form (https
// outside development), then, for Coinsnap's format, the unsigned probe
// (Validate). A Greenfield receiver refuses an unsigned request, as
// BTCPay sends none, so a Greenfield URL gets the address check instead:
// its host resolves to public addresses only (loopback with --dev), when
// the client can tell (kassa.WebhookAddressChecker).
func (s *Service) checkURL(ctx context.Context, url string, format kassa.WebhookFormat) error {
	if err := s.cfg.Webhooks.CheckURL(url); err != nil {
		return err
	}
	if format == kassa.FormatGreenfield {
		if c, ok := s.cfg.Webhooks.(kassa.WebhookAddressChecker); ok {
			return c.CheckAddress(ctx, url)
		}
		return nil
	}
	return s.cfg.Webhooks.Validate(ctx, url)
}

// UpdateWebhook changes a webhook; a new URL is validated first.
func (s *Service) UpdateWebhook(ctx context.Context, storeID, id string, in *kassa.WebhookInput) (*kassa.Webhook, error) {
	if out, ok, err := cmdUpdateWebhook.route(ctx, s.cluster, storeID, func() *protos.UpdateWebhookCall {
		return &protos.UpdateWebhookCall{WebhookId: id, Input: toDoc[*protos.WebhookInputDoc](in)}
	}); ok {
		return out, err
	}
	ctx, span := s.tracer.Start(ctx, "actors.UpdateWebhook")
	defer span.End()
	if err := in.Validate(false); err != nil {
		return nil, err
	}
	w, err := s.cfg.Reader.Webhook(ctx, id)
	if err != nil {
		return nil, err
	}
	if w.StoreID != storeID {
		return nil, errWebhookNotFound
	}
	if in.EventsGiven && in.Format != w.Format {
		return nil, kassa.InvalidFields([]kassa.FieldError{{Field: "events", Message: "the webhook was registered through the other API; change its events there"}})
	}
	if in.URL != "" && in.URL != w.URL {
		if err := s.checkURL(ctx, in.URL, w.Format); err != nil {
			return nil, err
		}
	}
	res, err := s.ask(ctx, storeID, &saveWebhook{call: callOf(ctx), id: id, update: in})
	if err != nil {
		return nil, err
	}
	return res.(*kassa.Webhook), nil
}

// DeleteWebhook removes a webhook. Its pending deliveries fail with a
// note; its delivery log stays readable.
func (s *Service) DeleteWebhook(ctx context.Context, storeID, id string) error {
	if _, ok, err := cmdDeleteWebhook.route(ctx, s.cluster, storeID, func() *protos.DeleteWebhookCall {
		return &protos.DeleteWebhookCall{WebhookId: id}
	}); ok {
		return err
	}
	w, err := s.cfg.Reader.Webhook(ctx, id)
	if err != nil {
		return err
	}
	if w.StoreID != storeID {
		return errWebhookNotFound
	}
	_, err = s.ask(ctx, storeID, &deleteWebhook{call: callOf(ctx), webhook: w})
	return err
}

// Redeliver re-sends a delivery with the reduced payload, signed now.
func (s *Service) Redeliver(ctx context.Context, storeID, webhookID, deliveryID string) (*kassa.Delivery, error) {
	if out, ok, err := cmdRedeliver.route(ctx, s.cluster, storeID, func() *protos.RedeliverCall {
		return &protos.RedeliverCall{WebhookId: webhookID, DeliveryId: deliveryID}
	}); ok {
		return out, err
	}
	ctx, span := s.tracer.Start(ctx, "actors.Redeliver")
	defer span.End()
	d, err := s.cfg.Reader.Delivery(ctx, deliveryID)
	if err != nil {
		return nil, err
	}
	if d.StoreID != storeID || d.WebhookID != webhookID {
		return nil, kassa.Errorf(kassa.NotFound, "delivery not found")
	}
	w, err := s.cfg.Reader.Webhook(ctx, webhookID)
	if err != nil {
		return nil, err
	}
	if !w.Enabled {
		return nil, kassa.Errorf(kassa.Conflict, "the webhook is disabled; enable it to redeliver")
	}
	res, err := s.rt.askWebhook(ctx, webhookID, &redeliver{call: callOf(ctx), deliveryID: deliveryID})
	if err != nil {
		return nil, err
	}
	return res.(*kassa.Delivery), nil
}

func webhookDoc(w *kassa.Webhook) []byte {
	doc, _ := format.Marshal(w)
	return doc
}
