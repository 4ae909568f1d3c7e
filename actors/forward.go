package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/metrics"
)

// LightningPayer pays invoices from the service's node (lightning/lnd
// and lightning/sim implement it).
type LightningPayer interface {
	// PayInvoice pays paymentRequest spending at most feeLimit on
	// routing, waiting at most timeout for the outcome. A payment still
	// in flight when it returns is reported as such; TrackPayment
	// learns its outcome later.
	PayInvoice(ctx context.Context, paymentRequest string, feeLimit kassa.MSat, timeout time.Duration) (kassa.LightningPayment, error)
	// TrackPayment returns the state of the payment with paymentHash;
	// PaymentUnknown when the node never sent it.
	TrackPayment(ctx context.Context, paymentHash string) (kassa.LightningPayment, error)
	// EstimateFee returns what a payment of amount to payee would cost
	// in routing fees, at most feeLimit; an error when no route is found
	// within it. It asks the payee for nothing: it is how a forward
	// learns the fee before it asks for the one invoice it pays.
	EstimateFee(ctx context.Context, payee kassa.Payee, amount, feeLimit kassa.MSat) (kassa.MSat, error)
	// SendReady returns nil when the node can send payments now: it
	// answers, is synced to the chain and has an active channel.
	// Otherwise (lnd just restarted, its channels not active yet) an
	// error says why: a payment failing then says nothing of its
	// destination.
	SendReady(ctx context.Context) error
}

// LightningAddresses resolves stores' Lightning addresses (LNURL-pay;
// lnurl.Addresses implements it).
type LightningAddresses interface {
	// PayRequest fetches address's pay request.
	PayRequest(ctx context.Context, address string) (kassa.PayRequest, error)
	// Invoice asks for an invoice of exactly amount, passing comment when
	// the pay request allows one, and checks it.
	Invoice(ctx context.Context, p kassa.PayRequest, amount kassa.MSat, comment string) (kassa.AddressInvoice, error)
}

// ForwarderConfig holds what forwarding needs.
type ForwarderConfig struct {
	Journal kassa.Journal
	Store   kassa.ForwardStore
	Reader  kassa.Reader
	Payer   LightningPayer
	// Wallet pays on-chain refund payouts (nil: they fail, money back).
	Wallet    OnchainWallet
	Addresses LightningAddresses
	Clock     kassa.Clock
	Logger    *slog.Logger
	// Metrics counts the forward attempts (nil: a Set of the
	// Forwarder's own, unserved).
	Metrics *metrics.Set
	// PayTimeout bounds one payment attempt; zero means a minute.
	PayTimeout time.Duration
	// TrackEvery is how often a payment in flight (or whose outcome is
	// unknown) is looked up; zero means 5 s.
	TrackEvery time.Duration
	// Standby says that the service runs as a cluster: the forward
	// actors run only inside Lead, on the node that holds the forwarder
	// lease, and write through the lease's fenced store.
	Standby bool
	// PollEvery is how often Lead looks for newly queued transfers;
	// zero means 2 s.
	PollEvery time.Duration
	// Values, when set, keeps the node and route hints of each Lightning
	// address's last invoice across restarts (the fee of the next
	// forward is estimated to it).
	Values kassa.KeyValue
	// Onchain says that the on-chain addresses of stores without an xpub
	// are the service's own wallet (its lnd's): their confirmed payments
	// are forwarded to the store's Lightning address like Lightning ones
	// (docs/decisions.md, "On-chain payments without an xpub").
	Onchain bool
}

