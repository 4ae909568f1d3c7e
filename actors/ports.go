package actors

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/trace"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/metrics"
)

// The ports of the store, invoice and webhook actors: what each uses of
// the node, built once by NewSystem and handed to every actor of its
// kind at spawn. An actor reaches the node only through them, never
// through the Runtime or the Service.

// storePorts is what a store actor uses.
type storePorts struct {
	clock kassa.Clock
	// journal reads the store's snapshot and journal position and
	// starts its batches.
	journal storeJournalPort
	// reader reads what the store's commands check: its balance, pay
	// links, top-ups, webhooks and session invoices. When it caches
	// what a store's owner reads (PostgreSQL: Own), the store actor
	// holds the cache while it runs.
	reader storeReader
	commit commitFunc
	// invoiceProps makes the store's invoice actors.
	invoiceProps *actor.Props
	faults       *journalFaults
	// webhooksChanged tells the webhook outbox that the store's
	// webhooks changed.
	webhooksChanged func(storeID string)
	// outbox makes the webhook deliveries of payout events and tells
	// the endpoints about them.
	outbox *webhookOutbox
	// wakeDue wakes the store's invoices due soon, once Recover has run
	// (before, it does nothing: Recover wakes them).
	wakeDue func(storeID string)
	log     *slog.Logger
}

// invoicePorts is what an invoice actor uses.
type invoicePorts struct {
	clock kassa.Clock
	// journal reads the invoice's snapshot and events and starts its
	// batches.
	journal invoiceJournal
	// commit makes a batch durable (Cluster.commit: through the
	// membership fence in a cluster).
	commit commitFunc
	// ledger writes the lines of a settle and wakes the forwarder.
	ledger *ledger
	// outbox makes the webhook deliveries of an invoice event and tells
	// the endpoints about them.
	outbox *webhookOutbox
	// events receives the invoice's webhook events once durable; nil:
	// they are only logged.
	events    EventSink
	lightning *lightningCanceller
	faults    *journalFaults
	timers    timers
	metrics   *metrics.Set
	log       *slog.Logger
	tracer    trace.Tracer
}

// webhookPorts is what a webhook endpoint actor uses.
type webhookPorts struct {
	clock kassa.Clock
	// reader reads the endpoint's outbox, its deliveries and its
	// webhook.
	reader  webhookReader
	journal interface{ NewBatch() kassa.Batch }
	commit  commitFunc
	// client sends to the merchant's URL.
	client     kassa.WebhookClient
	sigAliases []string
	// claims, with several nodes on one store, hands out the endpoint's
	// deliveries (Config.Claims); nil on one node.
	claims     kassa.OutboxClaims
	claimTTL   time.Duration
	claimRetry time.Duration
	// claimHolder names this node in its claims (Cluster.claimHolder).
	claimHolder func() string
	// stopping is canceled when a drain's time is up
	// (Runtime.deliveryContext).
	stopping func() context.Context
	// recovered reports whether RecoverDeliveries has sent the outbox.
	recovered func() bool
	timers    timers
	metrics   *metrics.Set
	log       *slog.Logger
	tracer    trace.Tracer
}

// commitFunc makes a batch durable.
type commitFunc func(context.Context, kassa.Batch) error

// invoiceJournal is the part of kassa.Journal an invoice actor uses.
type invoiceJournal interface {
	NewBatch() kassa.Batch
	InvoiceSnapshot(ctx context.Context, id string) (*kassa.Invoice, uint64, error)
	Events(ctx context.Context, s kassa.Stream, after uint64, fn func(seq uint64, data []byte) error) error
}

// storeJournalPort is the part of kassa.Journal a store actor uses.
type storeJournalPort interface {
	NewBatch() kassa.Batch
	StoreSnapshot(ctx context.Context, id string) (*kassa.Store, uint64, error)
	StreamSeq(ctx context.Context, s kassa.Stream) (uint64, error)
}

// storeReader is the part of kassa.Reader a store actor uses.
type storeReader interface {
	Balance(ctx context.Context, storeID string) (kassa.Sats, error)
	Invoice(ctx context.Context, id string) (*kassa.Invoice, error)
	PaymentRequest(ctx context.Context, id string) (*kassa.PaymentRequest, error)
	Transaction(ctx context.Context, id int64) (*kassa.Transaction, error)
	Webhook(ctx context.Context, id string) (*kassa.Webhook, error)
	Webhooks(ctx context.Context, storeID string, fn func(*kassa.Webhook) error) error
}

// webhookReader is the part of kassa.Reader a webhook actor uses.
type webhookReader interface {
	Delivery(ctx context.Context, id string) (*kassa.Delivery, error)
	Webhook(ctx context.Context, id string) (*kassa.Webhook, error)
	WebhookOutbox(ctx context.Context, webhookID string, fn func(deliveryID string) error) error
}

// storePorts builds the ports of the store actors, whose invoice actors
// invoiceProps makes.
func (s *Runtime) storePorts(invoiceProps *actor.Props) *storePorts {
	return &storePorts{
		clock: s.cfg.Clock, journal: s.cfg.Journal, reader: s.cfg.Reader, commit: s.cluster.commit,
		invoiceProps: invoiceProps, faults: &s.journalFaults, webhooksChanged: s.outbox.changed, outbox: s.outbox,
		wakeDue: func(storeID string) {
			if s.recovered.Load() {
				s.activateDueInvoices(storeID)
			}
		},
		log: s.log,
	}
}

