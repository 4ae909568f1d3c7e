package dashboard

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/http/i18n"
)

// The overview is a store's first page: the figures are the domain's
// (kassa.ReadStoreOverview reads them from the ledger and the invoices);
// this file only turns them into the coordinates of inline SVG charts,
// drawn on the server (no script), each with a title, a description
// and a table of the same figures.

// Chart boxes, in SVG user units: the SVGs scale to their card's width.
const (
	chartW   = 300 // the sales and balance charts' width
	chartH   = 120 // and height
	barGap   = 2   // between two days' bars
	stackW   = 300 // the status and method bars' width
	stackH   = 24
	recentPO = 5 // payouts listed
)

// overviewBar is one bar (or stacked segment) of a chart, in user units.
type overviewBar struct {
	X, Y, W, H string
	Class      string
}

// overviewSegment is one part of a stacked bar with its legend.
type overviewSegment struct {
	overviewBar
	Label string
	Count int
	Sats  kassa.Sats
	Fiat  decimal.Decimal
	Share string // percent, whole
}

func (h *Dashboard) overviewPage(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	p := kassa.PrincipalFrom(r.Context())
	o, err := kassa.ReadStoreOverview(r.Context(), h.Reader, st, h.Clock.Now())
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	data := map[string]any{"O": o, "Total": o.SalesTotal(), "Invoices": o.Recent, "Last": o.Days[len(o.Days)-1].Day}
	data["Bars"], data["Max"], data["Best"] = salesBars(o.Days)
	data["Statuses"], data["Methods"] = statusSegments(o), methodSegments(o, requestLang(r))
	// The balance, the ledger's export and the payouts show to those
	// who may see them on their own pages.
	if p.Can(st.ID, kassa.PermViewReports) {
		data["Reports"] = true
		data["Trend"], data["Zero"], data["Low"], data["High"] = balanceLine(o.BalanceAt)
	}
	if h.Refunds != nil && h.Payouts != nil && p.Can(st.ID, kassa.PermViewPayouts) {
		var list []*kassa.Payout
		errEnough := errors.New("enough")
		err := h.Payouts.Payouts(r.Context(), st.ID, func(po *kassa.Payout) error {
			if len(list) == recentPO {
				return errEnough
			}
			list = append(list, po)
			return nil
		})
		if err != nil && !errors.Is(err, errEnough) {
			h.serverError(w, r, err)
			return
		}
		data["ShowPayouts"], data["Payouts"] = true, list
	}
	h.render(w, r, http.StatusOK, "overview", data)
}

// units writes a coordinate with one decimal.
func units(d decimal.Decimal) string { return d.StringFixed(1) }

// salesBars are the day bars of the sales chart, scaled so that the best
// day fills the height; the scale is the figures' own (decimal), only
// the coordinates are rounded. It returns the best day's value and the
// best day.
func salesBars(days []kassa.DaySales) ([]overviewBar, decimal.Decimal, *kassa.DaySales) {
	most := decimal.Zero
	var best *kassa.DaySales
	for i := range days {
		if days[i].Fiat.GreaterThan(most) {
			most, best = days[i].Fiat, &days[i]
		}
	}
	step := decimal.NewFromInt(chartW).Div(decimal.NewFromInt(int64(len(days))))
	width := step.Sub(decimal.NewFromInt(barGap))
	bars := make([]overviewBar, 0, len(days))
	for i, d := range days {
		height := decimal.Zero
		if most.IsPositive() && d.Fiat.IsPositive() {
			height = d.Fiat.Mul(decimal.NewFromInt(chartH)).Div(most)
			if height.LessThan(decimal.NewFromInt(1)) {
				height = decimal.NewFromInt(1) // a small sale stays visible
			}
		}
		x := step.Mul(decimal.NewFromInt(int64(i))).Add(decimal.NewFromInt(barGap / 2))
		bars = append(bars, overviewBar{X: units(x), Y: units(decimal.NewFromInt(chartH).Sub(height)), W: units(width), H: units(height), Class: "bar"})
	}
	return bars, most, best
}

