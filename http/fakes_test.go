package http

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shopspring/decimal"
	"go.opentelemetry.io/otel/trace"

	"github.com/kassapay/kassa"
)

// Compile-time checks that the fakes implement what the handler consumes.
var (
	_ kassa.Reader                = (*fakeReader)(nil)
	_ kassa.InvoiceService        = (*fakeInvoices)(nil)
	_ kassa.PaymentRequestService = (*fakePayLinks)(nil)
	_ kassa.StoreService          = (*fakeStores)(nil)
	_ kassa.Rates                 = (*fakeRates)(nil)
	_ kassa.Simulator             = (*fakeSimulator)(nil)
	_ kassa.KeyValue              = (*fakeKV)(nil)
	_ kassa.WebhookService        = (*fakeWebhooks)(nil)
)

// fakeReader is an in-memory kassa.Reader. Lists are newest first by
// creation time, then by id; a cursor is the id of the last item given.
type fakeReader struct {
	mu           sync.Mutex
	stores       map[string]*kassa.Store
	balances     map[string]kassa.Sats
	invoices     map[string]*kassa.Invoice
	transactions []kassa.Transaction
	payLinks     map[string]*kassa.PaymentRequest
	webhooks     map[string]*kassa.Webhook
	deliveries   map[string]*kassa.Delivery

	// failList makes Invoices, Transactions and Deliveries fail after
	// that many items (-1: never).
	failList int
	// storeErr, when set, is what StoreByAPIKey returns.
	storeErr error
}

func newFakeReader() *fakeReader {
	return &fakeReader{
		stores:     map[string]*kassa.Store{},
		balances:   map[string]kassa.Sats{},
		invoices:   map[string]*kassa.Invoice{},
		payLinks:   map[string]*kassa.PaymentRequest{},
		webhooks:   map[string]*kassa.Webhook{},
		deliveries: map[string]*kassa.Delivery{},
		failList:   -1,
	}
}

func notFound(what string) error { return kassa.Errorf(kassa.NotFound, "%s not found", what) }

func (f *fakeReader) putStore(st *kassa.Store) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stores[st.ID] = st
}

func (f *fakeReader) putInvoice(inv kassa.Invoice) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.invoices[inv.ID] = &inv
}

func (f *fakeReader) putTransaction(t kassa.Transaction) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	t.ID = int64(len(f.transactions) + 1)
	f.transactions = append(f.transactions, t)
	f.balances[t.StoreID] += t.BalanceDelta()
	return t.ID
}

func (f *fakeReader) putPayLink(p kassa.PaymentRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.payLinks[p.ID] = &p
}

func (f *fakeReader) Store(_ context.Context, id string) (*kassa.Store, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.stores[id]; ok {
		return st, nil
	}
	return nil, notFound("store")
}

func (f *fakeReader) StoreByAPIKey(_ context.Context, key string) (*kassa.Store, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.storeErr != nil {
		return nil, f.storeErr
	}
	for _, st := range f.stores {
		for _, k := range st.APIKeys {
			if k.Key == key {
				return st, nil
			}
		}
	}
	return nil, notFound("store")
}