// invoicePorts builds the ports of the invoice actors.
func (s *Runtime) invoicePorts() *invoicePorts {
	return &invoicePorts{
		clock: s.cfg.Clock, journal: s.cfg.Journal, commit: s.cluster.commit, ledger: s.ledger, outbox: s.outbox,
		events: s.cfg.Events, lightning: &lightningCanceller{s.cfg.Lightning, s.cfg.RequestTimeout, s.log},
		faults: &s.journalFaults, timers: s.timers(), metrics: s.cfg.Metrics, log: s.log, tracer: s.tracer,
	}
}

// webhookPorts builds the ports of the webhook endpoint actors.
func (s *Runtime) webhookPorts() *webhookPorts {
	return &webhookPorts{
		clock: s.cfg.Clock, reader: s.cfg.Reader, journal: s.cfg.Journal, commit: s.cluster.commit,
		client: s.cfg.Webhooks, sigAliases: s.cfg.WebhookSigAliases,
		claims: s.cfg.Claims, claimTTL: s.cfg.ClaimTTL, claimRetry: s.cfg.ClaimRetry, claimHolder: s.cluster.claimHolder,
		stopping: s.deliveryContext, recovered: s.deliveriesRecovered.Load,
		timers: s.timers(), metrics: s.cfg.Metrics, log: s.log, tracer: s.tracer,
	}
}

// timers wakes an actor with a message after a while, through the
// actor system the node runs at the time it is armed (a Rejoin gives
// the node a new one).
type timers struct {
	clock kassa.Clock
	root  func() *actor.RootContext
}

func (s *Runtime) timers() timers {
	return timers{clock: s.cfg.Clock, root: func() *actor.RootContext { return s.actorSystem().Root }}
}

// after sends msg to pid after d (at once when d is not positive); the
// returned function cancels it.
func (t timers) after(d time.Duration, pid *actor.PID, msg any) (cancel func()) {
	root := t.root()
	return t.clock.AfterFunc(max(d, 0), func() { root.Send(pid, msg) })
}

// ledger writes the ledger lines of settled invoices, queues the
// forwards of the money on the service's node and wakes the forwarder.
type ledger struct {
	reader    kassa.Reader
	custody   kassa.Custody
	forwarder *Forwarder // nil: no forwarding
}

func newLedger(cfg *Config) *ledger {
	f := cfg.Forwarder
	return &ledger{reader: cfg.Reader, forwarder: f, custody: kassa.Custody{Forwarding: f != nil, Onchain: f != nil && f.cfg.Onchain}}
}

// put writes a ledger line of a settled invoice to b. A line whose money
// is on the service's node (kassa.SettlementLines) waits for its forward
// (kassa.SettlementLine.Awaiting) and is queued for forwarding in the
// same batch, so that a settle is never recorded without its forward.
func (l *ledger) put(ctx context.Context, b kassa.Batch, line *kassa.SettlementLine) error {
	if line.Forward <= 0 {
		tx := line.Transaction
		b.PutTransaction(&tx)
		return nil
	}
	st, err := l.reader.Store(ctx, line.StoreID)
	if err != nil {
		return fmt.Errorf("read store %s for forwarding: %w", line.StoreID, err)
	}
	fb, ok := b.(kassa.ForwardBatch)
	if !ok {
		return fmt.Errorf("storage %T cannot queue forwards", b)
	}
	tx := line.Awaiting(st.LightningAddress)
	b.PutTransaction(&tx)
	fb.QueueTransfer(line.QueuedTransfer(tx.ID))
	return nil
}

// wake tells the store's forward actor about a new settle, or a payment
// made again, whose money is on the service's node, in the trace of
// ctx.
func (l *ledger) wake(ctx context.Context, inv *kassa.Invoice, effects []kassa.Effect) {
	if l.custody.Wakes(inv, effects) {
		l.forwarder.wake(ctx, inv.StoreID)
	}
}

// lightningCanceller cancels the Lightning invoices of Kassa invoices
// that no longer wait for them.
type lightningCanceller struct {
	node    kassa.Lightning
	timeout time.Duration
	log     *slog.Logger
}

// cancel asks the node to cancel a Lightning invoice whose Kassa invoice
// no longer waits for it, off the actor's mailbox so that a slow node
// delays nothing. A failure is only logged: the node expires the invoice
// on its own at the same time, and a payment that still arrives is
// recorded (PaidAfterExpiration, or paid again).
func (c *lightningCanceller) cancel(paymentHash, invoiceID string) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		defer cancel()
		if err := c.node.CancelInvoice(ctx, paymentHash); err != nil {
			c.log.Warn("lightning backend: cancel invoice", "invoice", invoiceID, "err", err)
		}
	}()
}

// journalFaults holds the journals found not to replay, by stream.
type journalFaults struct {
	faults sync.Map
	log    *slog.Logger
}

// record records f, logs it once per activation, and returns it.
func (j *journalFaults) record(f *JournalFault) *JournalFault {
	j.faults.Store(f.Stream, f)
	msg := "journal does not replay: the actor refuses its commands until the journal is repaired"
	if f.Seq == 0 {
		msg = "snapshot does not load: the actor refuses its commands"
	}
	j.log.Error(msg, "kind", f.Stream.Kind, "id", f.Stream.ID, "seq", f.Seq, "event", f.Event, "err", f.Err)
	return f
}

// list returns the faults by kind and id.
func (j *journalFaults) list() []JournalFault {
	var out []JournalFault
	j.faults.Range(func(_, v any) bool {
		out = append(out, *v.(*JournalFault))
		return true
	})
	slices.SortFunc(out, func(a, b JournalFault) int {
		return cmp.Or(cmp.Compare(a.Stream.Kind, b.Stream.Kind), cmp.Compare(a.Stream.ID, b.Stream.ID))
	})
	return out
}
