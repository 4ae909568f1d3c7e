// Package topup credits merchants' prepaid balances from top-up
// invoices: the money rule behind the dashboard's balance page, owned by
// the service side so that the dashboard only asks.
//
// A top-up is an invoice of the operator's own store ("Kassa operator",
// made on first use). Once it settles, each payment the invoice accounted
// is credited to the merchant's prepaid balance with the service's
// TopUp, "invoice id/payment id" as its reference, and the credit is
// recorded (docs/decisions.md, "Top-ups credited once"); a payment
// arriving after the first credit is credited the same way. The store
// credits a reference once, so every node of a cluster may credit at the
// same time, and a crash between a credit and its record credits nothing
// twice. Ledger.Run credits in the background; Ledger.List credits too.
package topup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// Services are the write paths crediting uses (in cmd/kassa, the actor
// system).
type Services interface {
	// TopUp credits a store's prepaid balance once per reference.
	TopUp(ctx context.Context, storeID string, amount kassa.Sats, reference string) (*kassa.Transaction, error)
	CreateInvoice(ctx context.Context, storeID string, r *kassa.InvoiceRequest) (*kassa.Invoice, error)
	// CreateStoreOnce creates the store with the given id, or returns
	// the one already stored under it.
	CreateStoreOnce(ctx context.Context, id string, settings kassa.StoreSettings) (*kassa.Store, error)
}

// Deps are what a Ledger consumes.
type Deps struct {
	Reader   kassa.Reader
	Services Services
	// KV keeps the top-up records (under the keys the dashboard kept
	// them under: "dash/…").
	KV     kassa.KeyValue
	Clock  kassa.Clock
	Logger *slog.Logger
}

// Ledger creates top-ups and credits the paid ones.
type Ledger struct {
	Deps
	log *slog.Logger
	mu  sync.Mutex // serialises changes to top-up records
}

// New returns a Ledger over d.
func New(d Deps) *Ledger {
	if d.Clock == nil {
		d.Clock = kassa.SystemClock{}
	}
	l := &Ledger{Deps: d, log: d.Logger}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	return l
}

// Amounts a top-up may ask for.
const (
	MinAmount kassa.Sats = 1000
	MaxAmount            = kassa.SatsPerBTC
)

// ErrAmount is the error of a top-up asking for less than MinAmount or
// more than MaxAmount.
var ErrAmount = kassa.Errorf(kassa.Invalid, "top up between %d and %d sat", MinAmount, MaxAmount)

const operatorStoreKey = "dash/operator-store"

func topUpsKey(storeID string) string  { return "dash/topups/" + storeID }
func topUpKey(invoiceID string) string { return "dash/topup/" + invoiceID }

// forever is the expiry of the records: they are kept.
var forever = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// TopUp is one top-up invoice of a store.
type TopUp struct {
	InvoiceID string `json:"invoiceId"`
	StoreID   string `json:"storeId"`
	// Amount is the amount asked for until something is credited, then
	// what was credited in all.
	Amount   kassa.Sats `json:"amount"`
	Credited bool       `json:"credited,omitempty"`
	// ByInvoice is what an earlier version credited with the invoice id
	// alone as reference: what the invoice had received by then.
	ByInvoice kassa.Sats `json:"byInvoice,omitempty"`
	// Payments are the ids of the invoice's payments credited one by one,
	// each with the reference "invoice id/payment id".
	Payments []string `json:"payments,omitempty"`
	// Status is the status of the invoice, filled in by List.
	Status string `json:"-"`
}

// byInvoice returns what the top-up's invoice id credited, as far as
// its record tells: a record an earlier version marked credited has no
// Payments, and credited Amount under the invoice id.
func (t *TopUp) byInvoice() kassa.Sats {
	if t.ByInvoice == 0 && t.Credited && len(t.Payments) == 0 {
		return t.Amount
	}
	return t.ByInvoice
}

// coveredByInvoice returns the ids of the payments a credit of amount
// under the invoice id covered. That credit was what the invoice had
// received when it was made (every payment not dropped), so it covers the
// payments in order of arrival until their sum reaches the amount. A
// payment dropped since still counts as covered: nothing is credited for
// it again.
func coveredByInvoice(inv *kassa.Invoice, amount kassa.Sats) map[string]bool {
	covered := map[string]bool{}
	var sum kassa.Sats
	for _, p := range inv.Payments {
		if sum >= amount {
			break
		}
		covered[p.ID] = true
		if !p.Dropped {
			sum += p.Amount
		}
	}
	return covered
}

// uncredited returns the payments of the top-up's invoice that its
// store's ledger accounted and that are not credited yet.
func (t *TopUp) uncredited(inv *kassa.Invoice) []kassa.Payment {
	covered := coveredByInvoice(inv, t.byInvoice())
	var out []kassa.Payment
	for _, p := range inv.Payments {
		if p.Accounted && !covered[p.ID] && !slices.Contains(t.Payments, p.ID) {
			out = append(out, p)
		}
	}
	return out
}