func (f *fakeReader) Stores(_ context.Context, fn func(*kassa.Store) error) error {
	f.mu.Lock()
	stores := make([]*kassa.Store, 0, len(f.stores))
	for _, st := range f.stores {
		stores = append(stores, st)
	}
	f.mu.Unlock()
	for _, st := range stores {
		if err := fn(st); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeReader) Balance(_ context.Context, storeID string) (kassa.Sats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.balances[storeID], nil
}

func (f *fakeReader) Invoice(_ context.Context, id string) (*kassa.Invoice, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if inv, ok := f.invoices[id]; ok {
		c := *inv
		return &c, nil
	}
	return nil, notFound("invoice")
}

func (f *fakeReader) InvoiceIDByAddress(context.Context, string) (string, error) {
	return "", notFound("invoice")
}

func (f *fakeReader) InvoiceIDByPaymentHash(context.Context, string) (string, error) {
	return "", notFound("invoice")
}

// page applies q to items sorted newest first and calls fn for each.
func page[T any](items []T, q kassa.ListQuery, failAfter int, created func(T) time.Time, id func(T) string, fn func(T) error) (string, error) {
	slices.SortFunc(items, func(a, b T) int {
		if c := created(b).Compare(created(a)); c != 0 {
			return c
		}
		return cmp.Compare(id(b), id(a))
	})
	start := 0
	if q.Cursor != "" {
		start = -1
		for i, it := range items {
			if id(it) == q.Cursor {
				start = i + 1
			}
		}
		if start < 0 {
			return "", kassa.Errorf(kassa.Invalid, "unknown cursor")
		}
	}
	n, last := 0, ""
	for i := start; i < len(items); i++ {
		it := items[i]
		t := created(it)
		if !q.From.IsZero() && t.Before(q.From) || !q.To.IsZero() && t.After(q.To) {
			continue
		}
		if q.Limit > 0 && n == q.Limit {
			return last, nil
		}
		if failAfter >= 0 && n == failAfter {
			return "", fmt.Errorf("disk on fire at item %d", n)
		}
		if err := fn(it); err != nil {
			return "", err
		}
		n, last = n+1, id(it)
	}
	return "", nil
}

func (f *fakeReader) Invoices(_ context.Context, storeID string, q kassa.ListQuery, fn func(*kassa.Invoice) error) (string, error) {
	f.mu.Lock()
	var items []*kassa.Invoice
	for _, inv := range f.invoices {
		if inv.StoreID == storeID {
			items = append(items, inv)
		}
	}
	failAfter := f.failList
	f.mu.Unlock()
	return page(items, q, failAfter,
		func(inv *kassa.Invoice) time.Time { return inv.CreatedAt },
		func(inv *kassa.Invoice) string { return inv.ID }, fn)
}

func (f *fakeReader) OpenInvoices(context.Context, func(string, string, time.Time) error) error {
	return nil
}

func (f *fakeReader) Transaction(_ context.Context, id int64) (*kassa.Transaction, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id < 1 || id > int64(len(f.transactions)) {
		return nil, notFound("transaction")
	}
	t := f.transactions[id-1]
	return &t, nil
}

func (f *fakeReader) TransactionsByInvoice(_ context.Context, invoiceID string) ([]kassa.Transaction, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []kassa.Transaction
	for _, t := range f.transactions {
		if t.InvoiceID == invoiceID {
			out = append(out, t)
		}
	}
	return out, nil
}

func (f *fakeReader) Transactions(_ context.Context, storeID string, q kassa.ListQuery, fn func(*kassa.Transaction) error) (string, error) {
	f.mu.Lock()
	var items []*kassa.Transaction
	for i := range f.transactions {
		if t := f.transactions[i]; t.StoreID == storeID {
			items = append(items, &t)
		}
	}
	failAfter := f.failList
	f.mu.Unlock()
	return page(items, q, failAfter,
		func(t *kassa.Transaction) time.Time { return t.CreatedAt },
		func(t *kassa.Transaction) string { return fmt.Sprintf("%020d", t.ID) }, fn)
}

func (f *fakeReader) PaymentRequest(_ context.Context, id string) (*kassa.PaymentRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.payLinks[id]; ok {
		c := *p
		return &c, nil
	}
	return nil, notFound("payment request")
}

func (f *fakeReader) PaymentRequests(_ context.Context, storeID string, fn func(*kassa.PaymentRequest) error) error {
	f.mu.Lock()
	var items []*kassa.PaymentRequest
	for _, p := range f.payLinks {
		if p.StoreID == storeID {
			c := *p
			items = append(items, &c)
		}
	}
	f.mu.Unlock()
	slices.SortFunc(items, func(a, b *kassa.PaymentRequest) int { return cmp.Compare(a.ID, b.ID) })
	for _, p := range items {
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

// testRates are the fixed prices of one bitcoin used by the fakes.
var testRates = map[kassa.Currency]decimal.Decimal{
	kassa.EUR: decimal.RequireFromString("50000"),
	kassa.USD: decimal.RequireFromString("55000.5"),
	kassa.CAD: decimal.RequireFromString("75000"),
	kassa.JPY: decimal.RequireFromString("8000000"),
	kassa.GBP: decimal.RequireFromString("42000"),
	kassa.CHF: decimal.RequireFromString("48000.25"),
}

// testBolt11 returns a regtest BOLT11-shaped string of realistic length
// (about 360 characters), different per n.
func testBolt11(n int) string {
	const charset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
	var b strings.Builder
	b.WriteString("lnbcrt500u1p")
	x := uint32(n*2654435761 + 12345)
	for b.Len() < 360 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b.WriteByte(charset[x%32])
	}
	return b.String()
}

// testAddress returns a regtest bech32 address, different per n.
func testAddress(n int) string {
	return fmt.Sprintf("bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt%03d", n)
}

// fakeInvoices creates invoices with kassa.NewInvoice at testRates and
// stores them in the reader.
type fakeInvoices struct {
	reader *fakeReader
	clock  kassa.Clock
	err    error // returned by CreateInvoice when set

	created atomic.Int64
	mu      sync.Mutex
	last    *kassa.InvoiceRequest
	traced  bool // whether the last call's context carried a span
	traceID trace.TraceID
}

func (f *fakeInvoices) CreateInvoice(ctx context.Context, storeID string, r *kassa.InvoiceRequest) (*kassa.Invoice, error) {
	f.mu.Lock()
	f.last = r
	f.traced = trace.SpanContextFromContext(ctx).IsValid()
	f.traceID = trace.SpanContextFromContext(ctx).TraceID()
	f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	st, err := f.reader.Store(ctx, storeID)
	if err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	n := int(f.created.Add(1))
	terms := kassa.InvoiceTerms{
		RequestRate: testRates[r.Currency],
		StoreRate:   testRates[st.Currency],
		Now:         f.clock.Now(),
		Expiry:      kassa.DefaultInvoiceExpiry,
		Monitoring:  kassa.DefaultMonitoring,
	}
	inv, _, err := kassa.NewInvoice(fmt.Sprintf("inv_%04d", n), st, r, terms)
	if err != nil {
		return nil, err
	}
	if inv.Accepts(kassa.MethodOnchain) {
		inv.OnchainAddress = testAddress(n)
	}
	if inv.Accepts(kassa.MethodLightning) {
		inv.LightningInvoice = testBolt11(n)
		inv.PaymentHash = fmt.Sprintf("%064x", n)
	}
	f.reader.putInvoice(inv)
	return &inv, nil
}

func (f *fakeInvoices) MarkInvoiceInvalid(ctx context.Context, storeID, invoiceID string) (*kassa.Invoice, error) {
	return nil, kassa.Errorf(kassa.Conflict, "not in this fake")
}

func (f *fakeInvoices) lastRequest() *kassa.InvoiceRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// fakePayLinks creates and changes pay links in the reader.
type fakePayLinks struct {
	reader   *fakeReader
	clock    kassa.Clock
	invoices *fakeInvoices
	n        atomic.Int64
}

// PayPaymentRequest makes a new invoice for the pay link each time: the
// session rule is the actors' (http/paylink_update_test.go tests it).
func (f *fakePayLinks) PayPaymentRequest(ctx context.Context, storeID, id, session string) (*kassa.Invoice, error) {
	p, err := f.reader.PaymentRequest(ctx, id)
	if err != nil || p.StoreID != storeID {
		return nil, notFound("payment request")
	}
	st, err := f.reader.Store(ctx, storeID)
	if err != nil {
		return nil, err
	}
	req := p.InvoiceRequest(st.Currency)
	if err := req.Validate(); err != nil {
		return nil, err
	}
	return f.invoices.CreateInvoice(ctx, storeID, req)
}

func (f *fakePayLinks) CreatePaymentRequest(ctx context.Context, storeID string, in *kassa.PaymentRequestInput) (*kassa.PaymentRequest, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	now := f.clock.Now().UTC()
	p := kassa.PaymentRequest{
		ID: fmt.Sprintf("pr_%04d", f.n.Add(1)), StoreID: storeID,
		CreatedAt: now, UpdatedAt: now, ExpiryDate: now.Add(kassa.DefaultPaymentRequestExpiry),
	}
	apply(&p, in)
	f.reader.putPayLink(p)
	return &p, nil
}

func apply(p *kassa.PaymentRequest, in *kassa.PaymentRequestInput) {
	p.Amount, p.Title, p.Currency, p.OrderID = in.Amount, in.Title, in.Currency, in.OrderID
	p.Description, p.RedirectURL, p.CustomerEmail = in.Description, in.RedirectURL, in.CustomerEmail
	p.Discount, p.InternalNote = in.Discount, in.InternalNote
	if !in.ExpiryDate.IsZero() {
		p.ExpiryDate = in.ExpiryDate
	}
}

func (f *fakePayLinks) UpdatePaymentRequest(ctx context.Context, storeID, id string, in *kassa.PaymentRequestInput) (*kassa.PaymentRequest, error) {
	p, err := f.reader.PaymentRequest(ctx, id)
	if err != nil || p.StoreID != storeID {
		return nil, notFound("payment request")
	}
	apply(p, in)
	p.UpdatedAt = f.clock.Now().UTC()
	f.reader.putPayLink(*p)
	return p, nil
}

func (f *fakePayLinks) ArchivePaymentRequest(ctx context.Context, storeID, id string) error {
	p, err := f.reader.PaymentRequest(ctx, id)
	if err != nil || p.StoreID != storeID {
		return notFound("payment request")
	}
	p.Archived = true
	f.reader.putPayLink(*p)
	return nil
}

// fakeStores creates stores and top-ups in the reader.
type fakeStores struct {
	reader *fakeReader
	clock  kassa.Clock
	n      atomic.Int64
}

func (f *fakeStores) CreateStore(ctx context.Context, s kassa.StoreSettings) (*kassa.Store, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	st := kassa.NewStore(fmt.Sprintf("store_new%d", f.n.Add(1)), s, f.clock.Now())
	f.reader.putStore(st)
	return st, nil
}

func (f *fakeStores) TopUp(ctx context.Context, storeID string, amount kassa.Sats) (*kassa.Transaction, error) {
	if _, err := f.reader.Store(ctx, storeID); err != nil {
		return nil, err
	}
	t := kassa.Transaction{StoreID: storeID, Type: kassa.TransactionTopUp, Status: kassa.TransactionSettled,
		Amount: amount, FullAmount: amount, CreatedAt: f.clock.Now()}
	t.ID = f.reader.putTransaction(t)
	return &t, nil
}

// fakeRates gives testRates; EUR may be marked failing.
type fakeRates struct{}

func (fakeRates) Rate(_ context.Context, c kassa.Currency) (decimal.Decimal, error) {
	if r, ok := testRates[c]; ok {
		return r, nil
	}
	return decimal.Zero, nil
}

func (fakeRates) Entries(context.Context) []kassa.RateEntry {
	var out []kassa.RateEntry
	for _, c := range kassa.FiatCurrencies {
		e := kassa.RateEntry{Currency: c, Rate: testRates[c]}
		if c == kassa.CHF {
			e.Errors = []string{"source b: timeout"}
		}
		out = append(out, e)
	}
	return out
}

func (fakeRates) Source() string { return "fixed" }

// fakeSimulator records what it was asked to do.
type fakeSimulator struct {
	mu     sync.Mutex
	pays   []string // "invoiceID method amount"
	height int64
}

func (f *fakeSimulator) Pay(_ context.Context, inv *kassa.Invoice, m kassa.PaymentMethod, amount kassa.Sats) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pays = append(f.pays, fmt.Sprintf("%s %s %d", inv.ID, m, amount))
	return fmt.Sprintf("%064x", len(f.pays)), nil
}

func (f *fakeSimulator) Mine(_ context.Context, n int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.height += int64(n)
	return f.height, nil
}

func (f *fakeSimulator) payments() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pays)
}