// Forwarder runs one forward actor per store: it sends the store's
// Lightning money on to its Lightning address (docs/decisions.md,
// "Forwarding"). Settled invoices queue their transfer in the settle's
// batch (ledger.put); the actor takes queued transfers into
// a forward, records the invoice it will pay before paying it, learns the
// outcome of an attempt from the node (after a restart too) before making
// another, and settles the transfer lines once the payment succeeded. A
// forward is never paid twice: an attempt's payment hash is durable
// before the payment is sent, and a new invoice is requested only once
// the node says the previous attempt failed.
//
// In a cluster (ForwarderConfig.Standby) the actors run only on the node
// that holds the forwarder lease, inside Lead, and every write of theirs
// is fenced by the lease: two nodes never forward at once, and a stalled
// former holder cannot record (so cannot pay) an invoice of its own.
type Forwarder struct {
	cfg    ForwarderConfig
	as     *actor.ActorSystem
	opts   []actor.PropsOption
	ctx    context.Context
	cancel context.CancelFunc
	log    *slog.Logger
	once   sync.Once
	stats  *kindStats
	tracer trace.Tracer

	// payees holds each Lightning address's node (lower-case address →
	// kassa.Payee).
	payees sync.Map

	mu sync.Mutex
	// cur is the term this node forwards in; nil while it does not.
	cur *term
	// payouts are the refund payouts the forward actors pay too; nil:
	// none (PayPayouts).
	payouts RefundPayouts
}

// term is a stretch of time in which this node forwards: the life of the
// Forwarder on a single node, a holding of the forwarder lease in a
// cluster. Its actors write through commit and stop when it ends.
type term struct {
	ctx    context.Context
	commit func(context.Context, kassa.Batch) error
	actors sync.Map // store id → *actor.PID
}

