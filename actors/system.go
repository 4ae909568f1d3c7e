package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/shopspring/decimal"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/kassapay/kassa"
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
	Events   EventSink // nil: events are only logged
	Clock    kassa.Clock
	Logger   *slog.Logger
	// InvoiceExpiry is how long an invoice waits for its payment.
	InvoiceExpiry time.Duration
	// Monitoring is how long an expired invoice's address is watched.
	Monitoring time.Duration
	// RequestTimeout bounds one request to an actor.
	RequestTimeout time.Duration
}

// System runs the actors and offers the core's services.
type System struct {
	cfg    Config
	as     *actor.ActorSystem
	tracer trace.Tracer
	log    *slog.Logger

	storeProps   *actor.Props
	invoiceProps *actor.Props
	webhookProps *actor.Props
	webhooks     sync.Map // webhook id → *actor.PID
	// recovered is set once Recover has activated the open invoices; a
	// store actor that starts after that re-activates its own.
	recovered atomic.Bool
	// deliveriesRecovered is set once RecoverDeliveries has sent the
	// outbox; a webhook actor that starts after that sends its own.
	deliveriesRecovered atomic.Bool
	stores              sync.Map // store id → *actor.PID
	shutdown            sync.Once
}

var (
	_ kassa.WebhookService        = (*System)(nil)
	_ kassa.StoreService          = (*System)(nil)
	_ kassa.InvoiceService        = (*System)(nil)
	_ kassa.PaymentRequestService = (*System)(nil)
)

// NewSystem starts an actor system. Call Recover once the backends run.
func NewSystem(cfg Config) *System {
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
	quiet := cfg.Logger.With("component", "protoactor")
	s := &System{
		cfg:    cfg,
		as:     actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet })),
		tracer: otel.Tracer("github.com/kassapay/kassa/actors"),
		log:    cfg.Logger,
	}
	// A panicking invoice actor is restarted from storage; its siblings
	// and its store are not touched.
	invoiceSupervisor := actor.NewOneForOneStrategy(10, time.Minute, func(reason any) actor.Directive {
		s.log.Error("invoice actor crashed; restarting it from storage", "reason", fmt.Sprint(reason))
		return actor.RestartDirective
	})
	s.storeProps = actor.PropsFromProducer(func() actor.Actor { return &storeActor{sys: s} },
		actor.WithSupervisor(invoiceSupervisor))
	// One Props for every invoice actor: per-actor memory matters with
	// many open invoices.
	s.invoiceProps = actor.PropsFromProducer(func() actor.Actor { return &invoiceActor{sys: s} })
	s.webhookProps = actor.PropsFromProducer(func() actor.Actor { return &webhookActor{sys: s} })
	return s
}

// Shutdown stops every actor and waits for them (a store actor stops its
// invoice actors first), so that nothing writes to storage afterwards. It
// may be called more than once.
func (s *System) Shutdown() {
	s.shutdown.Do(func() {
		var futures []actor.Future
		for _, m := range []*sync.Map{&s.stores, &s.webhooks} {
			m.Range(func(_, pid any) bool {
				futures = append(futures, s.as.Root.StopFuture(pid.(*actor.PID)))
				return true
			})
		}
		for _, f := range futures {
			_ = f.Wait()
		}
		s.as.Shutdown()
	})
}

// store returns the actor of store id, spawning it when it is not active.
func (s *System) store(id string) *actor.PID {
	if pid, ok := s.stores.Load(id); ok {
		return pid.(*actor.PID)
	}
	pid, err := s.as.Root.SpawnNamed(s.storeProps, "store/"+id)
	if err != nil && !errors.Is(err, actor.ErrNameExists) {
		panic(fmt.Sprintf("spawn store actor %s: %v", id, err))
	}
	actual, _ := s.stores.LoadOrStore(id, pid)
	return actual.(*actor.PID)
}