// paymentRef is the top-up reference of one payment of a top-up invoice.
func paymentRef(invoiceID, paymentID string) string { return invoiceID + "/" + paymentID }

// MaxListed bounds the top-ups a store keeps listed.
const MaxListed = 50

// operatorStoreID is the id of the operator's store when this version
// makes it. Every node that makes the first top-up asks for this one id,
// so a cluster gets one operator store however many nodes race; a store
// made by an earlier version (with a random id) stays the one recorded.
const operatorStoreID = "kassa-operator"

func (l *Ledger) getJSON(ctx context.Context, key string, v any) (bool, error) {
	data, ok, err := l.KV.GetValue(ctx, key)
	if err != nil || !ok {
		return false, err
	}
	return true, json.Unmarshal(data, v)
}

func (l *Ledger) putJSON(ctx context.Context, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return l.KV.PutValue(ctx, key, data, forever)
}

// operatorStore returns the store top-ups are paid to, making it on
// first use.
func (l *Ledger) operatorStore(ctx context.Context) (string, error) {
	if id, ok, err := l.KV.GetValue(ctx, operatorStoreKey); err != nil || ok {
		return string(id), err
	}
	st, err := l.Services.CreateStoreOnce(ctx, operatorStoreID, kassa.StoreSettings{Name: "Kassa operator", Currency: kassa.SATS})
	if err != nil {
		return "", err
	}
	// Racing nodes all write the same id.
	return st.ID, l.KV.PutValue(ctx, operatorStoreKey, []byte(st.ID), forever)
}

// Create makes a top-up of amount for the store: an invoice of the
// operator's store, listed among the store's top-ups (the last
// MaxListed). An amount out of range is ErrAmount.
func (l *Ledger) Create(ctx context.Context, storeID string, amount kassa.Sats) (*kassa.Invoice, error) {
	if amount < MinAmount || amount > MaxAmount {
		return nil, ErrAmount
	}
	op, err := l.operatorStore(ctx)
	if err != nil {
		return nil, err
	}
	meta, _ := json.Marshal(map[string]string{"topUpStore": storeID})
	inv, err := l.Services.CreateInvoice(ctx, op, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(int64(amount)), HasAmount: true,
		Currency: kassa.SATS, OrderID: "topup-" + storeID, Metadata: meta})
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.putJSON(ctx, topUpKey(inv.ID), TopUp{InvoiceID: inv.ID, StoreID: storeID, Amount: amount}); err != nil {
		return nil, err
	}
	ids, err := l.topUps(ctx, storeID)
	if err != nil {
		return nil, err
	}
	ids = append(ids, inv.ID)
	if len(ids) > MaxListed {
		ids = ids[len(ids)-MaxListed:]
	}
	return inv, l.putJSON(ctx, topUpsKey(storeID), ids)
}

// topUps returns the invoice ids of the store's listed top-ups, oldest
// first.
func (l *Ledger) topUps(ctx context.Context, storeID string) ([]string, error) {
	var ids []string
	_, err := l.getJSON(ctx, topUpsKey(storeID), &ids)
	return ids, err
}

// Get returns the top-up of the invoice, and whether it is one.
func (l *Ledger) Get(ctx context.Context, invoiceID string) (*TopUp, bool, error) {
	var t TopUp
	ok, err := l.getJSON(ctx, topUpKey(invoiceID), &t)
	if err != nil || !ok {
		return nil, false, err
	}
	return &t, true, nil
}

// List credits every settled top-up of the store not credited yet, and
// returns the store's top-ups, newest first, with their invoices'
// status.
func (l *Ledger) List(ctx context.Context, storeID string) ([]*TopUp, error) {
	ids, err := l.topUps(ctx, storeID)
	if err != nil {
		return nil, err
	}
	var list []*TopUp
	for i := len(ids) - 1; i >= 0; i-- {
		t, ok, err := l.Get(ctx, ids[i])
		if err != nil {
			return nil, err
		}
		if !ok || t.StoreID != storeID {
			continue
		}
		inv, err := l.Reader.Invoice(ctx, t.InvoiceID)
		if err != nil {
			return nil, err
		}
		if inv.Status == kassa.InvoiceSettled && len(t.uncredited(inv)) > 0 {
			if err := l.credit(ctx, t, inv); err != nil {
				return nil, err
			}
		}
		t.Status = inv.Status.String()
		list = append(list, t)
	}
	return list, nil
}

