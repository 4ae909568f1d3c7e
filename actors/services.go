package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shopspring/decimal"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
	"github.com/kassapay/kassa/protos"
)

var (
	_ kassa.WebhookService        = (*Service)(nil)
	_ kassa.StoreService          = (*Service)(nil)
	_ kassa.InvoiceService        = (*Service)(nil)
	_ kassa.PaymentRequestService = (*Service)(nil)
)

// Service offers the core's commands (kassa's store, invoice, pay-link
// and webhook services) and applies the events of the chain, Lightning
// and expiry. A command orchestrates what lies outside the actors (rates,
// addresses, Lightning invoices, URL checks) and has the store's actor
// decide, through the runtime: each command has one body, which starts by
// sending the command to the node that runs the store when that is
// another one (route, through the cluster), and else runs here.
type Service struct {
	rt      actorRuntime
	cluster router
	cfg     *Config
	tracer  trace.Tracer
	log     *slog.Logger
	// awaitingLightning counts the invoice creates on this node that
	// wait for the Lightning backend's invoice.
	awaitingLightning atomic.Int64
	// creating counts the invoice creates under way on this node, from
	// their valid request to their commit's answer.
	creating atomic.Int64
}

// actorRuntime is what the Service needs of the actor runtime (the
// Runtime): the actors of the stores this node runs, and an invoice's
// events delivered on the node that runs its store.
type actorRuntime interface {
	// askStore sends msg to the actor of store id and waits for its
	// reply; tellStore sends it without waiting.
	askStore(ctx context.Context, storeID string, msg any) (any, error)
	tellStore(storeID string, msg any)
	// askWebhook sends msg to the actor of webhook endpoint id and
	// waits for its reply.
	askWebhook(ctx context.Context, webhookID string, msg any) (any, error)
	// command sends ev to the invoice's actor, on the node that runs
	// its store, and returns the invoice after it.
	command(ctx context.Context, storeID, invoiceID string, ev *protos.InvoiceEvent) (*kassa.Invoice, error)
	// fireDeadline fires the invoice's deadline (FireDeadline).
	fireDeadline(ctx context.Context, storeID, invoiceID string) error
	// invoices are the ports of the invoice actors, through which a
	// create that needs no actor writes (writeNewInvoice).
	invoices() *invoicePorts
}

func newService(rt *Runtime) *Service {
	return &Service{rt: rt, cluster: rt.cluster, cfg: &rt.cfg, tracer: rt.tracer, log: rt.log}
}

// CreatesAwaitingLightning is how many invoice creates on this node wait
// for the Lightning backend's invoice now: their commits follow at the
// backend's pace, and the store paces its syncs by them
// (persistence.DB.PaceSyncs).
func (s *Service) CreatesAwaitingLightning() int { return int(s.awaitingLightning.Load()) }

// CreatesUnderWay is how many invoice creates on this node are under
// way now, awaiting Lightning or not: while many are, their commits come
// often, and the store has its syncs wait briefly for company
// (persistence.DB.PaceSyncs).
func (s *Service) CreatesUnderWay() int { return int(s.creating.Load()) }

// ask sends msg to the actor of store id and waits for its reply.
func (s *Service) ask(ctx context.Context, storeID string, msg any) (any, error) {
	return s.rt.askStore(ctx, storeID, msg)
}

// CreateStore creates a store with one API key.
func (s *Service) CreateStore(ctx context.Context, settings kassa.StoreSettings) (*kassa.Store, error) {
	ctx, span := s.tracer.Start(ctx, "actors.CreateStore")
	defer span.End()
	if err := settings.Validate(); err != nil {
		return nil, err
	}
	if err := s.checkRateProviders(settings.RatePrimary, settings.RateFallback); err != nil {
		return nil, err
	}
	if err := s.checkQuoted(settings.Currency); err != nil {
		return nil, err
	}
	// A chain backend that derives addresses checks the xpub now, so
	// that a store never exists whose invoices can get no address.
	if x, ok := s.cfg.Chain.(interface{ CheckXpub(xpub, typ string) error }); ok && settings.Xpub != "" {
		if err := x.CheckXpub(settings.Xpub, settings.XpubType); err != nil {
			return nil, kassa.InvalidFields([]kassa.FieldError{{Field: "xpub", Message: kassa.ErrorMessage(err)}})
		}
	}
	st := kassa.NewStore(kassa.NewID(""), settings, s.cfg.Clock.Now().UTC())
	if err := s.readWalletBounds(ctx, st); err != nil {
		return nil, err
	}
	return s.createStore(ctx, st)
}

