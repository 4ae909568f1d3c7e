package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/shopspring/decimal"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/metrics"
	"github.com/kassapay/kassa/protos"
)

// EventSink receives the webhook events of invoices once the event that
// caused them is durable.
type EventSink interface {
	InvoiceEvent(ctx context.Context, inv *kassa.Invoice, e kassa.Emit)
}

// Config holds what the actors need.
type Config struct {
	Journal   kassa.Journal
	Reader    kassa.Reader
	Chain     kassa.Chain
	Lightning kassa.Lightning
	Rates     kassa.Rates
	// Webhooks sends to merchants' URLs.
	Webhooks kassa.WebhookClient
	// WebhookSigAliases are more header names that carry the X-Service-Sig
	// value on every delivery (kassa.CheckSigAlias checks them).
	WebhookSigAliases []string
	Events            EventSink // nil: events are only logged
	Clock             kassa.Clock
	Logger            *slog.Logger
	// Metrics counts creates, settles, deliveries and settle lags (nil:
	// a Set of the Runtime's own, unserved).
	Metrics *metrics.Set
	// InvoiceExpiry is how long an invoice waits for its payment.
	InvoiceExpiry time.Duration
	// Monitoring is how long an expired invoice's address is watched.
	Monitoring time.Duration
	// RequestTimeout bounds one request to an actor.
	RequestTimeout time.Duration
	// Forwarder forwards stores' Lightning money to their Lightning
	// addresses; nil keeps it on the service's node.
	Forwarder *Forwarder
	// Claims, on a store several nodes share (PostgreSQL), makes each
	// webhook endpoint claim its next delivery before sending it, so
	// that two nodes never send one endpoint's deliveries side by side
	// and a lost node's are sent by another (docs/decisions.md, "Outbox
	// claims"). Nil (Pebble, one node) sends as before.
	Claims kassa.OutboxClaims
	// ClaimHolder names this node in its claims; a restarted node must
	// use a new name. Empty: a random one. A cluster member with a
	// membership fence claims under its member id instead.
	ClaimHolder string
	// ClaimTTL is how long a delivery's claim lasts (DefaultClaimTTL).
	// It must exceed the webhook send timeout (5 s) with margin: a
	// holder that does not stall records its attempt before its claim
	// runs out (one that does is refused; its attempt is not recorded).
	ClaimTTL time.Duration
	// ClaimRetry is how soon an endpoint whose next delivery another
	// node holds, or whose attempt could not be recorded, tries again
	// (DefaultClaimRetry).
	ClaimRetry time.Duration
}

// Defaults of the outbox claims (Config.ClaimTTL, Config.ClaimRetry).
// The TTL is the 5 s send timeout and 3 s for reading the webhook and
// recording the attempt. An endpoint whose next delivery a lost node
// claimed is sent by the node that runs it now as soon as the claim has
// run out, at most DefaultClaimTTL after the lost node claimed it: a
// refused claim is tried again at the claim's expiry, or sooner, every
// DefaultClaimRetry.
const (
	DefaultClaimTTL   = 8 * time.Second
	DefaultClaimRetry = time.Second
)

// System is a node's core, made by NewSystem: the actor Runtime, its
// Cluster, and the application Service over them. It has no methods:
// callers name the part they use, the Runtime (actors, recovery,
// draining, shutdown, actor health), the Cluster (membership, placement,
// routing of store calls, fencing, cluster health) or the Service (the
// commands of kassa's service ports and the events of the chain,
// Lightning and expiry), and code that needs one part takes that one
// (docs/decisions.md, "An actor runtime and an application service").
type System struct {
	Runtime *Runtime
	Cluster *Cluster
	Service *Service
}