// request sends msg to pid and waits for its reply.
func (s *System) request(ctx context.Context, pid *actor.PID, msg any) (any, error) {
	timeout := s.cfg.RequestTimeout
	if d, ok := ctx.Deadline(); ok {
		if left := time.Until(d); left < timeout {
			timeout = left
		}
	}
	if timeout <= 0 {
		return nil, kassa.Errorf(kassa.Unavailable, "request timed out")
	}
	res, err := s.as.Root.RequestFuture(pid, msg, timeout).Result()
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

// reply is the answer of an actor to a request.
type reply struct {
	value any
	err   error
}

// Messages handled by store actors. They stay on one node; what crosses
// actors as data (invoice events) is protobuf.
type (
	createStore struct {
		ctx   context.Context
		store *kassa.Store
	}
	spawnInvoice struct {
		ctx     context.Context
		inv     kassa.Invoice
		effects []kassa.Effect
	}
	// invoiceCommand routes an event to an invoice actor, activating it
	// from storage when needed; a nil event only activates it.
	invoiceCommand struct {
		ctx       context.Context
		invoiceID string
		event     *protos.InvoiceEvent
	}
	savePaymentRequest struct {
		ctx     context.Context
		id      string // empty: create
		input   *kassa.PaymentRequestInput
		archive bool
	}
	topUp struct {
		ctx    context.Context
		amount kassa.Sats
	}
	// allocateAddress asks for the next xpub derivation index.
	allocateAddress struct{ ctx context.Context }
)

// CreateStore creates a store with one API key.
func (s *System) CreateStore(ctx context.Context, settings kassa.StoreSettings) (*kassa.Store, error) {
	ctx, span := s.tracer.Start(ctx, "actors.CreateStore")
	defer span.End()
	if err := settings.Validate(); err != nil {
		return nil, err
	}
	if err := s.checkRateProviders(settings.RatePrimary, settings.RateFallback); err != nil {
		return nil, err
	}
	st := kassa.NewStore(kassa.NewID(""), settings, s.cfg.Clock.Now().UTC())
	res, err := s.request(ctx, s.store(st.ID), &createStore{ctx: ctx, store: st})
	if err != nil {
		return nil, err
	}
	return res.(*kassa.Store), nil
}

// TopUp credits a store's prepaid balance.
func (s *System) TopUp(ctx context.Context, storeID string, amount kassa.Sats) (*kassa.Transaction, error) {
	ctx, span := s.tracer.Start(ctx, "actors.TopUp")
	defer span.End()
	if amount <= 0 || amount > kassa.MaxSats {
		return nil, kassa.InvalidFields([]kassa.FieldError{{Field: "amount", Message: "must be a positive number of satoshis"}})
	}
	if _, err := s.cfg.Reader.Store(ctx, storeID); err != nil {
		return nil, err
	}
	res, err := s.request(ctx, s.store(storeID), &topUp{ctx: ctx, amount: amount})
	if err != nil {
		return nil, err
	}
	return res.(*kassa.Transaction), nil
}

// checkRateProviders refuses provider names the rates backend does not
// have, so that a store cannot be created that can make no invoice.
func (s *System) checkRateProviders(names ...string) error {
	lister, ok := s.cfg.Rates.(interface{ Providers() []string })
	if !ok {
		return nil
	}
	known := lister.Providers()
	for _, name := range names {
		if name != "" && !slices.Contains(known, name) {
			return kassa.InvalidFields([]kassa.FieldError{{Field: "ratePrimary", Message: fmt.Sprintf("rate provider %q is not configured (configured: %v)", name, known)}})
		}
	}
	return nil
}

// storeRates is what a rates backend offers when it lets a store pick
// its own primary and fallback providers.
type storeRates interface {
	RateWith(ctx context.Context, c kassa.Currency, primary, fallback string) (decimal.Decimal, error)
}

// rate returns the price of one bitcoin in c, from the store's preferred
// providers when it named any.
func (s *System) rate(ctx context.Context, st *kassa.Store, c kassa.Currency) (decimal.Decimal, error) {
	switch c {
	case kassa.BTC:
		return decimal.NewFromInt(1), nil
	case kassa.SATS:
		return decimal.NewFromInt(kassa.SatsPerBTC), nil
	}
	if r, ok := s.cfg.Rates.(storeRates); ok && st.RatePrimary != "" {
		return r.RateWith(ctx, c, st.RatePrimary, st.RateFallback)
	}
	return s.cfg.Rates.Rate(ctx, c)
}

// CreateInvoice creates an invoice: it locks the rate, asks the backends
// for an address and a Lightning invoice, and has the store actor spawn
// the invoice actor, which answers once the invoice is durable.
func (s *System) CreateInvoice(ctx context.Context, storeID string, r *kassa.InvoiceRequest) (*kassa.Invoice, error) {
	ctx, span := s.tracer.Start(ctx, "actors.CreateInvoice", trace.WithAttributes(attribute.String("store.id", storeID)))
	defer span.End()
	if err := r.Validate(); err != nil {
		return nil, err
	}
	st, err := s.cfg.Reader.Store(ctx, storeID)
	if err != nil {
		return nil, err
	}
	balance, err := s.cfg.Reader.Balance(ctx, storeID)
	if err != nil {
		return nil, err
	}
	if balance < -st.CreditLimit {
		return nil, kassa.Errorf(kassa.PaymentRequired,
			"the store's prepaid balance is %d sat, beyond its credit limit of %d sat: top it up in the dashboard to create invoices", balance, st.CreditLimit)
	}
	requestRate, err := s.rate(ctx, st, r.Currency)
	if err != nil {
		return nil, err
	}
	storeRate := requestRate
	if st.Currency != r.Currency {
		if storeRate, err = s.rate(ctx, st, st.Currency); err != nil {
			if r.Currency.IsFiat() {
				return nil, err
			}
			// A BTC or SATS invoice asks for an exact amount and never
			// depends on a rate source; without a fresh rate its fiat
			// values are recorded as zero rather than at a stale rate.
			s.log.Warn("no store rate for a bitcoin-denominated invoice; fiat values will be 0", "store", storeID, "err", err)
			storeRate = decimal.Zero
		}
	}
	inv, effects, err := kassa.NewInvoice(kassa.NewID(""), st, r, kassa.InvoiceTerms{
		RequestRate: requestRate, StoreRate: storeRate, Now: s.cfg.Clock.Now(),
		Expiry: s.cfg.InvoiceExpiry, Monitoring: s.cfg.Monitoring,
	})
	if err != nil {
		return nil, err
	}
	span.SetAttributes(attribute.String("invoice.id", inv.ID))
	if inv.Accepts(kassa.MethodOnchain) {
		if st.Xpub != "" {
			// The derivation index is store state: allocate it durably
			// so that no address is handed out twice, restarts included.
			res, err := s.request(ctx, s.store(storeID), &allocateAddress{ctx: ctx})
			if err != nil {
				return nil, err
			}
			st.NextAddressIndex = res.(uint32)
		}
		if inv.OnchainAddress, err = s.cfg.Chain.NewAddress(ctx, st, inv.ID); err != nil {
			s.log.Error("chain backend: new address", "err", err)
			return nil, kassa.Errorf(kassa.Unavailable, "the chain backend cannot give an address right now")
		}
	}
	if inv.Accepts(kassa.MethodLightning) {
		memo := st.Name
		if inv.OrderID != "" {
			memo += " order " + inv.OrderID
		}
		li, err := s.cfg.Lightning.CreateInvoice(ctx, inv.Amount.MSat(), memo, s.cfg.InvoiceExpiry)
		if err != nil {
			s.log.Error("lightning backend: create invoice", "err", err)
			return nil, kassa.Errorf(kassa.Unavailable, "the Lightning backend cannot make an invoice right now")
		}
		inv.LightningInvoice, inv.PaymentHash = li.PaymentRequest, li.PaymentHash
	}
	res, err := s.request(ctx, s.store(storeID), &spawnInvoice{ctx: ctx, inv: inv, effects: effects})
	if err != nil {
		return nil, err
	}
	return res.(*kassa.Invoice), nil
}

// MarkInvoiceInvalid marks an invoice of the store invalid.
func (s *System) MarkInvoiceInvalid(ctx context.Context, storeID, invoiceID string) (*kassa.Invoice, error) {
	inv, err := s.cfg.Reader.Invoice(ctx, invoiceID)
	if err != nil {
		return nil, err
	}
	if inv.StoreID != storeID {
		return nil, kassa.Errorf(kassa.NotFound, "invoice not found")
	}
	return s.command(ctx, inv.StoreID, invoiceID, eventOf(kassa.MarkedInvalid{At: s.cfg.Clock.Now().UTC()}))
}

// command sends an event to an invoice actor and returns the invoice
// after it.
func (s *System) command(ctx context.Context, storeID, invoiceID string, ev *protos.InvoiceEvent) (*kassa.Invoice, error) {
	res, err := s.request(ctx, s.store(storeID), &invoiceCommand{ctx: ctx, invoiceID: invoiceID, event: ev})
	if err != nil {
		return nil, err
	}
	return res.(*kassa.Invoice), nil
}

// commandByInvoice looks up the store of an invoice and sends it ev.
func (s *System) commandByInvoice(ctx context.Context, invoiceID string, ev *protos.InvoiceEvent) (*kassa.Invoice, error) {
	inv, err := s.cfg.Reader.Invoice(ctx, invoiceID)
	if err != nil {
		return nil, err
	}
	return s.command(ctx, inv.StoreID, invoiceID, ev)
}

// HandleChainEvent applies what the chain watcher saw to the invoice that
// owns the address. Outputs to addresses of no invoice are ignored. It
// returns nil only once the effect is durable (or there is none, such as
// an input seen twice), so the watcher may acknowledge the event; on an
// error the watcher must deliver it again later.
func (s *System) HandleChainEvent(ctx context.Context, ev kassa.ChainEvent) error {
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
		in = kassa.PaymentDropped{PaymentID: ev.Payment.ID, At: now}
	}
	if _, err := s.commandByInvoice(ctx, id, eventOf(in)); err != nil && !ignorable(err) {
		s.log.Error("chain event not recorded", "invoice", id, "txid", ev.Payment.TxID, "err", err)
		return fmt.Errorf("chain event for invoice %s: %w", id, err)
	}
	return nil
}