// NewForwarder returns a Forwarder; call Recover once the backends run
// (or, in a cluster, Lead under the forwarder lease).
func NewForwarder(cfg ForwarderConfig) *Forwarder {
	cfg.Metrics = metrics.Or(cfg.Metrics)
	if cfg.Clock == nil {
		cfg.Clock = kassa.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.PayTimeout <= 0 {
		cfg.PayTimeout = time.Minute
	}
	if cfg.TrackEvery <= 0 {
		cfg.TrackEvery = 5 * time.Second
	}
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = 2 * time.Second
	}
	log := cfg.Logger.With("component", "forward")
	quiet := cfg.Logger.With("component", "protoactor")
	f := &Forwarder{cfg: cfg, log: log, stats: &kindStats{kind: "forward"}, tracer: otel.Tracer("github.com/kassapay/kassa/actors"),
		as: actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.opts = append(f.stats.props(), actor.WithSupervisor(actor.NewOneForOneStrategy(10, time.Minute, func(reason any) actor.Directive {
		log.Error("forward actor crashed; restarting it from storage", "reason", fmt.Sprint(reason))
		return actor.RestartDirective
	})))
	if !cfg.Standby {
		f.cur = f.newTerm(f.ctx, cfg.Journal.Commit)
	}
	return f
}

func (f *Forwarder) newTerm(ctx context.Context, commit func(context.Context, kassa.Batch) error) *term {
	return &term{ctx: ctx, commit: commit}
}

// current is the term under way, or nil.
func (f *Forwarder) current() *term {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cur
}

// Wake tells the store's forward actor to look at its queue.
func (f *Forwarder) Wake(storeID string) { f.wake(context.Background(), storeID) }

// wake is Wake in the trace of ctx (nil: none). Outside a term (a
// cluster's node that does not hold the forwarder lease) it does
// nothing: the holder finds the queued transfer (Lead).
func (f *Forwarder) wake(ctx context.Context, storeID string) {
	t := f.current()
	if f.ctx.Err() != nil || t == nil || t.ctx.Err() != nil {
		return
	}
	f.as.Root.Send(f.actor(t, storeID), wakeForward{settle: trace.SpanContextFromContext(ctx)})
}

// Recover wakes the forward actor of every store with queued transfers
// or open forwards.
func (f *Forwarder) Recover(ctx context.Context) (int, error) {
	if f.current() == nil {
		return 0, nil
	}
	stores, err := f.cfg.Store.ForwardingStores(ctx)
	if err != nil {
		return 0, err
	}
	paying, err := f.payoutStores(ctx)
	if err != nil {
		return 0, err
	}
	for _, id := range paying {
		if !slices.Contains(stores, id) {
			stores = append(stores, id)
		}
	}
	for _, id := range stores {
		f.Wake(id)
	}
	return len(stores), nil
}

// Lead forwards until ctx ends: it is the work of the forwarder lease in
// a cluster (lease.Runner), kv the lease's fenced store, which must also
// commit batches under the lease (Commit). Every forward and ledger
// write of the term goes through it, so a node that lost the lease (it
// stalled, another took over) has its next write refused and pays
// nothing new: a merchant invoice is paid only once it is recorded, and
// the only invoice it can still pay is one recorded while it held the
// lease, which the new holder tracks by its hash (lnd pays a hash once).
// Lead resumes every store's forwards and payouts, then looks every
// PollEvery for stores with newly queued transfers or payouts to send
// not seen before, since the settles that queue the ones and the
// approvals of the others happen on whichever node runs the store or
// answers the request, whose Wake does nothing outside a term.
func (f *Forwarder) Lead(ctx context.Context, kv kassa.KeyValue) error {
	c, ok := kv.(interface {
		Commit(context.Context, kassa.Batch) error
	})
	if !ok {
		return fmt.Errorf("forwarding: the lease's store %T cannot commit batches", kv)
	}
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(f.ctx, cancel)()
	t := f.newTerm(tctx, c.Commit)
	f.mu.Lock()
	f.cur = t
	f.mu.Unlock()
	defer f.endTerm(t)
	f.log.Info("forwarding on this node (forwarder lease held)")
	queued := make(map[string]int64) // store → newest queued transfer seen
	sending := make(map[string]bool) // payouts to send seen at the last poll
	for tctx.Err() == nil {
		if err := f.poll(t, queued, sending); err != nil && tctx.Err() == nil {
			f.log.Warn("look for queued forwards", "err", err)
		}
		done := make(chan struct{})
		stop := f.cfg.Clock.AfterFunc(f.cfg.PollEvery, func() { close(done) })
		select {
		case <-tctx.Done():
		case <-done:
		}
		stop()
	}
	return nil
}

// poll wakes the actors of the stores that have forwarding or payouts
// to do and no actor yet in t, a transfer queued since the last poll,
// or a payout to send that the last poll did not see (sending, which
// poll updates).
func (f *Forwarder) poll(t *term, queued map[string]int64, sending map[string]bool) error {
	stores, err := f.cfg.Store.ForwardingStores(t.ctx)
	if err != nil {
		return err
	}
	var wake []string
	for _, id := range stores {
		var newest int64
		if err := f.cfg.Store.QueuedTransfers(t.ctx, id, func(q kassa.QueuedTransfer) error {
			newest = max(newest, q.TransactionID)
			return nil
		}); err != nil {
			return err
		}
		_, running := t.actors.Load(id)
		if !running || newest > queued[id] {
			queued[id] = newest
			wake = append(wake, id)
		}
	}
	todo, err := f.payoutsToSend(t.ctx)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(todo))
	for _, p := range todo {
		seen[p.ID] = true
		if _, running := t.actors.Load(p.StoreID); (!running || !sending[p.ID]) && !slices.Contains(wake, p.StoreID) {
			wake = append(wake, p.StoreID)
		}
	}
	clear(sending)
	maps.Copy(sending, seen)
	for _, id := range wake {
		if t.ctx.Err() != nil {
			break
		}
		f.as.Root.Send(f.actor(t, id), wakeForward{})
	}
	return nil
}

// endTerm stops t's actors, unless Shutdown did.
func (f *Forwarder) endTerm(t *term) {
	f.mu.Lock()
	mine := f.cur == t
	if mine {
		f.cur = nil
	}
	f.mu.Unlock()
	if mine {
		f.stopActors(t)
		f.log.Info("forwarding stopped on this node (forwarder lease gone)")
	}
}

