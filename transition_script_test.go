package kassa

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// TestInvoiceScripts runs the scripts of testdata/invoice: lives of
// invoices through NewInvoice and Invoice.Apply, one input a command.
//
// Commands:
//
//	store [currency=EUR] [fee=1] [tolerance=0] [confirmations=1]
//	create [amount=A] [currency=C] [rate=R] [store-rate=R] [methods=BTC,Lightning]
//	       (store-rate defaults to rate for a request in the store
//	       currency, else to 87000)
//	pay onchain id=ID amount=SATS [conf=N] [at=D]
//	pay lightning hash=H (amount=SATS | msat=MSAT) [at=D]
//	confirm id=ID conf=N [at=D]
//	drop id=ID [rbf=1] [at=D]   (rbf=1: replaced by a fee bump)
//	expire [at=D]
//	end-monitoring [at=D]
//	mark-invalid [at=D]
//	transactions
//
// Times (at=) are durations since the invoice's creation; an input
// without one happens when the previous one did, except expire and
// end-monitoring, which default to the invoice's deadlines. Each input
// prints the invoice's status, additional status, total and confirmed
// amounts, then one line per effect, or the error. transactions prints
// the ledger lines of the invoice's Settle and PaidAgain effects so far.
//
// Every input is also checked for the properties replay depends on: an
// error leaves the invoice unchanged, the receiver is never modified, and
// the same input applied twice to the same state gives equal results.
func TestInvoiceScripts(t *testing.T) {
	paths, err := filepath.Glob("testdata/invoice/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			s := &invoiceScript{t: t, store: scriptStore()}
			runScript(t, path, s.run)
		})
	}
}

// scriptEpoch is when every scripted invoice is created.
var scriptEpoch = time.Date(2025, 11, 21, 9, 30, 0, 0, time.UTC)

func scriptStore() Store {
	return Store{
		ID:                    "store1",
		Name:                  "Corner Shop",
		Currency:              EUR,
		PercentFee:            decimal.NewFromInt(1),
		UnderpaymentTolerance: decimal.Zero,
		ConfirmationsRequired: 1,
	}
}

type invoiceScript struct {
	t       *testing.T
	store   Store
	inv     Invoice
	created bool
	now     time.Time
	// ledger holds the lines of the invoice's Settle and PaidAgain
	// effects so far.
	ledger []Transaction
}