// HandleLightningEvent applies a settled Lightning invoice. Like
// HandleChainEvent it returns nil only once the settle is durable.
func (s *System) HandleLightningEvent(ctx context.Context, ev kassa.LightningEvent) error {
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
	in := kassa.LightningPaid{PaymentHash: ev.PaymentHash, AmountMSat: ev.AmountMSat, At: at.UTC()}
	if _, err := s.commandByInvoice(ctx, id, eventOf(in)); err != nil && !ignorable(err) {
		s.log.Error("lightning event not recorded", "invoice", id, "err", err)
		return fmt.Errorf("lightning event for invoice %s: %w", id, err)
	}
	return nil
}

// ignorable reports errors that only say an input came too late or twice.
func ignorable(err error) bool {
	return errors.Is(err, kassa.ErrNothingChanged) || errors.Is(err, kassa.ErrInvoiceNotOpen)
}

// Recover activates every invoice that waits for a timer, so that each
// re-arms it with the time left; those already due fire at once.
func (s *System) Recover(ctx context.Context) (int, error) {
	n := 0
	err := s.cfg.Reader.OpenInvoices(ctx, func(id, storeID string, _ time.Time) error {
		s.as.Root.Send(s.store(storeID), &invoiceCommand{ctx: context.Background(), invoiceID: id})
		n++
		return nil
	})
	if err == nil {
		s.recovered.Store(true)
	}
	return n, err
}