// stopActors stops every actor of t and waits for them.
func (f *Forwarder) stopActors(t *term) {
	var futures []actor.Future
	t.actors.Range(func(_, pid any) bool {
		futures = append(futures, f.as.Root.StopFuture(pid.(*actor.PID)))
		return true
	})
	for _, fut := range futures {
		_ = fut.Wait()
	}
}

// Shutdown cancels the work in flight and stops every forward actor. A
// payment cut off by it is tracked after the next start.
func (f *Forwarder) Shutdown() {
	f.once.Do(func() {
		f.cancel()
		f.mu.Lock()
		t := f.cur
		f.cur = nil
		f.mu.Unlock()
		if t != nil {
			f.stopActors(t)
		}
		f.as.Shutdown()
	})
}

func (f *Forwarder) actor(t *term, storeID string) *actor.PID {
	if pid, ok := t.actors.Load(storeID); ok {
		return pid.(*actor.PID)
	}
	props := actor.PropsFromProducer(func() actor.Actor { return &forwardActor{f: f, t: t, storeID: storeID} }, f.opts...)
	pid, err := f.as.Root.SpawnNamed(props, "forward/"+storeID)
	if err != nil && !errors.Is(err, actor.ErrNameExists) {
		panic(fmt.Sprintf("spawn forward actor %s: %v", storeID, err))
	}
	actual, _ := t.actors.LoadOrStore(storeID, pid)
	return actual.(*actor.PID)
}

// payeeUntil is when a remembered Lightning address's node expires:
// never (a record per address, replaced when the node changes).
var payeeUntil = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

func payeeKey(address string) string { return "forward/payee/" + strings.ToLower(address) }

// payee returns the node and route hints of address's last invoice, from
// memory or, after a restart, from ForwarderConfig.Values.
func (f *Forwarder) payee(c context.Context, address string) (kassa.Payee, bool) {
	if p, ok := f.payees.Load(strings.ToLower(address)); ok {
		return p.(kassa.Payee), true
	}
	if f.cfg.Values == nil {
		return kassa.Payee{}, false
	}
	v, ok, err := f.cfg.Values.GetValue(c, payeeKey(address))
	if err != nil || !ok {
		return kassa.Payee{}, false
	}
	var p kassa.Payee
	if json.Unmarshal(v, &p) != nil || p.Node == "" {
		return kassa.Payee{}, false
	}
	f.payees.Store(strings.ToLower(address), p)
	return p, true
}

// rememberPayee keeps p as address's node. It is an estimate's input,
// not a record of money: a failure to store it is only logged.
func (f *Forwarder) rememberPayee(c context.Context, address string, p kassa.Payee) {
	if p.Node == "" {
		return
	}
	f.payees.Store(strings.ToLower(address), p)
	if f.cfg.Values == nil {
		return
	}
	v, _ := json.Marshal(p)
	if err := f.cfg.Values.PutValue(c, payeeKey(address), v, payeeUntil); err != nil {
		f.log.Warn("remember the Lightning address's node", "err", err)
	}
}

// forgetPayee drops what is known of address's node.
func (f *Forwarder) forgetPayee(c context.Context, address string) {
	f.payees.Delete(strings.ToLower(address))
	if f.cfg.Values == nil {
		return
	}
	if err := f.cfg.Values.PutValue(c, payeeKey(address), []byte("{}"), payeeUntil); err != nil {
		f.log.Warn("forget the Lightning address's node", "err", err)
	}
}

// heldRecheck is how often the forward actor of a store without a
// Lightning address looks whether it has one now.
var heldRecheck = time.Minute

// wakeForward makes a forward actor look at its queue and open forward.
// settle, when valid, is the span of the settle that queued a transfer:
// the forward's span continues its trace.
type wakeForward struct{ settle trace.SpanContext }