func (s *invoiceScript) run(c *scriptCommand) string {
	s.t.Helper()
	fail := func(format string, args ...any) {
		s.t.Helper()
		s.t.Fatalf("%s: %s", c.Pos, fmt.Sprintf(format, args...))
	}
	if c.Name != "store" && c.Name != "create" && !s.created {
		fail("%s before create", c.Name)
	}
	at := func(def time.Time) time.Time {
		if !c.Has("at") {
			return def
		}
		d, err := time.ParseDuration(c.Get("at", ""))
		if err != nil {
			fail("at: %v", err)
		}
		return scriptEpoch.Add(d)
	}
	sats := func(key string) Sats {
		n, err := strconv.ParseInt(c.Get(key, "0"), 10, 64)
		if err != nil {
			fail("%s: %v", key, err)
		}
		return Sats(n)
	}
	switch c.Name {
	case "store":
		// Each store command starts again from scriptStore.
		s.store = scriptStore()
		s.store.Currency = Currency(c.Get("currency", string(s.store.Currency)))
		s.store.PercentFee = s.decimal(c, "fee", s.store.PercentFee.String())
		s.store.UnderpaymentTolerance = s.decimal(c, "tolerance", s.store.UnderpaymentTolerance.String())
		if c.Has("confirmations") {
			s.store.ConfirmationsRequired = int32(sats("confirmations"))
		}
		return fmt.Sprintf("%s fee=%s%% tolerance=%s%% confirmations=%d",
			s.store.Currency, s.store.PercentFee, s.store.UnderpaymentTolerance, s.store.ConfirmationsRequired)

	case "create":
		req := InvoiceRequest{Currency: Currency(c.Get("currency", ""))}
		if c.Has("amount") {
			req.Amount, req.HasAmount = s.decimal(c, "amount", ""), true
		}
		if c.Has("methods") {
			for _, m := range strings.Split(c.Get("methods", ""), ",") {
				pm, err := ParsePaymentMethod(m)
				if err != nil {
					fail("%v", err)
				}
				req.EnabledMethods = append(req.EnabledMethods, pm)
			}
		}
		if err := req.Validate(); err != nil {
			return "error: " + err.Error()
		}
		rate := s.decimal(c, "rate", "0")
		storeRate := "87000"
		if req.Currency == s.store.Currency && c.Has("rate") {
			storeRate = rate.String()
		}
		terms := InvoiceTerms{
			RequestRate: rate,
			StoreRate:   s.decimal(c, "store-rate", storeRate),
			Now:         scriptEpoch,
			Expiry:      DefaultInvoiceExpiry,
			Monitoring:  DefaultMonitoring,
		}
		inv, effects, err := NewInvoice("inv1", &s.store, &req, terms)
		if err != nil {
			return "error: " + err.Error()
		}
		inv.OnchainAddress = "bcrt1qscript"
		if inv.Accepts(MethodLightning) {
			inv.LightningInvoice, inv.PaymentHash = "lnbcrt1script", "hash1"
		}
		s.inv, s.created, s.now, s.ledger = inv, true, scriptEpoch, nil
		return fmt.Sprintf("%s amount=%d expires=%s monitor-until=%s\n%s",
			s.state(), inv.Amount, since(inv.ExpiresAt), since(inv.MonitorUntil), s.effects(effects))

	case "pay":
		if len(c.Args) != 1 {
			fail("pay onchain or pay lightning")
		}
		s.now = at(s.now)
		switch c.Args[0] {
		case "onchain":
			id := c.Get("id", "")
			return s.apply(c, PaymentObserved{At: s.now, Payment: Payment{
				ID:            id,
				TxID:          "tx-" + id,
				Amount:        sats("amount"),
				Destination:   s.inv.OnchainAddress,
				Confirmations: int32(sats("conf")),
			}})
		case "lightning":
			msat := sats("amount").MSat()
			if c.Has("msat") {
				msat = MSat(sats("msat"))
			}
			return s.apply(c, LightningPaid{PaymentHash: c.Get("hash", ""), AmountMSat: msat, At: s.now})
		}
		fail("pay %s: onchain or lightning", c.Args[0])

	case "confirm":
		s.now = at(s.now)
		id := c.Get("id", "")
		for _, p := range s.inv.Payments {
			if p.ID == id {
				p.Confirmations = int32(sats("conf"))
				p.Dropped = false
				return s.apply(c, PaymentObserved{Payment: p, At: s.now})
			}
		}
		fail("no payment %q", id)

	case "drop":
		s.now = at(s.now)
		return s.apply(c, PaymentDropped{PaymentID: c.Get("id", ""), ReplacedByFee: c.Get("rbf", "") == "1", At: s.now})

	case "expire":
		s.now = at(s.inv.ExpiresAt)
		return s.apply(c, ExpiryReached{At: s.now})

	case "end-monitoring":
		s.now = at(s.inv.MonitorUntil)
		return s.apply(c, MonitoringEnded{At: s.now})

	case "mark-invalid":
		s.now = at(s.now)
		return s.apply(c, MarkedInvalid{At: s.now})

	case "transactions":
		if len(s.ledger) == 0 {
			return "none"
		}
		var b strings.Builder
		for _, tx := range s.ledger {
			fmt.Fprintf(&b, "%s %s amount=%d full=%d fee=%d fiat=%s %s rate=%s method=%s hash=%s comment=%q\n",
				tx.Type, tx.Status, tx.Amount, tx.FullAmount, tx.FeeAmount,
				tx.AmountInPreferredCurrency, tx.Currency, tx.Rate, tx.DepositMethod, tx.Hash, tx.Comment)
		}
		return b.String()
	}
	fail("unknown command %q", c.Name)
	return ""
}

func (s *invoiceScript) decimal(c *scriptCommand, key, def string) decimal.Decimal {
	d, err := decimal.NewFromString(c.Get(key, def))
	if err != nil {
		s.t.Fatalf("%s: %s: %v", c.Pos, key, err)
	}
	return d
}

// apply applies in to the script's invoice and describes the result.
func (s *invoiceScript) apply(c *scriptCommand, in InvoiceInput) string {
	s.t.Helper()
	next, effects, err := checkedApply(s.t, c.Pos, s.inv, in)
	if err != nil {
		return "error: " + sentinelName(err)
	}
	s.inv = next
	for _, e := range effects {
		switch e := e.(type) {
		case Settle:
			s.ledger = append(s.ledger, SettlementTransactions(&s.inv, e, in.inputTime())...)
		case PaidAgain:
			s.ledger = append(s.ledger, PaidAgainTransactions(&s.inv, e, in.inputTime())...)
		}
	}
	if len(effects) == 0 {
		return s.state()
	}
	return s.state() + "\n" + s.effects(effects)
}