// sweepAhead is how far ahead of its deadline the sweeper wakes a
// passivated invoice; sweepEvery is how often it looks.
const (
	sweepAhead = 2 * time.Minute
	sweepEvery = time.Minute
)

// errSweepDone stops the sweeper's scan at the first later deadline.
var errSweepDone = errors.New("sweep done")

// Sweep wakes the invoices whose deadline is within sweepAhead, so that
// passivated ones (waiting a day for the end of monitoring) arm their
// timers in time. Active invoices ignore the wake-up.
func (s *System) Sweep(ctx context.Context) error {
	until := s.cfg.Clock.Now().Add(sweepAhead)
	err := s.cfg.Reader.OpenInvoices(ctx, func(id, storeID string, deadline time.Time) error {
		if deadline.After(until) {
			return errSweepDone
		}
		s.as.Root.Send(s.store(storeID), &invoiceCommand{ctx: context.Background(), invoiceID: id})
		return nil
	})
	if errors.Is(err, errSweepDone) {
		return nil
	}
	return err
}

// RunSweeper sweeps every sweepEvery until ctx ends.
func (s *System) RunSweeper(ctx context.Context) {
	var tick func()
	tick = func() {
		if ctx.Err() != nil {
			return
		}
		if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("sweep open invoices", "err", err)
		}
		s.cfg.Clock.AfterFunc(sweepEvery, tick)
	}
	s.cfg.Clock.AfterFunc(sweepEvery, tick)
}

