package kassa

import (
	"context"
	"errors"
	"time"

	"github.com/shopspring/decimal"
)

// OverviewDays is how many days a store's overview covers: today (UTC)
// and the days before it.
const OverviewDays = 30

// OverviewReadLimit bounds each of the overview's two reads: the ledger
// lines and the invoices of the last OverviewDays. Both are read
// through the store's time indexes from the first day on (a seek, not a
// scan of the store's history), so the work grows with the lines and
// invoices of those days and stops at this many of each; past it the
// overview counts the newest ones only and says so (Truncated).
const OverviewReadLimit = 10_000

// OverviewRecent is how many of the newest invoices an overview lists.
const OverviewRecent = 5

// StoreOverview is what a store's first dashboard page draws: its sales
// per day, its invoices by status and its payments by method over the
// last OverviewDays days, its prepaid balance and how it moved, and its
// newest invoices. Amounts in Currency are the ledger lines' own values
// at each invoice's locked rate (Transaction.AmountInPreferredCurrency):
// they are added up, never converted again.
type StoreOverview struct {
	// From is the start of the first day, To the end of the last
	// (exclusive), both UTC.
	From, To time.Time
	// Currency is the store's currency: the unit of every fiat sum.
	Currency Currency
	// Days are the sales of each day, oldest first, OverviewDays long.
	Days []DaySales
	// Statuses counts the invoices created in the period by their
	// status now.
	Statuses map[InvoiceStatus]int
	// Invoices is how many invoices were created in the period.
	Invoices int
	// Lightning and Onchain are the period's payments by method.
	Lightning, Onchain MethodSales
	// Balance is the prepaid balance now; BalanceAt is the balance at
	// the end of each day of Days (its last entry is Balance).
	Balance   Sats
	BalanceAt []Sats
	// OtherCurrency counts payments valued in another currency than
	// Currency (the store changed its currency in the period): their
	// satoshis are counted, their value is not added to Currency's.
	OtherCurrency int
	// Truncated says a read stopped at OverviewReadLimit: the figures
	// are those of the newest lines and invoices.
	Truncated bool
	// Recent are the newest invoices, at most OverviewRecent.
	Recent []*Invoice
}

// DaySales are one day's payments: the deposits (transfer lines) made
// that day.
type DaySales struct {
	Day   time.Time // the day's start, UTC
	Count int
	Sats  Sats
	Fiat  decimal.Decimal // in StoreOverview.Currency
}

// MethodSales are the payments of one payment method.
type MethodSales struct {
	Count int
	Sats  Sats
	Fiat  decimal.Decimal
}

// errOverviewFull stops a read at OverviewReadLimit.
var errOverviewFull = errors.New("overview: read limit")

// ReadStoreOverview reads st's overview at now from r: two bounded reads
// over the store's time indexes (OverviewReadLimit) and its balance.
func ReadStoreOverview(ctx context.Context, r Reader, st *Store, now time.Time) (*StoreOverview, error) {
	today := now.UTC().Truncate(24 * time.Hour)
	o := &StoreOverview{
		From: today.AddDate(0, 0, 1-OverviewDays), To: today.AddDate(0, 0, 1),
		Currency: st.Currency, Days: make([]DaySales, OverviewDays), Statuses: map[InvoiceStatus]int{},
		BalanceAt: make([]Sats, OverviewDays),
	}
	for i := range o.Days {
		o.Days[i] = DaySales{Day: o.From.AddDate(0, 0, i), Fiat: decimal.Zero}
	}
	o.Lightning.Fiat, o.Onchain.Fiat = decimal.Zero, decimal.Zero
	bal, err := r.Balance(ctx, st.ID)
	if err != nil {
		return nil, err
	}
	o.Balance = bal
	// The balance at the end of day i is today's less the moves of the
	// lines after it: later is what the lines read so far moved it
	// (newest first), by day.
	later := make([]Sats, OverviewDays)
	next, err := r.Transactions(ctx, st.ID, ListQuery{From: o.From, Limit: OverviewReadLimit}, func(t *Transaction) error {
		i := o.day(t.CreatedAt)
		if i < 0 {
			return nil
		}
		later[i] += t.BalanceDelta()
		if t.Type == TransactionTransfer && t.Status != TransactionFailed {
			o.addSale(i, t)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	o.Truncated = next != ""
	b := bal
	for i := OverviewDays - 1; i >= 0; i-- {
		o.BalanceAt[i] = b
		b -= later[i]
	}
	_, err = r.Invoices(ctx, st.ID, ListQuery{From: o.From}, func(inv *Invoice) error {
		if o.Invoices == OverviewReadLimit {
			o.Truncated = true
			return errOverviewFull
		}
		o.Invoices++
		o.Statuses[inv.Status]++
		if len(o.Recent) < OverviewRecent {
			o.Recent = append(o.Recent, inv)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errOverviewFull) {
		return nil, err
	}
	if len(o.Recent) < OverviewRecent {
		// No invoice in the period (or few): the newest ones before it.
		o.Recent = o.Recent[:0]
		if _, err := r.Invoices(ctx, st.ID, ListQuery{Limit: OverviewRecent}, func(inv *Invoice) error {
			o.Recent = append(o.Recent, inv)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// day is the index in Days of the day at falls in, or -1 outside the
// period.
func (o *StoreOverview) day(at time.Time) int {
	if at.Before(o.From) || !at.Before(o.To) {
		return -1
	}
	return int(at.Sub(o.From) / (24 * time.Hour))
}

// addSale counts deposit t on day i and by its method.
func (o *StoreOverview) addSale(i int, t *Transaction) {
	d := &o.Days[i]
	d.Count++
	d.Sats += t.FullAmount
	fiat := t.AmountInPreferredCurrency
	if t.Currency != o.Currency {
		o.OtherCurrency++
		fiat = decimal.Zero
	}
	d.Fiat = d.Fiat.Add(fiat)
	var m *MethodSales
	switch t.DepositMethod {
	case MethodLightning:
		m = &o.Lightning
	case MethodOnchain:
		m = &o.Onchain
	default:
		return
	}
	m.Count++
	m.Sats += t.FullAmount
	m.Fiat = m.Fiat.Add(fiat)
}

// SalesTotal is the period's sales: the sum of Days.
func (o *StoreOverview) SalesTotal() DaySales {
	total := DaySales{Fiat: decimal.Zero}
	for _, d := range o.Days {
		total.Count += d.Count
		total.Sats += d.Sats
		total.Fiat = total.Fiat.Add(d.Fiat)
	}
	return total
}