// checkedApply is inv.Apply(in), checked for the properties that replay
// from the journal depends on.
func checkedApply(t *testing.T, pos string, inv Invoice, in InvoiceInput) (Invoice, []Effect, error) {
	t.Helper()
	before := cloneInvoice(inv)
	next, effects, err := inv.Apply(in)
	if !reflect.DeepEqual(inv, before) {
		t.Fatalf("%s: Apply(%T) modified its receiver", pos, in)
	}
	next2, effects2, err2 := inv.Apply(in)
	if !reflect.DeepEqual(next, next2) || !reflect.DeepEqual(effects, effects2) || fmt.Sprint(err) != fmt.Sprint(err2) {
		t.Fatalf("%s: Apply(%T) twice from the same state differs:\n%+v %v %v\n%+v %v %v", pos, in, next, effects, err, next2, effects2, err2)
	}
	if err != nil {
		if !reflect.DeepEqual(next, before) || effects != nil {
			t.Fatalf("%s: Apply(%T) failed with %v but changed the invoice or returned effects %v", pos, in, err, effects)
		}
		return next, effects, err
	}
	if len(inv.Payments) > 0 && len(next.Payments) > 0 && &inv.Payments[0] == &next.Payments[0] {
		t.Fatalf("%s: Apply(%T) returned an invoice sharing its receiver's payments", pos, in)
	}
	if !next.UpdatedAt.Equal(in.inputTime()) {
		t.Fatalf("%s: UpdatedAt = %s, want the input's time %s", pos, next.UpdatedAt, in.inputTime())
	}
	return next, effects, nil
}

// cloneInvoice copies inv deeply enough for the tests: the slices the
// state machine may touch.
func cloneInvoice(inv Invoice) Invoice {
	inv.Payments = append([]Payment(nil), inv.Payments...)
	inv.EnabledMethods = append([]PaymentMethod(nil), inv.EnabledMethods...)
	inv.Metadata = append([]byte(nil), inv.Metadata...)
	return inv
}

func (s *invoiceScript) state() string {
	out := fmt.Sprintf("%s %s paid=%d confirmed=%d", s.inv.Status, s.inv.AdditionalStatus, s.inv.TotalPaid(), s.inv.ConfirmedPaid())
	if s.inv.SettlementReverted {
		out += " reverted"
	}
	return out
}

func (s *invoiceScript) effects(effects []Effect) string {
	var lines []string
	for _, e := range effects {
		lines = append(lines, describeEffect(e))
	}
	return strings.Join(lines, "\n")
}

func describeEffect(e Effect) string {
	switch e := e.(type) {
	case Emit:
		out := "emit " + string(e.Type)
		if e.AdditionalStatus != StatusNone {
			out += " " + e.AdditionalStatus.String()
		}
		if e.IsUnderpaid {
			out += " isUnderpaid"
		}
		return out
	case Notice:
		out := map[NoticeType]string{NoticePaymentReceived: "notice payment-received", NoticePaymentSettled: "notice payment-settled", NoticeInvalid: "notice invalid"}[e.Type]
		if e.PaymentID != "" {
			out += " " + e.PaymentID
		}
		if e.AfterExpiration {
			out += " after-expiration"
		}
		if e.ManuallyMarked {
			out += " manually-marked"
		}
		return out
	case Settle:
		return fmt.Sprintf("settle full=%d fee=%d method=%s hash=%s", e.FullAmount, e.Fee, e.Method, e.Hash)
	case PaidAgain:
		return fmt.Sprintf("paid-again amount=%d fee=%d method=%s hash=%s", e.Amount, e.Fee, e.Method, e.Hash)
	case CancelLightning:
		return "cancel-lightning " + e.PaymentHash
	case ArmTimer:
		return "arm-timer " + since(e.At)
	case StopWatching:
		return "stop-watching"
	}
	return fmt.Sprintf("unknown effect %#v", e)
}

func since(at time.Time) string { return at.Sub(scriptEpoch).String() }

// sentinelName names err by its sentinel, for scripts.
func sentinelName(err error) string {
	for _, s := range []struct {
		name string
		err  error
	}{
		{"ErrInvoiceAlreadySettled", ErrInvoiceAlreadySettled},
		{"ErrInvoiceNotOpen", ErrInvoiceNotOpen},
		{"ErrExpiryTooEarly", ErrExpiryTooEarly},
		{"ErrMonitoringNotOver", ErrMonitoringNotOver},
		{"ErrUnknownPayment", ErrUnknownPayment},
		{"ErrNothingChanged", ErrNothingChanged},
	} {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return err.Error()
}