// Runtime runs the node's actors: the store actors (which supervise
// their invoice actors) and the webhook endpoint actors, looked up or
// spawned by id, and their recovery, draining and shutdown. Its Cluster
// places the stores on the nodes and routes a store command to the node
// that runs the store; while the Cluster halts the node, the Runtime
// spawns no actor and answers every request with why. It knows no
// business rule: a command's body is the Service's.
type Runtime struct {
	cfg Config
	// as is the actor system; a node that joins its cluster again
	// under a new member id gets a new one (Rejoin).
	as     atomic.Pointer[actor.ActorSystem]
	tracer trace.Tracer
	log    *slog.Logger

	storeProps *actor.Props
	// storeP are the ports of the store actors; invoiceP those of the
	// invoice actors, which a create that needs no actor uses too.
	storeP   *storePorts
	invoiceP *invoicePorts
	// webhookP are the ports of the webhook endpoint actors.
	webhookP *webhookPorts
	webhooks sync.Map // webhook id → *actor.PID
	// outbox makes invoice events' webhook deliveries; ledger writes
	// settlement lines (ports of the invoice actors).
	outbox *webhookOutbox
	ledger *ledger
	// recovered is set once Recover has run; a store actor that starts
	// after that (after a panic, say) wakes its invoices due soon.
	recovered atomic.Bool
	// deliveriesRecovered is set once RecoverDeliveries has sent the
	// outbox; a webhook actor that starts after that sends its own.
	deliveriesRecovered atomic.Bool
	stores              sync.Map // store id → *actor.PID
	shutdown            sync.Once
	// cluster is the node's part in its cluster; never joined on a
	// single node.
	cluster *Cluster
	// spawnMu orders the spawning of store and webhook actors with
	// halting: an actor is spawned only while the node is not halted,
	// so that stopOwned, which runs after the halt, finds every one.
	spawnMu sync.RWMutex
	// halt, when set, is why this node serves as no store's owner: it
	// lost its membership (Expelled, for good) or lost contact with etcd
	// (Suspend, until Resume).
	halt atomic.Pointer[kassa.Error]
	// stats count the actors of each kind (ActorStats).
	stats *systemStats
	// journalFaults holds the journals found not to replay, by stream
	// (JournalFaults).
	journalFaults journalFaults
	// deliveryCtx is the context of webhook deliveries; Drain cancels it
	// when its time is up (see deliveryContext).
	deliveryOnce   sync.Once
	deliveryCtx    context.Context
	deliveryCancel context.CancelFunc
}

// NewSystem starts a node's actor runtime and the service over it. Call
// Recover once the backends run.
func NewSystem(cfg Config) *System {
	rt := newRuntime(cfg)
	svc := newService(rt)
	rt.cluster.handler = svc
	return &System{Runtime: rt, Cluster: rt.cluster, Service: svc}
}

// newRuntime starts an actor system.
func newRuntime(cfg Config) *Runtime {
	cfg.Metrics = metrics.Or(cfg.Metrics)
	if cfg.Clock == nil {
		cfg.Clock = kassa.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.InvoiceExpiry <= 0 {
		cfg.InvoiceExpiry = kassa.DefaultInvoiceExpiry
	}
	if cfg.Monitoring <= 0 {
		cfg.Monitoring = kassa.DefaultMonitoring
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	if cfg.ClaimHolder == "" {
		cfg.ClaimHolder = "node/" + kassa.NewID("")
	}
	if cfg.ClaimTTL <= 0 {
		cfg.ClaimTTL = DefaultClaimTTL
	}
	if cfg.ClaimRetry <= 0 {
		cfg.ClaimRetry = DefaultClaimRetry
	}
	// protoactor-go logs every cluster request at debug level, with its
	// message (a routed call's arguments can hold a webhook secret),
	// and chatters at info: only its warnings and errors are kept.
	s := &Runtime{
		cfg:    cfg,
		tracer: otel.Tracer("github.com/kassapay/kassa/actors"),
		log:    cfg.Logger,
		stats:  newSystemStats(),
		ledger: newLedger(&cfg),
	}
	s.journalFaults.log = s.log
	s.cluster = &Cluster{rt: s, cfg: &s.cfg, log: s.log, tracer: s.tracer}
	s.outbox = &webhookOutbox{reader: cfg.Reader, wake: s.wakeWebhook}
	s.as.Store(s.newActorSystem())
	// A panicking invoice actor is restarted from storage; its siblings
	// and its store are not touched.
	invoiceSupervisor := actor.NewOneForOneStrategy(10, time.Minute, func(reason any) actor.Directive {
		s.log.Error("invoice actor crashed; restarting it from storage", "reason", fmt.Sprint(reason))
		return actor.RestartDirective
	})
	// One Props for every invoice actor: per-actor memory matters with
	// many open invoices.
	invoice := s.invoicePorts()
	s.invoiceP = invoice
	s.storeP = s.storePorts(actor.PropsFromProducer(func() actor.Actor { return &invoiceActor{p: invoice} }, s.stats.invoice.props()...))
	s.storeProps = actor.PropsFromProducer(func() actor.Actor { return &storeActor{p: s.storeP} },
		append(s.stats.store.props(), actor.WithSupervisor(invoiceSupervisor))...)
	s.webhookP = s.webhookPorts()
	return s
}

// webhookActorProps makes the actor of webhook endpoint id.
func (s *Runtime) webhookActorProps(id string) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &webhookActor{p: s.webhookP, id: id} }, s.stats.webhook.props()...)
}