// forwardActor forwards one store's money. It works one forward at a
// time; its timer wakes it for retries and look-ups.
type forwardActor struct {
	f       *Forwarder
	t       *term
	storeID string
	cancel  func()
	// delay is the wait after a failure before any forward exists (the
	// address cannot be resolved); it is not durable.
	delay time.Duration
	// c is the context of the step under way: the forwarder's, with the
	// step's span.
	c context.Context
}

func (a *forwardActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case wakeForward:
		end := a.traceStep(msg.settle)
		a.step(ctx)
		end()
	case *actor.Stopping, *actor.Restarting:
		a.disarm()
	}
}

func (a *forwardActor) now() time.Time { return a.f.cfg.Clock.Now().UTC() }

// wakeIn arms the timer to wake the actor after d, replacing any other.
func (a *forwardActor) wakeIn(ctx actor.Context, d time.Duration) {
	a.disarm()
	if d < 0 {
		d = 0
	}
	self, root := ctx.Self(), a.f.as.Root
	a.cancel = a.f.cfg.Clock.AfterFunc(d, func() { root.Send(self, wakeForward{}) })
}

func (a *forwardActor) disarm() {
	if a.cancel != nil {
		a.cancel()
		a.cancel = nil
	}
}

// retryLater backs off while no forward can be made.
func (a *forwardActor) retryLater(ctx actor.Context) {
	if a.delay == 0 {
		a.delay = kassa.ForwardRetryMin
	} else {
		a.delay = min(2*a.delay, kassa.ForwardRetryMax)
	}
	a.wakeIn(ctx, a.delay)
}

// step moves the store's forwarding one step on: the open forward first,
// else a new forward from the queue.
func (a *forwardActor) step(ctx actor.Context) {
	c := a.ctx()
	if c.Err() != nil {
		return
	}
	if a.stepPayout(ctx) {
		return
	}
	open, err := a.openForward(c)
	if err != nil {
		a.f.log.Error("read open forwards", "store", a.storeID, "err", err)
		a.retryLater(ctx)
		return
	}
	if open == nil {
		a.start(ctx)
		return
	}
	if open.PaymentHash != "" {
		a.resolve(ctx, open)
		return
	}
	if wait := open.NextTry.Sub(a.now()); wait > 0 {
		a.wakeIn(ctx, wait)
		return
	}
	a.attempt(ctx, open, nil)
}

func (a *forwardActor) openForward(c context.Context) (*kassa.Forward, error) {
	var open *kassa.Forward
	err := a.f.cfg.Store.OpenForwards(c, a.storeID, func(f *kassa.Forward) error {
		if open == nil || f.CreatedAt.Before(open.CreatedAt) {
			open = f
		}
		return nil
	})
	return open, err
}

