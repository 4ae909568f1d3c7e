package rates

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// Defaults of Config.
const (
	DefaultRefresh = 30 * time.Second
	DefaultMaxAge  = 10 * time.Minute
	DefaultTimeout = 5 * time.Second
)

// Config configures a Service. Zero fields take their defaults.
type Config struct {
	// Providers are the sources of rates, each with a distinct name.
	Providers []Provider
	// Primary and Fallback optionally name providers: Rate then answers
	// the primary's fresh rate, else the fallback's, instead of the median
	// of all. Rate answers an Invalid error when they name no provider.
	Primary, Fallback string
	// Refresh is the time between the end of one refresh round and the
	// start of the next (DefaultRefresh).
	Refresh time.Duration
	// MaxAge is the age beyond which a quote is no longer used
	// (DefaultMaxAge).
	MaxAge time.Duration
	// Timeout bounds each provider's fetch in a round (DefaultTimeout).
	Timeout time.Duration
	// MaxDeviation is how far from the median, as a fraction of it, a
	// quote may lie and still count (DefaultMaxDeviation, 0.10).
	MaxDeviation decimal.Decimal
	// Clock tells the age of quotes and times the rounds
	// (kassa.SystemClock).
	Clock kassa.Clock
	// Logger receives provider failures (slog.Default()).
	Logger *slog.Logger
}

// Service is a kassa.Rates that keeps the price of bitcoin in every fiat
// currency from several providers, refreshed in the background by Run.
// Rate and Entries only read that cache: they never wait for a provider.
type Service struct {
	providers    []Provider
	primary      string
	fallback     string
	refresh      time.Duration
	maxAge       time.Duration
	timeout      time.Duration
	maxDeviation decimal.Decimal
	clock        kassa.Clock
	log          *slog.Logger

	// currencies are the fiat currencies served: the ISO 4217 ones that
	// at least one provider quotes, sorted.
	currencies []kassa.Currency

	mu    sync.RWMutex
	state map[string]*providerState // by provider name

	// afterRound, when set (by tests), is called by Run after each round
	// once the next round's timer is armed.
	afterRound func()
}

// providerState is what the service knows of one provider.
type providerState struct {
	pairs map[kassa.Currency]*pairState
	// quotes are the served currencies the provider quotes; a failure
	// of the provider is one of these pairs only.
	quotes map[kassa.Currency]bool
	// retryAt is when the provider may be asked again after it answered
	// 429 or 503 with Retry-After.
	retryAt time.Time
	// failing says that the last round failed, so that a recovery is
	// logged.
	failing bool
}

// pairState is what the service knows of one provider's price in one
// currency.
type pairState struct {
	rate decimal.Decimal
	at   time.Time // when rate was fetched; zero when never
	// err says why the last round brought no rate, "" when it did.
	err string
	// unquoted says that the provider answered without this currency: it
	// does not quote it.
	unquoted bool
}

var _ kassa.Rates = (*Service)(nil)

