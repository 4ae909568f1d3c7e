package actors

import (
	"context"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/metrics"
	"github.com/kassapay/kassa/telemetry"
)

// ActorStat describes the actors of one kind: how many run, how many
// messages wait in their mailboxes and how often one was restarted
// after a panic.
type ActorStat struct {
	Kind     string `json:"kind"`
	Live     int64  `json:"live"`
	Queued   int64  `json:"queued"`
	Restarts int64  `json:"restarts"`
}

// kindStats counts the actors of one kind. It is both their mailboxes'
// middleware (messages posted less messages received is what waits) and
// their receive middleware (Started and Stopped count live actors,
// Restarting the restarts).
type kindStats struct {
	kind                   string
	live, queued, restarts atomic.Int64
}

func (k *kindStats) MailboxStarted()     {}
func (k *kindStats) MessagePosted(any)   { k.queued.Add(1) }
func (k *kindStats) MessageReceived(any) { k.queued.Add(-1) }
func (k *kindStats) MailboxEmpty()       {}
func (k *kindStats) stat() ActorStat {
	return ActorStat{Kind: k.kind, Live: k.live.Load(), Queued: max(k.queued.Load(), 0), Restarts: k.restarts.Load()}
}

// receive counts lifecycle messages before the actor sees them.
func (k *kindStats) receive(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
		switch env.Message.(type) {
		case *actor.Started:
			k.live.Add(1)
		case *actor.Stopped:
			k.live.Add(-1)
		case *actor.Restarting:
			// The instance that panicked is gone (Started counts the
			// new one), and so is the message it panicked on, which
			// its mailbox never saw received.
			k.live.Add(-1)
			k.restarts.Add(1)
			k.queued.Add(-1)
		}
		next(c, env)
	}
}

// props returns the options that make actors of this kind counted.
func (k *kindStats) props() []actor.PropsOption {
	return []actor.PropsOption{actor.WithMailbox(actor.Unbounded(k)), actor.WithReceiverMiddleware(k.receive)}
}

// ActorStats describes the system's actors by kind: store, invoice and
// webhook.
func (s *Runtime) ActorStats() []ActorStat {
	return []ActorStat{s.stats.store.stat(), s.stats.invoice.stat(), s.stats.webhook.stat()}
}

// systemStats are the counters of a Runtime's actor kinds.
type systemStats struct{ store, invoice, webhook kindStats }

func newSystemStats() *systemStats {
	st := &systemStats{}
	st.store.kind, st.invoice.kind, st.webhook.kind = "store", "invoice", "webhook"
	return st
}

// ActorStats describes the forward actors.
func (f *Forwarder) ActorStats() []ActorStat { return []ActorStat{f.stats.stat()} }

// ForwardCounts answers how many forwards are open (made and not yet
// succeeded) and how many settled transfers wait to be taken into one.
func (f *Forwarder) ForwardCounts(ctx context.Context) (open, queued int, err error) {
	stores, err := f.cfg.Store.ForwardingStores(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, id := range stores {
		if err := f.cfg.Store.OpenForwards(ctx, id, func(*kassa.Forward) error { open++; return nil }); err != nil {
			return 0, 0, err
		}
		if err := f.cfg.Store.QueuedTransfers(ctx, id, func(kassa.QueuedTransfer) error { queued++; return nil }); err != nil {
			return 0, 0, err
		}
	}
	return open, queued, nil
}

var (
	actorsLive     = prometheus.NewDesc("kassa_actors", "Live actors, by kind (store, invoice, webhook, forward).", []string{"kind"}, nil)
	actorsQueued   = prometheus.NewDesc("kassa_actor_mailbox_messages", "Messages waiting in the mailboxes of the actors of a kind.", []string{"kind"}, nil)
	actorsRestarts = prometheus.NewDesc("kassa_actor_restarts_total", "Actors restarted after a panic, by kind.", []string{"kind"}, nil)
	forwardsOpen   = prometheus.NewDesc("kassa_forwards_pending", "Lightning forwards made and not yet paid.", nil, nil)
	forwardsQueued = prometheus.NewDesc("kassa_forward_transfers_queued", "Settled Lightning transfers waiting to be forwarded.", nil, nil)
)

// Collector returns the scrape-time metrics of the actors of sys and, when
// fwd is not nil, of the forwarder: live actors, mailbox lengths and
// restarts by kind, and forwards pending.
func Collector(sys *Runtime, fwd *Forwarder) metrics.Func {
	return metrics.Func{
		Descs: []*prometheus.Desc{actorsLive, actorsQueued, actorsRestarts, forwardsOpen, forwardsQueued},
		Collect: func(ctx context.Context, ch chan<- prometheus.Metric) {
			stats := sys.ActorStats()
			if fwd != nil {
				stats = append(stats, fwd.ActorStats()...)
			}
			for _, st := range stats {
				ch <- metrics.Gauge(actorsLive, float64(st.Live), st.Kind)
				ch <- metrics.Gauge(actorsQueued, float64(st.Queued), st.Kind)
				ch <- metrics.Counter(actorsRestarts, float64(st.Restarts), st.Kind)
			}
			var open, queued int
			if fwd != nil {
				var err error
				if open, queued, err = fwd.ForwardCounts(ctx); err != nil {
					return
				}
			}
			ch <- metrics.Gauge(forwardsOpen, float64(open))
			ch <- metrics.Gauge(forwardsQueued, float64(queued))
		},
	}
}

// methodLabel is a payment method as the metrics name it.
func methodLabel(m kassa.PaymentMethod) string {
	if m == kassa.MethodLightning {
		return "lightning"
	}
	return "onchain"
}

// countCreated counts a created invoice under each method it offers.
func countCreated(m *metrics.Set, inv *kassa.Invoice) {
	for _, method := range inv.EnabledMethods {
		m.InvoicesCreated.WithLabelValues(methodLabel(method)).Inc()
	}
}

// countSettled counts the settles among durable effects.
func countSettled(m *metrics.Set, effects []kassa.Effect) {
	for _, e := range effects {
		if s, ok := e.(kassa.Settle); ok {
			m.InvoicesSettled.WithLabelValues(methodLabel(s.Method)).Inc()
		}
	}
}

// countDelivery counts a recorded delivery attempt.
func countDelivery(m *metrics.Set, d *kassa.Delivery, attempted bool) {
	outcome := "failed"
	switch {
	case !attempted:
		outcome = "dropped"
	case d.Status == kassa.DeliveryDelivered:
		outcome = "delivered"
	}
	m.WebhookDeliveries.WithLabelValues(outcome).Inc()
	if attempted {
		m.WebhookDuration.WithLabelValues(outcome).Observe(d.Duration.Seconds())
	}
}

// deliverySpanOptions are the attributes of a delivery's span and its
// link to the creation of the invoice whose event it carries.
func deliverySpanOptions(d *kassa.Delivery) []trace.SpanStartOption {
	opts := []trace.SpanStartOption{trace.WithAttributes(
		attribute.String("webhook.id", d.WebhookID), attribute.String("delivery.id", d.ID),
		attribute.String("store.id", d.StoreID), attribute.String("invoice.id", d.InvoiceID),
		attribute.String("event.type", string(d.Type)), attribute.Int("delivery.attempt", d.Attempt))}
	if sc := telemetry.SpanContext(d.CreationTrace); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc,
			Attributes: []attribute.KeyValue{attribute.String("link.kind", "invoice.created")}}))
	}
	return opts
}