// start makes a forward of the queued transfers once they reach the
// address's minimum.
func (a *forwardActor) start(ctx actor.Context) {
	c := a.ctx()
	var queued []kassa.QueuedTransfer
	if err := a.f.cfg.Store.QueuedTransfers(c, a.storeID, func(q kassa.QueuedTransfer) error {
		queued = append(queued, q)
		return nil
	}); err != nil {
		a.f.log.Error("read queued transfers", "store", a.storeID, "err", err)
		a.retryLater(ctx)
		return
	}
	if len(queued) == 0 {
		a.delay = 0
		return
	}
	st, err := a.f.cfg.Reader.Store(c, a.storeID)
	if err != nil {
		a.f.log.Error("read store", "store", a.storeID, "err", err)
		a.retryLater(ctx)
		return
	}
	if st.LightningAddress == "" {
		// Held on the service's node until the store sets an address
		// (UpdateStore wakes the actor; the timer covers a cluster,
		// where the update may run on another node).
		a.f.log.Warn("transfers held: the store has no Lightning address", "store", a.storeID, "queued", len(queued))
		a.wakeIn(ctx, heldRecheck)
		return
	}
	pr, err := a.f.cfg.Addresses.PayRequest(c, st.LightningAddress)
	if err != nil {
		a.f.log.Warn("Lightning address unavailable; retrying", "store", a.storeID, "in", a.delay, "err", err)
		a.retryLater(ctx)
		return
	}
	take, total := kassa.PlanForward(queued, pr.MinSendable, pr.MaxSendable)
	if take == nil {
		// Below the address's minimum: wait for more to accumulate.
		a.delay = 0
		return
	}
	now := a.now()
	fw := &kassa.Forward{
		ID: kassa.NewID("fwd_"), StoreID: a.storeID, Status: kassa.ForwardOpen, Address: st.LightningAddress,
		Transfers: take, Amount: total, NextTry: now, CreatedAt: now, UpdatedAt: now,
	}
	// Lines held while the store had no Lightning address are on their
	// way now.
	var held []kassa.Transaction
	for _, q := range take {
		tx, err := a.f.cfg.Reader.Transaction(c, q.TransactionID)
		if err != nil {
			a.f.log.Error("read transfer", "store", a.storeID, "transaction", q.TransactionID, "err", err)
			a.retryLater(ctx)
			return
		}
		if tx.Status == kassa.TransactionHeld {
			tx.Status = kassa.TransactionPending
			held = append(held, *tx)
		}
	}
	if err := a.save(c, fw, held); err != nil {
		a.f.log.Error("record forward", "store", a.storeID, "err", err)
		a.retryLater(ctx)
		return
	}
	a.delay = 0
	a.attempt(ctx, fw, &pr)
}

// attempt requests the merchant's invoice, records it, then pays it.
func (a *forwardActor) attempt(ctx actor.Context, fw *kassa.Forward, pr *kassa.PayRequest) {
	c := a.ctx()
	a.traceForward(fw)
	fail := func(reason string) {
		countForward(a.f.cfg.Metrics, false)
		fw.NoteDelay(reason, a.now())
		if err := a.save(c, fw, nil); err != nil {
			a.f.log.Error("record forward failure", "forward", fw.ID, "err", err)
		}
		a.f.log.Warn("forward not sent; retrying", "forward", fw.ID, "store", a.storeID, "at", fw.NextTry, "reason", reason)
		a.wakeIn(ctx, fw.NextTry.Sub(a.now()))
	}
	st, err := a.f.cfg.Reader.Store(c, a.storeID)
	if err != nil {
		fail("read the store: " + kassa.ErrorMessage(err))
		return
	}
	if st.LightningAddress != "" {
		fw.Address = st.LightningAddress
	}
	if pr == nil {
		p, err := a.f.cfg.Addresses.PayRequest(c, fw.Address)
		if err != nil {
			fail(kassa.ErrorMessage(err))
			return
		}
		pr = &p
	}
	// Above the address's maximum the forward is paid in parts, each
	// its own invoice, recorded before it is paid.
	part := kassa.NextPart(fw.Remaining(), pr.MinSendable, pr.MaxSendable)
	if part <= 0 {
		fail(fmt.Sprintf("%d msat cannot be paid in parts the Lightning address accepts (%d to %d msat)", fw.Remaining(), pr.MinSendable, pr.MaxSendable))
		return
	}
	comment := ""
	for _, q := range fw.Transfers {
		if q.Comment != "" {
			comment = q.Comment
			break
		}
	}
	// The store's fee limit bounds the route accepted; the payment may
	// then spend what that route costs, and no more. The routing fee
	// comes out of the forwarded amount: the invoice asked for is
	// smaller by the fee of the route found.
	limit := st.ForwardFeeLimit(part)
	inv, fee, err := a.invoice(c, fw.Address, *pr, part, limit, comment)
	if err != nil {
		fail(kassa.ErrorMessage(err))
		return
	}
	fw.AttemptPart(inv.PaymentRequest, inv.PaymentHash, part, inv.Amount, fee, a.now())
	// Durable before it is sent: after a crash the hash is tracked, and
	// the invoice paid at most once.
	if err := a.save(c, fw, nil); err != nil {
		a.f.log.Error("record forward attempt; not paying", "forward", fw.ID, "err", err)
		a.retryLater(ctx)
		return
	}
	a.pay(ctx, fw)
}