// CreateStoreOnce creates the store with the given id, or returns the
// one already stored under it: callers on several nodes that pick the
// same id at the same moment get one store between them (the dashboard's
// operator store; docs/decisions.md, "Top-ups credited once"). The
// store's actor, or the journal's (stream, seq) key when a cluster briefly
// runs two activations, lets one create win.
func (s *Service) CreateStoreOnce(ctx context.Context, id string, settings kassa.StoreSettings) (*kassa.Store, error) {
	if !kassa.ValidID(id) {
		return nil, kassa.InvalidFields([]kassa.FieldError{{Field: "id", Message: "must be 1 to 64 letters, digits, '-' or '_'"}})
	}
	if err := settings.Validate(); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		st := kassa.NewStore(id, settings, s.cfg.Clock.Now().UTC())
		if err := s.readWalletBounds(ctx, st); err != nil {
			return nil, err
		}
		out, err := s.createStore(ctx, st)
		switch {
		case err == nil:
			return out, nil
		case kassa.ErrorCode(err) == kassa.Conflict:
			return s.cfg.Reader.Store(ctx, id)
		case kassa.ErrorCode(err) == kassa.Unavailable && attempt < 2:
			// Another activation wrote first; its state is reloaded, and
			// asking again answers Conflict if it created the store.
			continue
		default:
			return nil, err
		}
	}
}

// createStore has the actor of the new store st persist it, where the
// store runs.
func (s *Service) createStore(ctx context.Context, st *kassa.Store) (*kassa.Store, error) {
	if out, ok, err := cmdCreateStore.route(ctx, s.cluster, st.ID, func() *protos.CreateStoreCall {
		return &protos.CreateStoreCall{Store: toDoc[*protos.StoreDoc](st)}
	}); ok {
		return out, err
	}
	return onceOnly(ctx, s, st.ID, kassa.RequestStore, s.answerStore, func() (*kassa.Store, error) {
		res, err := s.ask(ctx, st.ID, &createStore{call: callOf(ctx), store: st})
		if err != nil {
			return nil, err
		}
		return res.(*kassa.Store), nil
	})
}

// TopUp credits a store's prepaid balance; a reference the store
// already credited returns that top-up's ledger line and writes nothing.
func (s *Service) TopUp(ctx context.Context, storeID string, amount kassa.Sats, reference string) (*kassa.Transaction, error) {
	if out, ok, err := cmdTopUp.route(ctx, s.cluster, storeID, func() *protos.TopUpCall {
		return &protos.TopUpCall{AmountSat: int64(amount), Reference: reference}
	}); ok {
		return out, err
	}
	ctx, span := s.tracer.Start(ctx, "actors.TopUp")
	defer span.End()
	if amount <= 0 || amount > kassa.MaxSats {
		return nil, kassa.InvalidFields([]kassa.FieldError{{Field: "amount", Message: "must be a positive number of satoshis"}})
	}
	if reference != "" {
		if err := kassa.CheckReference(reference); err != nil {
			return nil, err
		}
	}
	return onceOnly(ctx, s, storeID, kassa.RequestTopUp, s.answerTopUp, func() (*kassa.Transaction, error) {
		return s.topUp(ctx, storeID, amount, reference)
	})
}

// topUp credits the store on this node.
func (s *Service) topUp(ctx context.Context, storeID string, amount kassa.Sats, reference string) (*kassa.Transaction, error) {
	st, err := s.cfg.Reader.Store(ctx, storeID)
	if err != nil {
		return nil, err
	}
	// The line is valued in the store's currency, like every sale, at the
	// rate of the day; without one it is valued at zero rather than at a
	// stale rate, and the balance in satoshis is right either way.
	rate, err := s.rate(ctx, st, st.Currency)
	if err != nil {
		s.log.Warn("no rate for a top-up; its fiat value will be 0", "store", storeID, "err", err)
		rate = decimal.Zero
	}
	res, err := s.ask(ctx, storeID, &topUp{call: callOf(ctx), amount: amount, rate: rate, reference: reference})
	if err != nil {
		return nil, err
	}
	return res.(*kassa.Transaction), nil
}