// stack lays counts side by side across stackW, each as wide as its
// share of the total (by weight).
func stack(segs []overviewSegment, weight func(overviewSegment) decimal.Decimal) []overviewSegment {
	total := decimal.Zero
	for _, s := range segs {
		total = total.Add(weight(s))
	}
	x := decimal.Zero
	for i := range segs {
		w := decimal.Zero
		if total.IsPositive() {
			w = weight(segs[i]).Mul(decimal.NewFromInt(stackW)).Div(total)
			segs[i].Share = weight(segs[i]).Mul(decimal.NewFromInt(100)).Div(total).Round(0).String()
		} else {
			segs[i].Share = "0"
		}
		segs[i].X, segs[i].Y, segs[i].W, segs[i].H = units(x), "0", units(w), strconv.Itoa(stackH)
		x = x.Add(w)
	}
	return segs
}

// statusSegments is the bar of the period's invoices split by status.
func statusSegments(o *kassa.StoreOverview) []overviewSegment {
	var segs []overviewSegment
	for _, s := range []kassa.InvoiceStatus{kassa.InvoiceNew, kassa.InvoiceProcessing, kassa.InvoiceSettled, kassa.InvoiceExpired, kassa.InvoiceInvalid} {
		segs = append(segs, overviewSegment{overviewBar: overviewBar{Class: "st-" + s.String()}, Label: s.String(), Count: o.Statuses[s]})
	}
	return stack(segs, func(s overviewSegment) decimal.Decimal { return decimal.NewFromInt(int64(s.Count)) })
}

// methodSegments is the bar of the period's sales split by payment
// method, by their satoshis (the value of payments in a former currency
// is not in the fiat sums; their satoshis are).
func methodSegments(o *kassa.StoreOverview, lang string) []overviewSegment {
	segs := []overviewSegment{
		{overviewBar: overviewBar{Class: "m-ln"}, Label: i18n.Method(lang, kassa.MethodLightning),
			Count: o.Lightning.Count, Sats: o.Lightning.Sats, Fiat: o.Lightning.Fiat},
		{overviewBar: overviewBar{Class: "m-chain"}, Label: i18n.Method(lang, kassa.MethodOnchain),
			Count: o.Onchain.Count, Sats: o.Onchain.Sats, Fiat: o.Onchain.Fiat},
	}
	return stack(segs, func(s overviewSegment) decimal.Decimal { return decimal.NewFromInt(int64(s.Sats)) })
}

// balanceLine is the points of the balance chart's line (one per day,
// between the lowest and highest balance of the period, zero included),
// the height of zero, and those two balances.
func balanceLine(at []kassa.Sats) (string, string, kassa.Sats, kassa.Sats) {
	if len(at) == 0 {
		return "", "", 0, 0
	}
	low, high := at[0], at[0]
	for _, b := range at {
		low, high = min(low, b), max(high, b)
	}
	bottom, top := min(low, 0), max(high, 0)
	span := decimal.NewFromInt(int64(top - bottom))
	step := decimal.NewFromInt(chartW).Div(decimal.NewFromInt(int64(max(len(at)-1, 1))))
	pad := decimal.NewFromInt(4)
	inner := decimal.NewFromInt(chartH).Sub(pad.Mul(decimal.NewFromInt(2)))
	y := func(b kassa.Sats) decimal.Decimal {
		if !span.IsPositive() {
			return decimal.NewFromInt(chartH / 2)
		}
		return pad.Add(decimal.NewFromInt(int64(top - b)).Mul(inner).Div(span))
	}
	points := ""
	for i, b := range at {
		if i > 0 {
			points += " "
		}
		points += units(step.Mul(decimal.NewFromInt(int64(i)))) + "," + units(y(b))
	}
	return points, units(y(0)), low, high
}