// fakeKV is a kassa.KeyValue in memory whose records expire by clock.
type fakeKV struct {
	clock kassa.Clock
	mu    sync.Mutex
	m     map[string]kvEntry
	err   error
}

type kvEntry struct {
	value   []byte
	expires time.Time
}

func (f *fakeKV) GetValue(_ context.Context, key string) ([]byte, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, false, f.err
	}
	e, ok := f.m[key]
	if !ok || !f.clock.Now().Before(e.expires) {
		return nil, false, nil
	}
	return e.value, true, nil
}

func (f *fakeKV) PutValue(_ context.Context, key string, value []byte, expires time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]kvEntry{}
	}
	f.m[key] = kvEntry{value: slices.Clone(value), expires: expires}
	return nil
}

func (f *fakeKV) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.m)
}

// fakeBackend is a chain or Lightning backend for the health check.
type fakeBackend struct{ info kassa.BackendInfo }

func (f fakeBackend) Info(context.Context) kassa.BackendInfo { return f.info }

// copyWebhook returns a copy of w that shares no slice with it.
func copyWebhook(w *kassa.Webhook) *kassa.Webhook {
	c := *w
	c.Events = slices.Clone(w.Events)
	return &c
}

// copyDelivery returns a copy of d that shares no slice or map with it.
func copyDelivery(d *kassa.Delivery) *kassa.Delivery {
	c := *d
	c.Payload = slices.Clone(d.Payload)
	c.Headers = maps.Clone(d.Headers)
	return &c
}