// credit credits each payment of top-up t's invoice inv not credited
// yet, and records that it did. The reference of each credit is
// "invoice id/payment id": the store credits it once, so a crash before
// the record is written, or two nodes crediting at once, cannot credit a
// payment twice. What an earlier version credited with the invoice id
// alone is not credited again.
func (l *Ledger) credit(ctx context.Context, t *TopUp, inv *kassa.Invoice) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var rec TopUp
	if ok, err := l.getJSON(ctx, topUpKey(t.InvoiceID), &rec); err != nil {
		return err
	} else if !ok {
		rec = *t
	}
	if !rec.Credited {
		// An earlier version may have credited the invoice id and failed
		// to record it: the store remembers.
		st, err := l.Reader.Store(ctx, rec.StoreID)
		if err != nil {
			return err
		}
		if id, ok := st.TopUpRef(rec.InvoiceID); ok {
			tx, err := l.Reader.Transaction(ctx, id)
			if err != nil {
				return err
			}
			rec.ByInvoice = tx.Amount
		}
	} else {
		rec.ByInvoice = rec.byInvoice()
	}
	var err error
	for _, p := range rec.uncredited(inv) {
		if _, err = l.Services.TopUp(ctx, rec.StoreID, p.Amount, paymentRef(rec.InvoiceID, p.ID)); err != nil {
			break // record what was credited
		}
		rec.Payments = append(rec.Payments, p.ID)
	}
	if rec.ByInvoice > 0 || len(rec.Payments) > 0 {
		rec.Credited, rec.Amount = true, rec.ByInvoice
		for _, p := range inv.Payments {
			if slices.Contains(rec.Payments, p.ID) {
				rec.Amount += p.Amount
			}
		}
	}
	if perr := l.putJSON(ctx, topUpKey(rec.InvoiceID), rec); err == nil {
		err = perr
	}
	rec.Status = t.Status
	*t = rec
	return err
}

// Window is how far back CreditAll looks for settled top-up invoices: an
// invoice settles at the latest when a payment arrives at the end of its
// monitoring after expiry (24 hours by default). Older ones are credited
// when their store's top-ups are listed.
const Window = 72 * time.Hour

// CreditAll credits the top-ups whose invoices, created within Window,
// settled and have payments not credited yet. Every node of a cluster
// may run it at once: the store credits a reference once.
func (l *Ledger) CreditAll(ctx context.Context) error {
	failed := l.creditAll(ctx)
	ids := slices.Sorted(maps.Keys(failed))
	errs := make([]error, 0, len(ids))
	for _, id := range ids {
		errs = append(errs, failed[id])
	}
	return errors.Join(errs...)
}

// creditAll is CreditAll, its errors by top-up invoice id ("" when the
// operator store's invoices could not be listed).
func (l *Ledger) creditAll(ctx context.Context) map[string]error {
	failed := map[string]error{}
	op, ok, err := l.KV.GetValue(ctx, operatorStoreKey)
	if err != nil || !ok {
		if err != nil {
			failed[""] = err
		}
		return failed // no top-up was ever made
	}
	var settled []*kassa.Invoice
	q := kassa.ListQuery{From: l.Clock.Now().Add(-Window), Limit: 500}
	for {
		next, err := l.Reader.Invoices(ctx, string(op), q, func(inv *kassa.Invoice) error {
			if inv.Status == kassa.InvoiceSettled {
				settled = append(settled, inv)
			}
			return nil
		})
		if err != nil {
			failed[""] = err
			return failed
		}
		if next == "" {
			break
		}
		q.Cursor = next
	}
	for _, inv := range settled {
		t, ok, err := l.Get(ctx, inv.ID)
		if err == nil && ok && len(t.uncredited(inv)) > 0 {
			err = l.credit(ctx, t, inv)
		}
		if err != nil {
			failed[inv.ID] = fmt.Errorf("top-up %s: %w", inv.ID, err)
		}
	}
	return failed
}

// warnEvery is how often Run repeats the warning about a top-up that
// keeps failing (it retries it on every round).
const warnEvery = time.Hour

// Run runs CreditAll every interval until ctx ends, so that a paid
// top-up reaches the balance without anyone listing it. A top-up that
// keeps failing is warned about when it first fails, then once every
// warnEvery, not on every round.
func (l *Ledger) Run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	warned := map[string]time.Time{} // failing top-ups: last warning
	for {
		failed := l.creditAll(ctx)
		now := l.Clock.Now()
		for id, err := range failed {
			if last, ok := warned[id]; ctx.Err() != nil || ok && now.Sub(last) < warnEvery {
				continue
			}
			warned[id] = now
			l.log.Warn("credit top-ups; retrying every round, warning again in an hour", "err", err)
		}
		for id := range warned {
			if _, ok := failed[id]; !ok {
				delete(warned, id) // credited, or out of the window
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// OperatorStoreIDs returns the ids the operator's store has or will
// have: the store top-ups are paid to is the service's, not a
// merchant's.
func (l *Ledger) OperatorStoreIDs(ctx context.Context) ([]string, error) {
	ids := []string{operatorStoreID}
	id, ok, err := l.KV.GetValue(ctx, operatorStoreKey)
	if ok && string(id) != operatorStoreID {
		ids = append(ids, string(id))
	}
	return ids, err
}