// New returns a Service over cfg.Providers. Call Run to fill its cache.
func New(cfg Config) *Service {
	s := &Service{
		providers:    slices.Clone(cfg.Providers),
		primary:      strings.ToLower(cfg.Primary),
		fallback:     strings.ToLower(cfg.Fallback),
		refresh:      orDefault(cfg.Refresh, DefaultRefresh),
		maxAge:       orDefault(cfg.MaxAge, DefaultMaxAge),
		timeout:      orDefault(cfg.Timeout, DefaultTimeout),
		maxDeviation: cfg.MaxDeviation,
		clock:        cfg.Clock,
		log:          cfg.Logger,
		state:        map[string]*providerState{},
	}
	if !s.maxDeviation.IsPositive() {
		s.maxDeviation = DefaultMaxDeviation
	}
	if s.clock == nil {
		s.clock = kassa.SystemClock{}
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	var quoted []kassa.Currency
	for _, p := range s.providers {
		quoted = append(quoted, p.Quotes()...)
	}
	s.currencies = servedOf(quoted)
	for _, p := range s.providers {
		st := &providerState{pairs: map[kassa.Currency]*pairState{}, quotes: map[kassa.Currency]bool{}}
		for _, c := range s.currencies {
			st.pairs[c] = &pairState{}
		}
		for _, c := range p.Quotes() {
			st.quotes[c] = true
		}
		s.state[p.Name()] = st
	}
	return s
}

// servedOf returns the ISO 4217 fiat currencies of quoted, each once,
// sorted by code.
func servedOf(quoted []kassa.Currency) []kassa.Currency {
	var out []kassa.Currency
	for _, c := range quoted {
		if c.IsFiat() && c.IsKnown() {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Currencies lists the fiat currencies served: the ISO 4217 currencies
// that at least one provider quotes, sorted by code.
func (s *Service) Currencies() []kassa.Currency { return slices.Clone(s.currencies) }

// orDefault returns d, or def when d is not positive.
func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Providers returns the names of the service's providers, in order.
func (s *Service) Providers() []string {
	names := make([]string, len(s.providers))
	for i, p := range s.providers {
		names[i] = p.Name()
	}
	return names
}

// Source names where rates come from, such as "median of kraken,
// coinbase, bitstamp" or "kraken, falling back to coinbase".
func (s *Service) Source() string {
	if s.primary != "" {
		if s.fallback != "" && s.fallback != s.primary {
			return s.primary + ", falling back to " + s.fallback
		}
		return s.primary
	}
	names := s.Providers()
	if len(names) == 0 {
		return "no rate providers"
	}
	if len(names) == 1 {
		return names[0]
	}
	return "median of " + strings.Join(names, ", ")
}

// Run refreshes the rates until ctx ends: a first round at once, then a
// round every Refresh after the previous one ended. It blocks; start it
// in its own goroutine.
func (s *Service) Run(ctx context.Context) {
	s.log.Info("exchange rates refreshing", "source", s.Source(), "every", s.refresh, "max_age", s.maxAge)
	for ctx.Err() == nil {
		s.Refresh(ctx)
		next := make(chan struct{})
		cancel := s.clock.AfterFunc(s.refresh, func() { close(next) })
		if s.afterRound != nil {
			s.afterRound()
		}
		select {
		case <-ctx.Done():
			cancel()
			return
		case <-next:
		}
	}
}

// Refresh runs one round: it asks every provider for every fiat currency
// concurrently, each under its own Timeout, and stores what they answer.
// A provider that asked to be left alone (Retry-After) is skipped until
// then. Each failure is logged once; the returned error joins them, each
// prefixed with its provider's name. Answers that arrive after ctx ended
// are dropped.
func (s *Service) Refresh(ctx context.Context) error {
	now := s.clock.Now()
	errs := make([]error, len(s.providers))
	var wg sync.WaitGroup
	for i, p := range s.providers {
		s.mu.RLock()
		skip := now.Before(s.state[p.Name()].retryAt)
		s.mu.RUnlock()
		if skip {
			continue
		}
		wg.Go(func() {
			fctx, cancel := context.WithTimeout(ctx, s.timeout)
			defer cancel()
			got, err := p.Fetch(fctx, s.currencies)
			if ctx.Err() != nil {
				// Shutting down: the provider did not fail.
				return
			}
			s.record(p.Name(), got, err)
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", p.Name(), err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// record stores one provider's answer of a round.
func (s *Service) record(name string, got map[kassa.Currency]decimal.Decimal, err error) {
	now := s.clock.Now()
	var reason string
	if err != nil {
		reason = oneLine(err.Error())
	}
	var pairErrs PairErrors
	partial := errors.As(err, &pairErrs)
	s.mu.Lock()
	st := s.state[name]
	for c, pair := range st.pairs {
		switch rate, ok := got[c]; {
		case ok && rate.IsPositive():
			*pair = pairState{rate: rate, at: now}
		case partial && pairErrs[c] != nil:
			pair.err, pair.unquoted = oneLine(pairErrs[c].Error()), false
		case partial || err == nil || !st.quotes[c]:
			pair.err, pair.unquoted = "", true
		default:
			pair.err, pair.unquoted = reason, false
		}
	}
	var herr *HTTPError
	if errors.As(err, &herr) && herr.RetryAfter > 0 {
		st.retryAt = now.Add(herr.RetryAfter)
	}
	wasFailing := st.failing
	st.failing = err != nil
	s.mu.Unlock()

	switch {
	case err != nil:
		s.log.Warn("exchange rate provider failed", "provider", name, "error", reason)
	case wasFailing:
		s.log.Info("exchange rate provider recovered", "provider", name)
	}
}

// oneLine joins the lines of a message (errors.Join separates with
// newlines).
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

// Rate returns the price of one bitcoin in c: by default the median of
// the providers' fresh quotes without outliers (see the package doc); the
// primary's, else the fallback's, when Config named them. BTC is 1 and
// SATS 100 000 000, always. With no fresh rate it answers an Unavailable
// error that names c and why each provider failed.
func (s *Service) Rate(ctx context.Context, c kassa.Currency) (decimal.Decimal, error) {
	return s.RateWith(ctx, c, s.primary, s.fallback)
}

// RateWith is Rate with a store's own choice of providers: primary's
// fresh rate, else fallback's; with primary empty, the median of all.
// Fallback may be empty. A name that is no provider of s gives an Invalid
// error.
func (s *Service) RateWith(ctx context.Context, c kassa.Currency, primary, fallback string) (decimal.Decimal, error) {
	if rate, ok, err := exactRate(s, c); ok || err != nil {
		return rate, err
	}
	p, err := s.pick(c, strings.ToLower(primary), strings.ToLower(fallback))
	if err != nil {
		return decimal.Zero, err
	}
	if !p.ok {
		return decimal.Zero, kassa.Errorf(kassa.Unavailable, "no fresh exchange rate for %s: %s", c, p.reason)
	}
	return p.rate, nil
}

// Entries returns, per fiat currency, the rate that Rate answers (zero
// when none) and what went wrong with its providers: failures of their
// last round, stale quotes and outliers.
func (s *Service) Entries(ctx context.Context) []kassa.RateEntry {
	entries := make([]kassa.RateEntry, 0, len(s.currencies))
	for _, c := range s.currencies {
		e := kassa.RateEntry{Currency: c, Errors: []string{}}
		p, err := s.pick(c, s.primary, s.fallback)
		switch {
		case err != nil:
			e.Errors = append(e.Errors, kassa.ErrorMessage(err))
		default:
			e.Rate = p.rate
			e.Errors = append(e.Errors, p.notes...)
			if !p.ok && p.disagree {
				e.Errors = append(e.Errors, p.reason)
			}
		}
		entries = append(entries, e)
	}
	return entries
}

// picked is the rate chosen for one currency and what is known of its
// providers.
type picked struct {
	rate decimal.Decimal
	ok   bool
	// notes say, per provider, what went wrong ("kraken: HTTP 429 …").
	notes []string
	// reason says why there is no rate, for the Unavailable error.
	reason   string
	disagree bool
}

// pick chooses the rate of fiat currency c under the lock: the median
// rule when primary is empty, else primary then fallback.
func (s *Service) pick(c kassa.Currency, primary, fallback string) (picked, error) {
	for _, name := range []string{primary, fallback} {
		if name != "" && s.state[name] == nil {
			return picked{}, kassa.Errorf(kassa.Invalid, "unknown rate provider %q: this service has %s", name, strings.Join(s.Providers(), ", "))
		}
	}
	now := s.clock.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if primary != "" {
		return s.pickPreferred(c, now, primary, fallback), nil
	}
	return s.pickMedian(c, now), nil
}

// pickMedian combines the fresh quotes of every provider.
func (s *Service) pickMedian(c kassa.Currency, now time.Time) picked {
	var p picked
	var quotes []namedQuote
	var failures []string
	for _, prov := range s.providers {
		name := prov.Name()
		pair := s.state[name].pairs[c]
		fresh, note := s.describe(c, pair, now)
		if fresh {
			quotes = append(quotes, namedQuote{provider: name, rate: pair.rate})
		} else {
			failures = append(failures, name+": "+note)
		}
		// A provider that never quoted c has no error to report while
		// others give the rate.
		if note != "" && !(pair.unquoted && pair.at.IsZero()) {
			p.notes = append(p.notes, name+": "+note)
		}
	}
	comb := combine(quotes, s.maxDeviation)
	for _, q := range comb.outliers {
		p.notes = append(p.notes, fmt.Sprintf("%s: rate %s is more than %s from the median %s, ignored",
			q.provider, q.rate, percent(s.maxDeviation), comb.median))
	}
	p.rate, p.ok = comb.rate, comb.ok
	switch {
	case comb.disagree:
		p.disagree = true
		p.reason = "sources disagree by more than " + percent(s.maxDeviation) + " (" + describeQuotes(quotes) + ")"
		if len(failures) > 0 {
			p.reason += "; " + strings.Join(failures, "; ")
		}
	case !p.ok && len(failures) == 0:
		p.reason = "no rate providers"
	case !p.ok:
		p.reason = strings.Join(failures, "; ")
	}
	return p
}

// pickPreferred takes primary's fresh rate, else fallback's.
func (s *Service) pickPreferred(c kassa.Currency, now time.Time, primary, fallback string) picked {
	names := []string{primary}
	if fallback != "" && fallback != primary {
		names = append(names, fallback)
	}
	var p picked
	var failures []string
	for _, name := range names {
		pair := s.state[name].pairs[c]
		fresh, note := s.describe(c, pair, now)
		if note != "" {
			p.notes = append(p.notes, name+": "+note)
		}
		switch {
		case !fresh:
			failures = append(failures, name+": "+note)
		case !p.ok:
			p.rate, p.ok = pair.rate, true
		}
	}
	if !p.ok {
		p.reason = strings.Join(failures, "; ")
	}
	return p
}

// describe says whether pair has a fresh rate and, if anything went
// wrong, what: the last round's error, that the rate is stale, or that
// there never was one.
func (s *Service) describe(c kassa.Currency, pair *pairState, now time.Time) (fresh bool, note string) {
	fresh = !pair.at.IsZero() && now.Sub(pair.at) <= s.maxAge
	stale := ""
	if !pair.at.IsZero() && !fresh {
		stale = fmt.Sprintf("last rate is %s old, more than %s", now.Sub(pair.at).Round(time.Second), s.maxAge)
	}
	switch {
	case pair.err != "" && stale != "":
		return false, pair.err + " (" + stale + ")"
	case pair.err != "":
		return fresh, pair.err
	case stale != "":
		return false, stale
	case pair.unquoted && !fresh:
		return false, "does not quote " + string(c)
	case pair.at.IsZero():
		return false, "no rate yet"
	}
	return fresh, ""
}

// exactRate answers for the currencies that need no provider: BTC and
// SATS. ok is false for a served fiat currency; err is set for any
// other: an Invalid error that says where the served list is.
func exactRate(r kassa.Rates, c kassa.Currency) (rate decimal.Decimal, ok bool, err error) {
	switch c {
	case kassa.BTC:
		return decimal.NewFromInt(1), true, nil
	case kassa.SATS:
		return decimal.NewFromInt(kassa.SatsPerBTC), true, nil
	}
	if !c.IsKnown() {
		return decimal.Zero, false, kassa.InvalidFields([]kassa.FieldError{{Field: "currency", Message: fmt.Sprintf("unknown currency %q", c)}})
	}
	if err := kassa.CheckQuoted(r, "currency", c); err != nil {
		return decimal.Zero, false, err
	}
	return decimal.Zero, false, nil
}