// invoice asks the Lightning address for the one invoice this attempt
// pays: part less the route fee to the address's node, estimated before
// asking (the node and route hints of the address's last invoice are
// kept, per address). Only when the address's node is not known yet is
// an invoice for part asked for first, to learn it, and not paid: once
// per address (docs/decisions.md, "Forwarding").
// fee is the estimate, the most the payment may spend on routing.
func (a *forwardActor) invoice(c context.Context, address string, pr kassa.PayRequest, part, limit kassa.MSat, comment string) (kassa.AddressInvoice, kassa.MSat, error) {
	var fee kassa.MSat
	payee, known := a.f.payee(c, address)
	if !known {
		probe, err := a.f.cfg.Addresses.Invoice(c, pr, part, comment)
		if err != nil {
			return kassa.AddressInvoice{}, 0, err
		}
		a.f.rememberPayee(c, address, probe.Payee)
		a.f.log.Info("learnt the Lightning address's node from an invoice", "store", a.storeID, "node", probe.Payee.Node)
		if fee, err = a.f.cfg.Payer.EstimateFee(c, probe.Payee, part, limit); err != nil {
			return kassa.AddressInvoice{}, 0, fmt.Errorf("no route to the Lightning address within the fee limit: %s", kassa.ErrorMessage(err))
		}
		if fee == 0 {
			return probe, 0, nil
		}
		payee = probe.Payee
	} else {
		var err error
		if fee, err = a.f.cfg.Payer.EstimateFee(c, payee, part, limit); err != nil {
			// The address's node may have changed: learn it again next
			// time.
			a.f.forgetPayee(c, address)
			return kassa.AddressInvoice{}, 0, fmt.Errorf("no route to the Lightning address within the fee limit: %s", kassa.ErrorMessage(err))
		}
	}
	if part-fee < pr.MinSendable || part-fee <= 0 {
		return kassa.AddressInvoice{}, 0, fmt.Errorf("%d msat less a routing fee of %d msat is below the Lightning address's minimum", part, fee)
	}
	inv, err := a.f.cfg.Addresses.Invoice(c, pr, part-fee, comment)
	if err != nil {
		return kassa.AddressInvoice{}, 0, err
	}
	if !inv.Payee.Equal(payee) {
		// Paid with the fee limit of the route to the node it was
		// estimated for: a dearer route to the new node fails, and the
		// next attempt estimates to the new one.
		a.f.rememberPayee(c, address, inv.Payee)
	}
	return inv, fee, nil
}

// pay sends the recorded attempt and acts on the outcome.
func (a *forwardActor) pay(ctx actor.Context, fw *kassa.Forward) {
	p, ok := a.f.send(a.ctx(), "forward", fw.ID, fw.PaymentRequest, fw.PaymentHash, fw.FeeLimit)
	if !ok {
		a.wakeIn(ctx, a.f.cfg.TrackEvery)
		return
	}
	a.outcome(ctx, fw, p)
}

// resolve learns the outcome of the recorded attempt from the node.
func (a *forwardActor) resolve(ctx actor.Context, fw *kassa.Forward) {
	a.traceForward(fw)
	p, ok := a.f.lookUp(a.ctx(), "forward", fw.ID, fw.PaymentRequest, fw.PaymentHash, fw.FeeLimit)
	if !ok {
		a.wakeIn(ctx, a.f.cfg.TrackEvery)
		return
	}
	a.outcome(ctx, fw, p)
}