// activateOpenInvoices re-activates a store's invoices that wait for a
// timer. A store actor that restarts after a panic has lost its invoice
// actors, and with them their timers.
func (s *System) activateOpenInvoices(ctx actor.Context, storeID string) {
	err := s.cfg.Reader.OpenInvoices(context.Background(), func(id, owner string, _ time.Time) error {
		if owner == storeID {
			ctx.Send(ctx.Self(), &invoiceCommand{ctx: context.Background(), invoiceID: id})
		}
		return nil
	})
	if err != nil {
		s.log.Error("re-activate open invoices", "store", storeID, "err", err)
	}
}

// CreatePaymentRequest creates a pay link.
func (s *System) CreatePaymentRequest(ctx context.Context, storeID string, in *kassa.PaymentRequestInput) (*kassa.PaymentRequest, error) {
	return s.savePaymentRequest(ctx, storeID, &savePaymentRequest{ctx: ctx, input: in})
}

// UpdatePaymentRequest changes a pay link.
func (s *System) UpdatePaymentRequest(ctx context.Context, storeID, id string, in *kassa.PaymentRequestInput) (*kassa.PaymentRequest, error) {
	return s.savePaymentRequest(ctx, storeID, &savePaymentRequest{ctx: ctx, id: id, input: in})
}

// ArchivePaymentRequest archives a pay link: it can no longer be paid.
func (s *System) ArchivePaymentRequest(ctx context.Context, storeID, id string) error {
	_, err := s.savePaymentRequest(ctx, storeID, &savePaymentRequest{ctx: ctx, id: id, archive: true})
	return err
}

func (s *System) savePaymentRequest(ctx context.Context, storeID string, msg *savePaymentRequest) (*kassa.PaymentRequest, error) {
	ctx, span := s.tracer.Start(ctx, "actors.SavePaymentRequest")
	defer span.End()
	msg.ctx = ctx
	if msg.input != nil {
		if err := msg.input.Validate(); err != nil {
			return nil, err
		}
	}
	if _, err := s.cfg.Reader.Store(ctx, storeID); err != nil {
		return nil, err
	}
	res, err := s.request(ctx, s.store(storeID), msg)
	if err != nil {
		return nil, err
	}
	return res.(*kassa.PaymentRequest), nil
}