// newActorSystem makes an actor system for this node.
func (s *Runtime) newActorSystem() *actor.ActorSystem {
	quiet := slog.New(minLevel{s.cfg.Logger.Handler(), slog.LevelWarn}).With("component", "protoactor")
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
}

// actorSystem is the node's actor system.
func (s *Runtime) actorSystem() *actor.ActorSystem { return s.as.Load() }

// Shutdown stops every actor and waits for them (a store actor stops its
// invoice actors first), so that nothing writes to storage afterwards. It
// may be called more than once.
func (s *Runtime) Shutdown() {
	s.shutdown.Do(func() {
		var futures []actor.Future
		for _, m := range []*sync.Map{&s.stores, &s.webhooks} {
			m.Range(func(_, pid any) bool {
				futures = append(futures, s.actorSystem().Root.StopFuture(pid.(*actor.PID)))
				return true
			})
		}
		for _, f := range futures {
			_ = f.Wait()
		}
		if st := s.cluster.clusterState(); st != nil && !st.left.Load() {
			// Leaves the membership (the others take the stores over)
			// and stops the actor system.
			st.c.Shutdown(true)
			return
		} else if st != nil && s.actorSystem() == st.c.ActorSystem {
			return // a Rejoin gave it up and stopped it
		}
		s.actorSystem().Shutdown()
	})
}

// store returns the actor of store id, spawning it when it is not active.
func (s *Runtime) store(id string) *actor.PID {
	if pid, ok := s.stores.Load(id); ok {
		return pid.(*actor.PID)
	}
	return s.spawn(&s.stores, s.storeProps, "store/", id)
}

// spawn spawns the actor named prefix+id unless it runs already (in
// actors, keyed by id), and returns its PID. While the node is halted
// it spawns nothing and returns a PID that no actor answers: the
// callers' requests answer why the node is halted, and their sends are
// dropped.
func (s *Runtime) spawn(actors *sync.Map, props *actor.Props, prefix, id string) *actor.PID {
	s.spawnMu.RLock()
	defer s.spawnMu.RUnlock()
	as := s.actorSystem()
	if s.halt.Load() != nil {
		return actor.NewPID(as.Address(), "halted/"+prefix+id)
	}
	pid, err := as.Root.SpawnNamed(props, prefix+id)
	if err != nil && !errors.Is(err, actor.ErrNameExists) {
		panic(fmt.Sprintf("spawn actor %s%s: %v", prefix, id, err))
	}
	actual, _ := actors.LoadOrStore(id, pid)
	return actual.(*actor.PID)
}

// haltWith halts the node with why (see Runtime.halt) when it is not
// halted, or when it is halted with one of from; it reports whether it
// did. The store and webhook actors spawned before it are in their maps
// by the time it returns (spawn), for stopOwned.
func (s *Runtime) haltWith(why *kassa.Error, from ...*kassa.Error) bool {
	s.spawnMu.Lock()
	defer s.spawnMu.Unlock()
	cur := s.halt.Load()
	if cur != nil && cur != why && !slices.Contains(from, cur) {
		return false
	}
	return s.halt.CompareAndSwap(cur, why) && cur != why
}

// request sends msg to pid and waits for its reply, within the call's
// budget (withBudget).
func (s *Runtime) request(ctx context.Context, pid *actor.PID, msg any) (any, error) {
	ctx, cancel := withBudget(ctx, s.cfg.RequestTimeout)
	defer cancel()
	timeout := budgetLeft(ctx)
	if timeout <= 0 {
		return nil, errTimedOut
	}
	if h := s.halt.Load(); h != nil {
		return nil, h
	}
	res, err := s.actorSystem().Root.RequestFuture(pid, msg, timeout).Result()
	if h := s.halt.Load(); h != nil && err != nil {
		return nil, h // its actor stopped under it
	}
	if errors.Is(err, actor.ErrTimeout) {
		s.log.Error("actor request timed out", "actor", pid.Id, "timeout", timeout)
		return nil, kassa.Errorf(kassa.Unavailable, "the service is busy: try again")
	}
	if err != nil {
		return nil, fmt.Errorf("actor %s: %w", pid.Id, err)
	}
	if r, ok := res.(reply); ok {
		return r.value, r.err
	}
	return res, nil
}

// errTimedOut answers a call whose budget was spent before it reached
// an actor.
var errTimedOut = kassa.Errorf(kassa.Unavailable, "request timed out")