func (a *forwardActor) outcome(ctx actor.Context, fw *kassa.Forward, p kassa.LightningPayment) {
	c := a.ctx()
	switch p.Status {
	case kassa.PaymentSucceeded:
		countForward(a.f.cfg.Metrics, true)
		if !fw.PartPaid(p.FeeMSat, a.now()) {
			// A part of a split forward: record it, then pay the next.
			if err := a.save(c, fw, nil); err != nil {
				a.f.log.Error("record forward part", "forward", fw.ID, "err", err)
				a.wakeIn(ctx, a.f.cfg.TrackEvery)
				return
			}
			a.f.log.Info("forward part paid", "forward", fw.ID, "store", a.storeID, "parts", len(fw.Parts),
				"remaining_msat", fw.Remaining())
			ctx.Send(ctx.Self(), wakeForward{})
			return
		}
		if err := a.complete(c, fw); err != nil {
			a.f.log.Error("record forward success", "forward", fw.ID, "err", err)
			a.wakeIn(ctx, a.f.cfg.TrackEvery)
			return
		}
		a.f.log.Info("forward succeeded", "forward", fw.ID, "store", a.storeID, "payment_hash", fw.Hashes(),
			"amount_msat", fw.Amount, "routing_fee_msat", fw.RoutingFee, "transfers", len(fw.Transfers))
		// More may be queued.
		ctx.Send(ctx.Self(), wakeForward{})
	case kassa.PaymentFailed:
		countForward(a.f.cfg.Metrics, false)
		fw.Fail("payment failed: "+p.Failure, a.now())
		if err := a.save(c, fw, nil); err != nil {
			a.f.log.Error("record forward failure", "forward", fw.ID, "err", err)
			a.wakeIn(ctx, a.f.cfg.TrackEvery)
			return
		}
		a.f.log.Warn("forward payment failed; retrying", "forward", fw.ID, "store", a.storeID, "at", fw.NextTry, "reason", p.Failure)
		a.wakeIn(ctx, fw.NextTry.Sub(a.now()))
	default:
		a.wakeIn(ctx, a.f.cfg.TrackEvery)
	}
}

// complete records the success and settles the transfer lines, in one
// batch.
func (a *forwardActor) complete(c context.Context, fw *kassa.Forward) error {
	lines := make([]kassa.Transaction, 0, len(fw.Transfers))
	for _, q := range fw.Transfers {
		tx, err := a.f.cfg.Reader.Transaction(c, q.TransactionID)
		if err != nil {
			return fmt.Errorf("read transfer %d: %w", q.TransactionID, err)
		}
		lines = append(lines, *tx)
	}
	fw.Succeed(a.now())
	return a.save(c, fw, fw.SettledTransfers(lines))
}

// save writes fw, and rewrites lines, in one durable batch.
func (a *forwardActor) save(c context.Context, fw *kassa.Forward, lines []kassa.Transaction) error {
	b := a.f.cfg.Journal.NewBatch()
	fb, ok := b.(kassa.ForwardBatch)
	if !ok {
		return fmt.Errorf("storage %T cannot record forwards", b)
	}
	fb.PutForward(fw)
	for i := range lines {
		fb.RewriteTransaction(&lines[i])
	}
	return a.t.commit(c, b)
}

// readWalletBounds reads the store's walletMinSendable and
// walletMaxSendable from its Lightning address's pay request, when
// forwarding runs; an address that does not answer a valid pay request
// refuses the store.
func (s *Service) readWalletBounds(ctx context.Context, st *kassa.Store) error {
	if s.cfg.Forwarder == nil || st.LightningAddress == "" {
		return nil
	}
	pr, err := s.cfg.Forwarder.cfg.Addresses.PayRequest(ctx, st.LightningAddress)
	if errors.Is(err, kassa.ErrLightningNodeUnreachable) {
		return kassa.ErrLightningNodeUnreachable // lnd's fault, not the address's: 503
	}
	if err != nil {
		return kassa.InvalidFields([]kassa.FieldError{{Field: "lightningAddress", Message: kassa.ErrorMessage(err)}})
	}
	st.WalletMinSendable, st.WalletMaxSendable = pr.MinSendable, pr.MaxSendable
	return nil
}