func (f *fakeReader) putWebhook(w kassa.Webhook) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.webhooks[w.ID] = copyWebhook(&w)
}

func (f *fakeReader) removeWebhook(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.webhooks, id)
}

func (f *fakeReader) putDelivery(d kassa.Delivery) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deliveries[d.ID] = copyDelivery(&d)
}

func (f *fakeReader) Webhook(_ context.Context, id string) (*kassa.Webhook, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w, ok := f.webhooks[id]; ok {
		return copyWebhook(w), nil
	}
	return nil, notFound("webhook")
}

// Webhooks lists a store's webhooks oldest first, then by id.
func (f *fakeReader) Webhooks(_ context.Context, storeID string, fn func(*kassa.Webhook) error) error {
	f.mu.Lock()
	var items []*kassa.Webhook
	for _, w := range f.webhooks {
		if w.StoreID == storeID {
			items = append(items, copyWebhook(w))
		}
	}
	f.mu.Unlock()
	slices.SortFunc(items, func(a, b *kassa.Webhook) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	for _, w := range items {
		if err := fn(w); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeReader) Delivery(_ context.Context, id string) (*kassa.Delivery, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d, ok := f.deliveries[id]; ok {
		return copyDelivery(d), nil
	}
	return nil, notFound("delivery")
}

func (f *fakeReader) Deliveries(_ context.Context, webhookID string, q kassa.ListQuery, fn func(*kassa.Delivery) error) (string, error) {
	f.mu.Lock()
	var items []*kassa.Delivery
	for _, d := range f.deliveries {
		if d.WebhookID == webhookID {
			items = append(items, copyDelivery(d))
		}
	}
	failAfter := f.failList
	f.mu.Unlock()
	return page(items, q, failAfter,
		func(d *kassa.Delivery) time.Time { return d.CreatedAt },
		func(d *kassa.Delivery) string { return d.ID }, fn)
}

func (f *fakeReader) PendingDeliveries(_ context.Context, fn func(webhookID, deliveryID string) error) error {
	f.mu.Lock()
	var pending []*kassa.Delivery
	for _, d := range f.deliveries {
		if d.Status == kassa.DeliveryPending {
			pending = append(pending, copyDelivery(d))
		}
	}
	f.mu.Unlock()
	slices.SortFunc(pending, func(a, b *kassa.Delivery) int { return cmp.Compare(a.ID, b.ID) })
	for _, d := range pending {
		if err := fn(d.WebhookID, d.ID); err != nil {
			return err
		}
	}
	return nil
}

// WebhookOutbox is read by the webhook actors only, never by the server.
func (f *fakeReader) WebhookOutbox(context.Context, string, func(string) error) error {
	return fmt.Errorf("fakeReader: WebhookOutbox is not used by the HTTP server")
}

// fakeWebhooks registers webhooks and re-sends deliveries in the reader,
// checking what actors.System checks. Its URL validation refuses the URLs
// in refuse with their message; a redelivery is answered with
// receiverStatus (0: unreachable).
type fakeWebhooks struct {
	reader *fakeReader
	clock  kassa.Clock

	mu             sync.Mutex
	n              int
	refuse         map[string]string
	receiverStatus int
	err            error // returned by every call when set
	calls          int
	last           *kassa.WebhookInput
}

func newFakeWebhooks(reader *fakeReader, clock kassa.Clock) *fakeWebhooks {
	return &fakeWebhooks{reader: reader, clock: clock, refuse: map[string]string{}, receiverStatus: 200}
}

// record notes a call and its input, and returns the injected error.
func (f *fakeWebhooks) record(in *kassa.WebhookInput) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if in != nil {
		c := *in
		c.Events = slices.Clone(in.Events)
		f.last = &c
	}
	return f.err
}

// lastInput returns the input of the last create or update, as it was
// passed in (before the fake validated it).
func (f *fakeWebhooks) lastInput() *kassa.WebhookInput {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

func (f *fakeWebhooks) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeWebhooks) nextID(prefix string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	return fmt.Sprintf("%s_%04d", prefix, f.n)
}

// checkURL is the registration check: a refused URL answers what the
// real client says.
func (f *fakeWebhooks) checkURL(url string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if msg, ok := f.refuse[url]; ok {
		return kassa.Errorf(kassa.Invalid, "%s", msg)
	}
	return nil
}

func (f *fakeWebhooks) CreateWebhook(ctx context.Context, storeID string, in *kassa.WebhookInput) (*kassa.Webhook, error) {
	if err := f.record(in); err != nil {
		return nil, err
	}
	if err := in.Validate(true); err != nil {
		return nil, err
	}
	if _, err := f.reader.Store(ctx, storeID); err != nil {
		return nil, err
	}
	if err := f.checkURL(in.URL); err != nil {
		return nil, err
	}
	now := f.clock.Now().UTC()
	id := f.nextID("wh")
	w := kassa.Webhook{ID: id, StoreID: storeID, URL: in.URL, Secret: in.Secret, Events: in.Events,
		Enabled: true, CreatedAt: now, UpdatedAt: now}
	if w.Secret == "" {
		w.Secret = "generated-secret-" + id
	}
	if in.Enabled != nil {
		w.Enabled = *in.Enabled
	}
	if in.AutomaticRedelivery != nil {
		w.AutomaticRedelivery = *in.AutomaticRedelivery
	}
	f.reader.putWebhook(w)
	return &w, nil
}

func (f *fakeWebhooks) UpdateWebhook(ctx context.Context, storeID, id string, in *kassa.WebhookInput) (*kassa.Webhook, error) {
	if err := f.record(in); err != nil {
		return nil, err
	}
	if err := in.Validate(false); err != nil {
		return nil, err
	}
	w, err := f.reader.Webhook(ctx, id)
	if err != nil || w.StoreID != storeID {
		return nil, notFound("webhook")
	}
	if in.URL != "" && in.URL != w.URL {
		if err := f.checkURL(in.URL); err != nil {
			return nil, err
		}
		w.URL = in.URL
	}
	if in.EventsGiven {
		w.Events = in.Events
	}
	if in.Secret != "" {
		w.Secret = in.Secret
	}
	if in.Enabled != nil {
		w.Enabled = *in.Enabled
	}
	if in.AutomaticRedelivery != nil {
		w.AutomaticRedelivery = *in.AutomaticRedelivery
	}
	w.UpdatedAt = f.clock.Now().UTC()
	f.reader.putWebhook(*w)
	return w, nil
}

func (f *fakeWebhooks) DeleteWebhook(ctx context.Context, storeID, id string) error {
	if err := f.record(nil); err != nil {
		return err
	}
	w, err := f.reader.Webhook(ctx, id)
	if err != nil || w.StoreID != storeID {
		return notFound("webhook")
	}
	f.reader.removeWebhook(id)
	return nil
}

func (f *fakeWebhooks) Redeliver(ctx context.Context, storeID, webhookID, deliveryID string) (*kassa.Delivery, error) {
	if err := f.record(nil); err != nil {
		return nil, err
	}
	d, err := f.reader.Delivery(ctx, deliveryID)
	if err != nil {
		return nil, err
	}
	if d.StoreID != storeID || d.WebhookID != webhookID {
		return nil, notFound("delivery")
	}
	w, err := f.reader.Webhook(ctx, webhookID)
	if err != nil {
		return nil, err
	}
	if !w.Enabled {
		return nil, kassa.Errorf(kassa.Conflict, "the webhook is disabled; enable it to redeliver")
	}
	f.mu.Lock()
	status := f.receiverStatus
	f.mu.Unlock()
	now := f.clock.Now().UTC()
	re := kassa.Delivery{
		ID: f.nextID("dl"), WebhookID: webhookID, StoreID: storeID, InvoiceID: d.InvoiceID, Type: d.Type,
		Payload:      kassa.RedeliveryPayload(d.Type, d.InvoiceID),
		Headers:      map[string]string{"X-Service-Sig": "sha256=" + strings.Repeat("0", 64)},
		Status:       kassa.DeliveryDelivered,
		StatusCode:   status,
		Duration:     12 * time.Millisecond,
		RedeliveryOf: d.ID,
		CreatedAt:    now,
		SentAt:       now,
	}
	switch {
	case status == 0:
		re.Status, re.Error = kassa.DeliveryFailed, "webhook URL did not answer within 5s"
	case status < 200 || status > 299:
		re.Status, re.Error = kassa.DeliveryFailed, fmt.Sprintf("webhook URL answered %d %s", status, http.StatusText(status))
	}
	f.reader.putDelivery(re)
	return &re, nil
}