// errActorPanicked answers a request whose handling panicked in its
// actor (answerPanic).
var errActorPanicked = kassa.Errorf(kassa.Internal, "internal error: the request failed; try again")

// answerPanic, deferred in the Receive of every actor that answers
// requests (store, invoice and webhook endpoint actors), answers
// the request whose handling panicked with errActorPanicked at once,
// logs the panic with its stack, and panics on: protoactor restarts the
// actor, which loads its state from storage again (a batch is written
// whole or not at all), and the caller does not wait out its budget.
func answerPanic(ctx actor.Context, log *slog.Logger) {
	r := recover()
	if r == nil {
		return
	}
	log.Error("an actor panicked; restarting it from storage", "actor", ctx.Self().Id,
		"message", fmt.Sprintf("%T", ctx.Message()), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	if ctx.Sender() != nil {
		ctx.Respond(reply{err: errActorPanicked})
	}
	panic(r)
}

// tell sends msg to pid without waiting for an answer.
func (s *Runtime) tell(pid *actor.PID, msg any) { s.actorSystem().Root.Send(pid, msg) }

// askStore sends msg to the actor of store id and waits for its reply.
func (s *Runtime) askStore(ctx context.Context, storeID string, msg any) (any, error) {
	return s.request(ctx, s.store(storeID), msg)
}

// tellStore sends msg to the actor of store id without waiting.
func (s *Runtime) tellStore(storeID string, msg any) { s.tell(s.store(storeID), msg) }

// askWebhook sends msg to the actor of webhook endpoint id and waits for
// its reply.
func (s *Runtime) askWebhook(ctx context.Context, webhookID string, msg any) (any, error) {
	return s.request(ctx, s.webhook(webhookID), msg)
}

// invoices are the ports of the invoice actors.
func (s *Runtime) invoices() *invoicePorts { return s.invoiceP }

// reply is the answer of an actor to a request.
type reply struct {
	value any
	err   error
}

// Messages handled by store actors. They stay on one node; what crosses
// actors as data (invoice events) is protobuf. Each carries its
// caller's call context (deadline, trace, request id) as values, not a
// context.Context: the actor makes its own from it.
type (
	createStore struct {
		call  callContext
		store *kassa.Store
	}
	// openInvoice takes a new invoice on, before the backends are asked
	// for its address and Lightning invoice: the store checks that its
	// fee fits in the credit limit and reserves it, and with derive set
	// allocates the invoice's derivation index (the reply).
	openInvoice struct {
		call      callContext
		invoiceID string
		fee       kassa.Sats
		derive    bool
	}
	// spawnInvoice creates an invoice that openInvoice took on.
	spawnInvoice struct {
		call    callContext
		inv     kassa.Invoice
		effects []kassa.Effect
		// session, when set, names the pay-link session the invoice is
		// for (see sessionInvoice).
		session string
	}
	// sessionInvoice asks for the live invoice of a pay-link session
	// (pay link id and session token); the reply is nil when there is
	// none.
	sessionInvoice struct {
		call callContext
		key  string
	}
	// feeReleased says that an invoice no longer needs its fee reserved:
	// it settled (the fee is on the balance now), expired, turned
	// invalid, or was never stored.
	feeReleased struct{ invoiceID string }
	// invoiceCommand routes an event to an invoice actor, activating it
	// from storage when needed; a nil event only activates it.
	invoiceCommand struct {
		call      callContext
		invoiceID string
		event     *protos.InvoiceEvent
	}
	savePaymentRequest struct {
		call    callContext
		id      string // empty: create
		input   *kassa.PaymentRequestInput
		archive bool
	}
	topUp struct {
		call   callContext
		amount kassa.Sats
		// rate is the price of one bitcoin in the store's currency.
		rate decimal.Decimal
		// reference, when set, is credited once (kassa.StoreService).
		reference string
	}
	// changeStore changes the store's document: change gets the current
	// store and returns the next one with the event that records it.
	// Returning the current store itself journals the event alone and
	// leaves the snapshot as it is.
	changeStore struct {
		call   callContext
		change func(*kassa.Store) (*kassa.Store, *protos.StoreEvent, error)
		// record, when set, adds to the change's batch (the request id
		// of a create, putRequest).
		record func(kassa.Batch)
	}
	// releaseAddress gives back the derivation index of an invoice that
	// expired unpaid, once its address is no longer watched.
	releaseAddress struct{ index uint32 }
)

// minLevel is a slog handler that drops records below level.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.level}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.level}
}