// checkRateProviders refuses provider names the rates backend does not
// have, so that a store cannot be created that can make no invoice.
func (s *Service) checkRateProviders(names ...string) error {
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

// checkQuoted refuses a fiat currency that no configured rate provider
// quotes: a store or pay link in it could make no invoice.
func (s *Service) checkQuoted(c kassa.Currency) error {
	if s.cfg.Rates == nil || c == "" {
		return nil
	}
	return kassa.CheckQuoted(s.cfg.Rates, "currency", c)
}

// storeRates is what a rates backend offers when it lets a store pick
// its own primary and fallback providers.
type storeRates interface {
	RateWith(ctx context.Context, c kassa.Currency, primary, fallback string) (decimal.Decimal, error)
}

// rate returns the price of one bitcoin in c, from the store's preferred
// providers when it named any.
func (s *Service) rate(ctx context.Context, st *kassa.Store, c kassa.Currency) (decimal.Decimal, error) {
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

// CreateInvoice creates an invoice: it locks the rate, has the store
// actor take it on (credit limit, fee, address index), asks the backends
// for an address and a Lightning invoice, and writes it. An invoice due
// within two minutes, or a pay link session's, is written by its own
// actor, which the store actor spawns; any other is written here, with no
// actor until the sweeper wakes it before its deadline (needsNoActor).
// It answers once the invoice is durable.
func (s *Service) CreateInvoice(ctx context.Context, storeID string, r *kassa.InvoiceRequest) (*kassa.Invoice, error) {
	if out, ok, err := cmdCreateInvoice.route(ctx, s.cluster, storeID, func() *protos.CreateInvoiceCall {
		return &protos.CreateInvoiceCall{Invoice: toDoc[*protos.InvoiceRequestDoc](r)}
	}); ok {
		return out, err
	}
	ctx, span := s.tracer.Start(ctx, "actors.CreateInvoice", trace.WithAttributes(attribute.String("store.id", storeID)))
	defer span.End()
	return onceOnly(ctx, s, storeID, kassa.RequestInvoice, s.answerInvoice, func() (*kassa.Invoice, error) {
		return s.createInvoice(ctx, span, storeID, r, "")
	})
}

// createInvoice creates an invoice; a session key makes it the
// session's invoice of a pay link (PayPaymentRequest).
func (s *Service) createInvoice(ctx context.Context, span trace.Span, storeID string, r *kassa.InvoiceRequest, session string) (*kassa.Invoice, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	s.creating.Add(1)
	defer s.creating.Add(-1)
	st, err := s.cfg.Reader.Store(ctx, storeID)
	if err != nil {
		return nil, err
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
	// The store's actor takes the invoice on before any backend is asked
	// for anything: it alone checks the credit limit, and reserves the
	// fee. The derivation index is store state: it allocates it durably
	// in the same step, so that no address is handed out twice, restarts
	// included.
	fee := kassa.PercentOf(inv.Amount, inv.PercentFee)
	derive := inv.Accepts(kassa.MethodOnchain) && st.Xpub != ""
	res, err := s.ask(ctx, storeID, &openInvoice{call: callOf(ctx), invoiceID: inv.ID, fee: fee, derive: derive})
	if err != nil {
		return nil, err
	}
	if derive {
		index := res.(uint32)
		st.NextAddressIndex, inv.DerivationIndex = index, &index
	}
	out, err := s.placeInvoice(ctx, st, &inv, effects, session)
	if err != nil && derive {
		s.giveBackIndex(ctx, &inv)
	}
	return out, err
}

// placeInvoice gets inv's payment methods and writes it, through its
// actor or, when it needs none, at once.
func (s *Service) placeInvoice(ctx context.Context, st *kassa.Store, inv *kassa.Invoice, effects []kassa.Effect, session string) (*kassa.Invoice, error) {
	if err := s.paymentMethods(ctx, st, inv); err != nil {
		// Not made after all: its fee is no longer reserved.
		s.rt.tellStore(st.ID, &feeReleased{invoiceID: inv.ID})
		return nil, err
	}
	if session == "" && needsNoActor(inv, effects, s.cfg.Clock.Now()) {
		return s.writeNewInvoice(ctx, inv, effects)
	}
	res, err := s.ask(ctx, st.ID, &spawnInvoice{call: callOf(ctx), inv: *inv, effects: effects, session: session})
	if err != nil {
		return nil, err
	}
	return res.(*kassa.Invoice), nil
}

// giveBackIndex returns the derivation index of inv, whose create
// failed, to its store, so that failed creates open no gap in the
// merchant's wallet; but only once the store is seen not to hold inv:
// an invoice written after all (a commit whose answer was lost) keeps
// its address.
func (s *Service) giveBackIndex(ctx context.Context, inv *kassa.Invoice) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := s.cfg.Reader.Invoice(ctx, inv.ID); kassa.ErrorCode(err) != kassa.NotFound {
		return
	}
	s.rt.tellStore(inv.StoreID, &releaseAddress{index: *inv.DerivationIndex})
}

// needsNoActor reports whether a new invoice can be written without an
// actor: its actor would passivate right after the create, as its
// deadline is beyond the sweeper's reach (maybePassivate), and its
// create's effects are only events to emit and the timer its actor would
// not arm. The sweeper wakes it as its deadline nears; a payment or a
// request at once. A pay link session's invoice goes through the store
// actor, which answers a second click with the first one's invoice.
func needsNoActor(inv *kassa.Invoice, effects []kassa.Effect, now time.Time) bool {
	at, ok := inv.Deadline()
	if !ok || !dueLater(at, now) {
		return false
	}
	for _, e := range effects {
		switch e.(type) {
		case kassa.Emit, kassa.ArmTimer:
		default:
			return false
		}
	}
	return true
}

// writeNewInvoice commits a new invoice that needs no actor
// (needsNoActor), as its actor would, and emits its events.
func (s *Service) writeNewInvoice(ctx context.Context, inv *kassa.Invoice, effects []kassa.Effect) (*kassa.Invoice, error) {
	// The actor's context: the caller's deadline, trace and request id,
	// not its cancellation.
	parent, cancel := callOf(ctx).context()
	defer cancel()
	p := s.rt.invoices()
	_, deliveries, err := p.writeNew(parent, inv, effects)
	if err != nil {
		s.rt.tellStore(inv.StoreID, &feeReleased{invoiceID: inv.ID})
		return nil, err
	}
	for _, e := range effects {
		if emit, ok := e.(kassa.Emit); ok {
			p.emit(parent, inv, emit)
		}
	}
	p.outbox.notify(deliveries)
	return inv, nil
}

// paymentMethods asks the backends for the address and the Lightning
// invoice of inv, a new invoice of st, as far as it accepts them.
func (s *Service) paymentMethods(ctx context.Context, st *kassa.Store, inv *kassa.Invoice) error {
	var err error
	if inv.Accepts(kassa.MethodOnchain) {
		if inv.OnchainAddress, err = s.cfg.Chain.NewAddress(ctx, st, inv.ID); err != nil {
			s.log.Error("chain backend: new address", "err", err)
			if kassa.ErrorCode(err) == kassa.Invalid || errors.Is(err, kassa.ErrNoWalletAddress) {
				// The store's settings, or lnd, whose wallet gives the
				// addresses of a store without an xpub: not the chain.
				return err
			}
			return kassa.Errorf(kassa.Unavailable, "the chain backend cannot give an address right now")
		}
	}
	if inv.Accepts(kassa.MethodLightning) {
		memo := st.Name
		if inv.OrderID != "" {
			memo += " order " + inv.OrderID
		}
		// The Lightning invoice lapses with the invoice, whose own
		// expiry may differ from the service's.
		li, err := s.lightningInvoice(ctx, inv.Amount.MSat(), memo, inv.ExpiresAt.Sub(inv.CreatedAt))
		switch {
		case err == nil:
			inv.LightningInvoice, inv.PaymentHash = li.PaymentRequest, li.PaymentHash
		case inv.OnchainAddress != "":
			// Lightning is down: offer the invoice on-chain only.
			s.log.Warn("lightning backend unavailable; invoice offered on-chain only", "invoice", inv.ID, "err", err)
			inv.EnabledMethods = slices.DeleteFunc(slices.Clone(inv.EnabledMethods), func(m kassa.PaymentMethod) bool { return m == kassa.MethodLightning })
		default:
			s.log.Error("lightning backend: create invoice", "err", err)
			return kassa.Errorf(kassa.Unavailable, "the Lightning backend cannot make an invoice right now")
		}
	}
	return nil
}

// lightningInvoice asks the Lightning backend for an invoice, counted in
// CreatesAwaitingLightning while it waits.
func (s *Service) lightningInvoice(ctx context.Context, amount kassa.MSat, memo string, expiry time.Duration) (kassa.LightningInvoice, error) {
	s.awaitingLightning.Add(1)
	defer s.awaitingLightning.Add(-1)
	return s.cfg.Lightning.CreateInvoice(ctx, amount, memo, expiry)
}

// PayPaymentRequest returns the invoice that pays a pay link for one
// customer session: the session's invoice while it is New and
// unexpired, else a new one, so that reloading the page or clicking Pay
// again does not mint an invoice (and an address) per click.
func (s *Service) PayPaymentRequest(ctx context.Context, storeID, id, session string) (*kassa.Invoice, error) {
	if out, ok, err := cmdPayPaymentRequest.route(ctx, s.cluster, storeID, func() *protos.PayPaymentRequestCall {
		return &protos.PayPaymentRequestCall{PaymentRequestId: id, Session: session}
	}); ok {
		return out, err
	}
	ctx, span := s.tracer.Start(ctx, "actors.PayPaymentRequest", trace.WithAttributes(attribute.String("store.id", storeID)))
	defer span.End()
	return onceOnly(ctx, s, storeID, kassa.RequestInvoice, s.answerInvoice, func() (*kassa.Invoice, error) {
		return s.payPaymentRequest(ctx, span, storeID, id, session)
	})
}

// payPaymentRequest is PayPaymentRequest on the store's node.
func (s *Service) payPaymentRequest(ctx context.Context, span trace.Span, storeID, id, session string) (*kassa.Invoice, error) {
	p, err := s.cfg.Reader.PaymentRequest(ctx, id)
	if kassa.ErrorCode(err) == kassa.NotFound || err == nil && p.StoreID != storeID {
		return nil, kassa.Errorf(kassa.NotFound, "payment request not found")
	}
	if err != nil {
		return nil, err
	}
	if status := p.Status(s.cfg.Clock.Now()); status != kassa.PaymentRequestPending {
		return nil, kassa.Errorf(kassa.Conflict, "payment request is %s", status)
	}
	key := ""
	if session != "" {
		key = p.ID + "\x00" + session
		res, err := s.ask(ctx, storeID, &sessionInvoice{call: callOf(ctx), key: key})
		if err != nil {
			return nil, err
		}
		if inv := res.(*kassa.Invoice); inv != nil {
			return inv, nil
		}
	}
	st, err := s.cfg.Reader.Store(ctx, storeID)
	if err != nil {
		return nil, err
	}
	return s.createInvoice(ctx, span, storeID, p.InvoiceRequest(st.Currency), key)
}

// MarkInvoiceInvalid marks an invoice of the store invalid.
func (s *Service) MarkInvoiceInvalid(ctx context.Context, storeID, invoiceID string) (*kassa.Invoice, error) {
	inv, err := s.cfg.Reader.Invoice(ctx, invoiceID)
	if err != nil {
		return nil, err
	}
	if inv.StoreID != storeID {
		return nil, kassa.Errorf(kassa.NotFound, "invoice not found")
	}
	return s.rt.command(ctx, inv.StoreID, invoiceID, eventOf(kassa.MarkedInvalid{At: s.cfg.Clock.Now().UTC()}))
}

// ArchiveInvoice archives an invoice of the store; archiving an archived
// one returns it unchanged.
func (s *Service) ArchiveInvoice(ctx context.Context, storeID, invoiceID string) (*kassa.Invoice, error) {
	inv, err := s.cfg.Reader.Invoice(ctx, invoiceID)
	if err != nil {
		return nil, err
	}
	if inv.StoreID != storeID {
		return nil, kassa.Errorf(kassa.NotFound, "invoice not found")
	}
	if inv.Archived {
		return inv, nil
	}
	out, err := s.rt.command(ctx, inv.StoreID, invoiceID, eventOf(kassa.Archived{At: s.cfg.Clock.Now().UTC()}))
	if errors.Is(err, kassa.ErrNothingChanged) {
		// Archived meanwhile.
		return s.cfg.Reader.Invoice(ctx, invoiceID)
	}
	return out, err
}

// CreatePaymentRequest creates a pay link.
func (s *Service) CreatePaymentRequest(ctx context.Context, storeID string, in *kassa.PaymentRequestInput) (*kassa.PaymentRequest, error) {
	if out, ok, err := cmdCreatePaymentRequest.route(ctx, s.cluster, storeID, func() *protos.CreatePaymentRequestCall {
		return &protos.CreatePaymentRequestCall{Input: toDoc[*protos.PaymentRequestInputDoc](in)}
	}); ok {
		return out, err
	}
	return onceOnly(ctx, s, storeID, kassa.RequestPaymentRequest, s.answerPaymentRequest, func() (*kassa.PaymentRequest, error) {
		return s.savePaymentRequest(ctx, storeID, &savePaymentRequest{call: callOf(ctx), input: in})
	})
}

// UpdatePaymentRequest changes a pay link.
func (s *Service) UpdatePaymentRequest(ctx context.Context, storeID, id string, in *kassa.PaymentRequestInput) (*kassa.PaymentRequest, error) {
	if out, ok, err := cmdUpdatePaymentRequest.route(ctx, s.cluster, storeID, func() *protos.UpdatePaymentRequestCall {
		return &protos.UpdatePaymentRequestCall{PaymentRequestId: id, Input: toDoc[*protos.PaymentRequestInputDoc](in)}
	}); ok {
		return out, err
	}
	return s.savePaymentRequest(ctx, storeID, &savePaymentRequest{call: callOf(ctx), id: id, input: in})
}

// ArchivePaymentRequest archives a pay link: it can no longer be paid.
func (s *Service) ArchivePaymentRequest(ctx context.Context, storeID, id string) error {
	if _, ok, err := cmdArchivePaymentRequest.route(ctx, s.cluster, storeID, func() *protos.ArchivePaymentRequestCall {
		return &protos.ArchivePaymentRequestCall{PaymentRequestId: id}
	}); ok {
		return err
	}
	_, err := s.savePaymentRequest(ctx, storeID, &savePaymentRequest{call: callOf(ctx), id: id, archive: true})
	return err
}

func (s *Service) savePaymentRequest(ctx context.Context, storeID string, msg *savePaymentRequest) (*kassa.PaymentRequest, error) {
	ctx, span := s.tracer.Start(ctx, "actors.SavePaymentRequest")
	defer span.End()
	msg.call = callOf(ctx)
	if msg.input == nil && !msg.archive {
		// The store actor makes the pay link of the input: without
		// one it would panic, and the caller wait for the timeout.
		return nil, kassa.Errorf(kassa.Invalid, "a payment request without its input")
	}
	if msg.input != nil {
		if err := msg.input.Validate(); err != nil {
			return nil, err
		}
		if err := s.checkQuoted(msg.input.Currency); err != nil {
			return nil, err
		}
	}
	if _, err := s.cfg.Reader.Store(ctx, storeID); err != nil {
		return nil, err
	}
	res, err := s.ask(ctx, storeID, msg)
	if err != nil {
		return nil, err
	}
	return res.(*kassa.PaymentRequest), nil
}

// UpdateStore changes a store's settings: those named in only, or every
// one when none is (kassa.Store.Apply). The update is applied to the
// store as its actor holds it, so that a concurrent change of other
// settings is kept. A new xpub is checked, and a new Lightning address
// read, before anything is stored; a new currency is checked in the turn.
func (s *Service) UpdateStore(ctx context.Context, storeID string, u kassa.StoreUpdate, only ...kassa.StoreField) (*kassa.Store, error) {
	if only != nil && len(only) == 0 {
		// Nothing named: nothing changes (on the wire, no fields would
		// mean every one).
		return s.cfg.Reader.Store(ctx, storeID)
	}
	if out, ok, err := cmdUpdateStore.route(ctx, s.cluster, storeID, func() *protos.UpdateStoreCall {
		fields := make([]string, len(only))
		for i, f := range only {
			fields[i] = string(f)
		}
		return &protos.UpdateStoreCall{Update: toDoc[*protos.StoreUpdateDoc](&u), Fields: fields}
	}); ok {
		return out, err
	}
	ctx, span := s.tracer.Start(ctx, "actors.UpdateStore", trace.WithAttributes(attribute.String("store.id", storeID)))
	defer span.End()
	old, err := s.cfg.Reader.Store(ctx, storeID)
	if err != nil {
		return nil, err
	}
	// The xpub check and the Lightning address read take I/O, so they
	// run before the turn, against old; a turn that finds the store's
	// xpub or address no longer old's starts again from its store.
	for range maxStaleUpdates {
		st, stale, err := s.updateStore(ctx, old, u, only)
		if stale != nil {
			old = stale
			continue
		}
		if err != nil {
			return nil, err
		}
		if s.cfg.Forwarder != nil && st.LightningAddress != "" && old.LightningAddress == "" {
			// Money held for want of an address goes out now.
			s.cfg.Forwarder.wake(ctx, st.ID)
		}
		return st, nil
	}
	return nil, kassa.Errorf(kassa.Conflict, "the store's xpub or Lightning address kept changing while this update was checked: try again")
}

// maxStaleUpdates bounds the turns of one UpdateStore that find the
// checks done before them stale.
const maxStaleUpdates = 5

// updateStore checks u applied to old, then applies it in the store
// actor's turn. stale, when not nil, is the store of a turn that found
// the checks made against old do not hold for it: nothing was stored.
func (s *Service) updateStore(ctx context.Context, old *kassa.Store, u kassa.StoreUpdate, only []kassa.StoreField) (st, stale *kassa.Store, err error) {
	next, err := old.Apply(u, only...)
	if err != nil {
		return nil, nil, err
	}
	xpubChanged := next.Xpub != "" && (next.Xpub != old.Xpub || next.XpubType != old.XpubType)
	if x, ok := s.cfg.Chain.(interface{ CheckXpub(xpub, typ string) error }); ok && xpubChanged {
		if err := x.CheckXpub(next.Xpub, next.XpubType); err != nil {
			return nil, nil, kassa.InvalidFields([]kassa.FieldError{{Field: "xpub", Message: kassa.ErrorMessage(err)}})
		}
	}
	if next.LightningAddress != old.LightningAddress {
		// The limits of the new address: a store without one, or without
		// a forwarder to read them, has the defaults (as NewStore).
		next.WalletMinSendable, next.WalletMaxSendable = kassa.DefaultWalletMinSendable, kassa.DefaultWalletMaxSendable
		if err := s.readWalletBounds(ctx, next); err != nil {
			return nil, nil, err
		}
	}
	res, err := s.ask(ctx, old.ID, &changeStore{call: callOf(ctx), change: func(cur *kassa.Store) (*kassa.Store, *protos.StoreEvent, error) {
		if cur.Xpub != old.Xpub || cur.XpubType != old.XpubType || cur.LightningAddress != old.LightningAddress {
			stale = cur
			return nil, nil, errStaleUpdate
		}
		// Applied again to the actor's current state, so that a change
		// racing this one (another setting, an allocated address index)
		// is kept.
		st, err := cur.Apply(u, only...)
		if err != nil {
			return nil, nil, err
		}
		// A currency kept is not checked again: a store whose currency
		// the providers stopped quoting can still change its other
		// settings.
		if st.Currency != cur.Currency {
			if err := s.checkQuoted(st.Currency); err != nil {
				return nil, nil, err
			}
		}
		// The wallet send limits belong to the address stored: kept with
		// the address the store holds (cur's, latest read), else those
		// read above for next's address, which is the one stored.
		if st.LightningAddress != cur.LightningAddress {
			if st.LightningAddress != next.LightningAddress {
				stale = cur
				return nil, nil, errStaleUpdate
			}
			st.WalletMinSendable, st.WalletMaxSendable = next.WalletMinSendable, next.WalletMaxSendable
		}
		doc, err := format.Marshal(st)
		if err != nil {
			return nil, nil, err
		}
		return st, &protos.StoreEvent{Kind: &protos.StoreEvent_SettingsChanged{SettingsChanged: &protos.StoreSettingsChanged{Store: doc}}}, nil
	}})
	if stale != nil {
		return nil, stale, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return res.(*kassa.Store), nil, nil
}

// errStaleUpdate is a store update's turn refusing checks made against
// a store that has changed since (updateStore).
var errStaleUpdate = errors.New("store changed since the update was checked")

// CreateAPIKey adds an API key to a store, holding perms on it; none
// means kassa.DefaultKeyPermissions. An unknown permission is Invalid
// and nothing is stored.
func (s *Service) CreateAPIKey(ctx context.Context, storeID, label string, perms ...kassa.Permission) (*kassa.APIKey, error) {
	if out, ok, err := cmdCreateAPIKey.route(ctx, s.cluster, storeID, func() *protos.CreateAPIKeyCall {
		return &protos.CreateAPIKeyCall{Label: label, Permissions: permissionStrings(perms)}
	}); ok {
		return out, err
	}
	ctx, span := s.tracer.Start(ctx, "actors.CreateAPIKey", trace.WithAttributes(attribute.String("store.id", storeID)))
	defer span.End()
	label = strings.TrimSpace(label)
	if label == "" || len(label) > kassa.MaxAPIKeyLabel {
		return nil, kassa.InvalidFields([]kassa.FieldError{{Field: "label", Message: fmt.Sprintf("is required, at most %d characters", kassa.MaxAPIKeyLabel)}})
	}
	var granted kassa.Permissions
	if len(perms) > 0 {
		var err error
		if granted, err = kassa.ParsePermissions(permissionStrings(perms)); err != nil {
			return nil, err
		}
	}
	return onceOnly(ctx, s, storeID, kassa.RequestAPIKey, s.answerAPIKey(storeID), func() (*kassa.APIKey, error) {
		return s.createAPIKey(ctx, storeID, label, granted)
	})
}

func permissionStrings(ps []kassa.Permission) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return out
}

// createAPIKey adds the key on the store's node.
func (s *Service) createAPIKey(ctx context.Context, storeID, label string, perms kassa.Permissions) (*kassa.APIKey, error) {
	key := kassa.APIKey{ID: kassa.NewID("key_"), Label: label, Key: kassa.NewSecret(), CreatedAt: s.cfg.Clock.Now().UTC(), Permissions: perms}
	record := func(b kassa.Batch) { putRequest(ctx, b, storeID, kassa.RequestAPIKey, key.ID) }
	_, err := s.ask(ctx, storeID, &changeStore{call: callOf(ctx), record: record, change: func(cur *kassa.Store) (*kassa.Store, *protos.StoreEvent, error) {
		if len(cur.APIKeys) >= kassa.MaxAPIKeys {
			return nil, nil, kassa.Errorf(kassa.Conflict, "a store has at most %d API keys: delete one first", kassa.MaxAPIKeys)
		}
		st := *cur
		st.APIKeys = append(slices.Clone(cur.APIKeys), key)
		return &st, &protos.StoreEvent{Kind: &protos.StoreEvent_ApiKeyCreated{ApiKeyCreated: &protos.APIKeyCreated{KeyId: key.ID, Label: label, Permissions: permissionStrings(perms)}}}, nil
	}})
	if err != nil {
		return nil, err
	}
	return &key, nil
}

// DeleteAPIKey removes an API key from a store; the API refuses it from
// the moment this returns (it authenticates against the store's keys).
func (s *Service) DeleteAPIKey(ctx context.Context, storeID, keyID string) error {
	if _, ok, err := cmdDeleteAPIKey.route(ctx, s.cluster, storeID, func() *protos.DeleteAPIKeyCall {
		return &protos.DeleteAPIKeyCall{KeyId: keyID}
	}); ok {
		return err
	}
	ctx, span := s.tracer.Start(ctx, "actors.DeleteAPIKey", trace.WithAttributes(attribute.String("store.id", storeID)))
	defer span.End()
	_, err := s.ask(ctx, storeID, &changeStore{call: callOf(ctx), change: func(cur *kassa.Store) (*kassa.Store, *protos.StoreEvent, error) {
		i := slices.IndexFunc(cur.APIKeys, func(k kassa.APIKey) bool { return k.ID == keyID })
		if i < 0 {
			return nil, nil, kassa.Errorf(kassa.NotFound, "API key not found")
		}
		st := *cur
		st.APIKeys = slices.Delete(slices.Clone(cur.APIKeys), i, i+1)
		return &st, &protos.StoreEvent{Kind: &protos.StoreEvent_ApiKeyDeleted{ApiKeyDeleted: &protos.APIKeyDeleted{KeyId: keyID}}}, nil
	}})
	return err
}

// RevealAPIKey returns a store's key in full and journals that the
// dashboard account by was shown it: the store's history names every
// reveal. A retried call journals a second reveal.
func (s *Service) RevealAPIKey(ctx context.Context, storeID, keyID, by string) (*kassa.APIKey, error) {
	if out, ok, err := cmdRevealAPIKey.route(ctx, s.cluster, storeID, func() *protos.RevealAPIKeyCall {
		return &protos.RevealAPIKeyCall{KeyId: keyID, By: by}
	}); ok {
		return out, err
	}
	ctx, span := s.tracer.Start(ctx, "actors.RevealAPIKey", trace.WithAttributes(attribute.String("store.id", storeID)))
	defer span.End()
	res, err := s.ask(ctx, storeID, &changeStore{call: callOf(ctx), change: func(cur *kassa.Store) (*kassa.Store, *protos.StoreEvent, error) {
		if !slices.ContainsFunc(cur.APIKeys, func(k kassa.APIKey) bool { return k.ID == keyID }) {
			return nil, nil, kassa.Errorf(kassa.NotFound, "API key not found")
		}
		return cur, &protos.StoreEvent{Kind: &protos.StoreEvent_ApiKeyRevealed{ApiKeyRevealed: &protos.APIKeyRevealed{KeyId: keyID, By: by}}}, nil
	}})
	if err != nil {
		return nil, err
	}
	st := res.(*kassa.Store)
	i := slices.IndexFunc(st.APIKeys, func(k kassa.APIKey) bool { return k.ID == keyID })
	key := st.APIKeys[i]
	return &key, nil
}
