package kassa

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// newTestInvoice returns a New invoice for amount sats created at
// scriptEpoch: 15 minutes to pay, 24 hours of monitoring, one
// confirmation, fee 1 %, no tolerance.
func newTestInvoice(t testing.TB, amount Sats) Invoice {
	t.Helper()
	req := InvoiceRequest{Currency: SATS}
	if amount > 0 {
		req.Amount, req.HasAmount = decimal.NewFromInt(int64(amount)), true
	}
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	store := scriptStore()
	inv, _, err := NewInvoice("inv1", &store, &req, InvoiceTerms{
		StoreRate:  decimal.NewFromInt(87000),
		Now:        scriptEpoch,
		Expiry:     DefaultInvoiceExpiry,
		Monitoring: DefaultMonitoring,
	})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// mustApply applies inputs in turn and returns the invoice and the
// effects of the last input.
func mustApply(t testing.TB, inv Invoice, inputs ...InvoiceInput) (Invoice, []Effect) {
	t.Helper()
	var effects []Effect
	for _, in := range inputs {
		var err error
		if inv, effects, err = inv.Apply(in); err != nil {
			t.Fatalf("Apply(%#v): %v", in, err)
		}
	}
	return inv, effects
}

func onchain(id string, amount Sats, conf int32, at time.Duration) PaymentObserved {
	return PaymentObserved{At: scriptEpoch.Add(at), Payment: Payment{
		ID: id, TxID: "tx-" + id, Amount: amount, Confirmations: conf, Destination: "bcrt1qtest",
	}}
}

// bogusInput is an input the state machine does not know.
type bogusInput struct{}

func (bogusInput) inputTime() time.Time { return scriptEpoch }

func TestApplyRefuses(t *testing.T) {
	fresh := newTestInvoice(t, 1000)
	processing, _ := mustApply(t, fresh, onchain("a", 1000, 0, time.Minute))
	settled, _ := mustApply(t, fresh, onchain("a", 1000, 1, time.Minute))
	expired, _ := mustApply(t, fresh, ExpiryReached{At: fresh.ExpiresAt})
	unwatched, _ := mustApply(t, expired, MonitoringEnded{At: fresh.MonitorUntil})
	invalid, _ := mustApply(t, fresh, MarkedInvalid{At: scriptEpoch.Add(time.Minute)})
	at := scriptEpoch.Add(2 * time.Minute)

	for _, tc := range []struct {
		name string
		inv  Invoice
		in   InvoiceInput
		want error  // a sentinel, or nil to check code
		code string // error code when want is nil
	}{
		{"expiry before ExpiresAt", fresh, ExpiryReached{At: fresh.ExpiresAt.Add(-time.Nanosecond)}, ErrExpiryTooEarly, ""},
		{"expiry of Processing", processing, ExpiryReached{At: fresh.ExpiresAt}, ErrInvoiceNotOpen, ""},
		{"expiry of Settled", settled, ExpiryReached{At: fresh.ExpiresAt}, ErrInvoiceNotOpen, ""},
		{"expiry of Expired", expired, ExpiryReached{At: fresh.ExpiresAt}, ErrInvoiceNotOpen, ""},
		{"expiry of Invalid", invalid, ExpiryReached{At: fresh.ExpiresAt}, ErrInvoiceNotOpen, ""},
		{"monitoring ended early, Processing", processing, MonitoringEnded{At: fresh.MonitorUntil.Add(-time.Nanosecond)}, ErrMonitoringNotOver, ""},
		{"monitoring ended early, Expired", expired, MonitoringEnded{At: fresh.MonitorUntil.Add(-time.Second)}, ErrMonitoringNotOver, ""},
		{"monitoring ended twice", unwatched, MonitoringEnded{At: fresh.MonitorUntil.Add(time.Hour)}, ErrNothingChanged, ""},
		{"monitoring ended, Settled", settled, MonitoringEnded{At: fresh.MonitorUntil}, ErrNothingChanged, ""},
		{"monitoring ended, Invalid", invalid, MonitoringEnded{At: fresh.MonitorUntil}, ErrNothingChanged, ""},
		{"marked invalid, Settled", settled, MarkedInvalid{At: at}, ErrInvoiceAlreadySettled, ""},
		{"marked invalid twice", invalid, MarkedInvalid{At: at}, ErrNothingChanged, ""},
		{"same output, same depth", processing, onchain("a", 1000, 0, 2*time.Minute), ErrNothingChanged, ""},
		{"same Lightning payment", mustApplyOne(t, fresh, LightningPaid{PaymentHash: "h", AmountMSat: 1_000_000, At: at}), LightningPaid{PaymentHash: "h", AmountMSat: 1_000_000, At: at}, ErrNothingChanged, ""},
		{"drop unknown payment", processing, PaymentDropped{PaymentID: "zz", At: at}, ErrUnknownPayment, ""},
		{"drop twice", mustApplyOne(t, processing, PaymentDropped{PaymentID: "a", At: at}), PaymentDropped{PaymentID: "a", At: at}, ErrNothingChanged, ""},
		{"payment without id", fresh, onchain("", 1000, 0, time.Minute), nil, Invalid},
		{"payment of nothing", fresh, onchain("a", 0, 0, time.Minute), nil, Invalid},
		{"negative payment", fresh, onchain("a", -1, 0, time.Minute), nil, Invalid},
		{"Lightning payment of nothing", fresh, LightningPaid{PaymentHash: "h", At: at}, nil, Invalid},
		{"unknown input", fresh, bogusInput{}, nil, Internal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, effects, err := checkedApply(t, tc.name, tc.inv, tc.in)
			switch {
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("Apply = %v, want %v", err, tc.want)
			case tc.want == nil && (err == nil || ErrorCode(err) != tc.code):
				t.Fatalf("Apply = %v, want a %s error", err, tc.code)
			}
			if effects != nil || !reflect.DeepEqual(next, tc.inv) {
				t.Fatalf("a refused input changed the invoice or returned effects %v", effects)
			}
		})
	}
}

func mustApplyOne(t testing.TB, inv Invoice, in InvoiceInput) Invoice {
	t.Helper()
	next, _ := mustApply(t, inv, in)
	return next
}

// TestSentinelCodes pins the codes the http package maps to statuses.
func TestSentinelCodes(t *testing.T) {
	for err, code := range map[*Error]string{
		ErrInvoiceAlreadySettled: Conflict,
		ErrInvoiceNotOpen:        Conflict,
		ErrExpiryTooEarly:        Conflict,
		ErrMonitoringNotOver:     Conflict,
		ErrUnknownPayment:        NotFound,
	} {
		if err.Code != code {
			t.Errorf("%v has code %s, want %s", err, err.Code, code)
		}
		if !errors.Is(fmt.Errorf("settle invoice x: %w", err), err) {
			t.Errorf("a wrapped %v is not itself", err)
		}
	}
	if errors.Is(ErrInvoiceNotOpen, ErrInvoiceAlreadySettled) {
		t.Error("two sentinels compare equal")
	}
}

// TestApplyDoesNotAlias checks that Apply never writes to the payments of
// its receiver, even when their slice has room to grow: a journal replay
// and the actor's current state may share one.
func TestApplyDoesNotAlias(t *testing.T) {
	base := newTestInvoice(t, 1000)
	base.Payments = make([]Payment, 1, 8)
	base.Payments[0] = Payment{ID: "a", Method: MethodOnchain, TxID: "tx-a", Amount: 400, ReceivedAt: scriptEpoch}
	want := cloneInvoice(base)
	spare := base.Payments[:cap(base.Payments)]

	for _, in := range []InvoiceInput{
		onchain("b", 600, 0, time.Minute),                     // appends
		onchain("a", 400, 3, time.Minute),                     // updates in place
		PaymentDropped{PaymentID: "a", At: scriptEpoch},       // marks dropped
		LightningPaid{PaymentHash: "h", AmountMSat: 600_000},  // appends
		ExpiryReached{At: base.ExpiresAt},                     // leaves them be
		MarkedInvalid{At: scriptEpoch.Add(time.Minute)},       // leaves them be
		onchain("c", 5000, 1, time.Minute),                    // settles
		PaymentDropped{PaymentID: "a", At: base.MonitorUntil}, // marks dropped
	} {
		next, _, err := base.Apply(in)
		if err != nil {
			t.Fatalf("Apply(%#v): %v", in, err)
		}
		if !reflect.DeepEqual(base, want) {
			t.Fatalf("Apply(%T) changed its receiver", in)
		}
		for i := len(base.Payments); i < len(spare); i++ {
			if spare[i] != (Payment{}) {
				t.Fatalf("Apply(%T) wrote into the spare capacity of the receiver's payments: %+v", in, spare[i])
			}
		}
		if len(next.Payments) > 0 {
			next.Payments[0].Amount = 999_999
			if base.Payments[0].Amount != 400 {
				t.Fatalf("Apply(%T) returned payments that share the receiver's array", in)
			}
		}
	}
}

// TestApplyDeterministic applies the same inputs twice, from the same
// states, and replays a recorded journal: replay from the journal depends
// on equal results.
func TestApplyDeterministic(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		start := newTestInvoice(t, Sats(rng.IntN(3))*5000)
		inv := start
		var journal []InvoiceInput
		for _, in := range randomInputs(rng, start, 40) {
			next, _, err := checkedApply(t, fmt.Sprintf("seed %d", seed), inv, in)
			if err == nil {
				journal = append(journal, in)
				inv = next
			}
		}
		replayed := start
		for _, in := range journal {
			var err error
			if replayed, _, err = replayed.Apply(in); err != nil {
				t.Fatalf("seed %d: replay of %#v: %v", seed, in, err)
			}
		}
		if !reflect.DeepEqual(replayed, inv) {
			t.Fatalf("seed %d: replay differs:\n%+v\n%+v", seed, replayed, inv)
		}
	}
}

// TestApplyInvariants walks random input sequences and checks, at every
// step, the rules of docs/api.md's invoice states and webhook events that
// hold whatever the order of inputs.
func TestApplyInvariants(t *testing.T) {
	allowed := map[InvoiceStatus][]InvoiceStatus{
		InvoiceNew:        {InvoiceNew, InvoiceProcessing, InvoiceSettled, InvoiceExpired, InvoiceInvalid},
		InvoiceProcessing: {InvoiceProcessing, InvoiceSettled, InvoiceInvalid, InvoiceNew},
		InvoiceExpired:    {InvoiceExpired, InvoiceSettled, InvoiceInvalid},
		// A reorg or double spend takes an on-chain settlement back.
		InvoiceSettled: {InvoiceSettled, InvoiceProcessing, InvoiceNew},
		InvoiceInvalid: {InvoiceInvalid},
	}
	steps := 0
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 11))
		prev := newTestInvoice(t, Sats(rng.IntN(3))*5000)
		prev.Tolerance = []decimal.Decimal{decimal.Zero, decimalOf("0.25"), decimalOf("1.5")}[rng.IntN(3)]
		prev.ConfirmationsRequired = int32(rng.IntN(3))
		if rng.IntN(2) == 0 {
			prev.LightningInvoice, prev.PaymentHash = "lnbcrt1test", "hash1"
		}
		for _, in := range randomInputs(rng, prev, 30) {
			pos := fmt.Sprintf("seed %d, %s after %T", seed, prev.Status, in)
			next, effects, err := checkedApply(t, pos, prev, in)
			if err != nil {
				continue
			}
			steps++
			checkStep(t, pos, allowed, prev, next, effects)
			prev = next
		}
	}
	if steps < 3000 {
		t.Errorf("only %d steps applied", steps)
	}
}

func checkStep(t *testing.T, pos string, allowed map[InvoiceStatus][]InvoiceStatus, prev, next Invoice, effects []Effect) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: %s\neffects: %v\nbefore: %+v\nafter: %+v", pos, fmt.Sprintf(format, args...), effects, prev, next)
	}
	ok := false
	for _, s := range allowed[prev.Status] {
		ok = ok || s == next.Status
	}
	if !ok {
		fail("%s → %s is not a transition", prev.Status, next.Status)
	}
	// The Lightning invoice is cancelled once, when the invoice stops
	// waiting for it (expired, invalid, settled on-chain), unless it has
	// none or it was paid.
	var cancels, rest []Effect
	var notices []Notice
	for _, e := range effects {
		switch e := e.(type) {
		case CancelLightning:
			cancels = append(cancels, e)
		case Notice:
			notices = append(notices, e)
		default:
			rest = append(rest, e)
		}
	}
	checkNotices(fail, prev, next, notices)
	paidByLightning := false
	for _, p := range next.Payments {
		paidByLightning = paidByLightning || p.Method == MethodLightning
	}
	wantCancel := next.PaymentHash != "" && !paidByLightning &&
		(prev.Status == InvoiceNew || prev.Status == InvoiceProcessing) && next.Status != prev.Status && next.Status != InvoiceProcessing &&
		!(next.Status == InvoiceSettled && prev.SettlementReverted) // cancelled at the first settlement
	if wantCancel != (len(cancels) == 1) || len(cancels) > 1 || len(cancels) == 1 && cancels[0] != (CancelLightning{PaymentHash: next.PaymentHash}) {
		fail("cancel effects %v, want %v", cancels, wantCancel)
	}
	effects = rest
	var emits []Emit
	var settles []Settle
	for _, e := range effects {
		switch e := e.(type) {
		case Emit:
			emits = append(emits, e)
		case Settle:
			settles = append(settles, e)
		}
	}
	received, confirmed := next.TotalPaid(), next.ConfirmedPaid()
	switch {
	case next.Status == prev.Status:
		if len(emits) > 0 || len(settles) > 0 {
			fail("events without a change of status")
		}
	case prev.Status == InvoiceSettled:
		// Taken back: only when on-chain money no longer covers it, with
		// no event, marked, and waiting for a deadline again.
		if prev.SettledBy != MethodOnchain || Covers(next.Amount, confirmed, next.Tolerance) || !next.SettlementReverted {
			fail("settlement taken back with %d confirmed of %d (settled by %s)", confirmed, next.Amount, prev.SettledBy)
		}
		if at, ok := next.Deadline(); !ok || !reflect.DeepEqual(effects, []Effect{ArmTimer{At: at}}) {
			fail("effects %v, want only the deadline timer", effects)
		}
	case next.Status == InvoiceSettled && prev.SettlementReverted:
		// Settled again after a reorg: nothing is sent or counted twice.
		if len(emits) > 0 || len(settles) > 0 || !next.MonitoringDone {
			fail("settled again with events %v, settles %v", emits, settles)
		}
		if !Covers(next.Amount, confirmed, next.Tolerance) {
			fail("settled again with %d confirmed of %d", confirmed, next.Amount)
		}
	case next.Status == InvoiceNew:
		// Back from Processing: what it received no longer covers it.
		if !reflect.DeepEqual(effects, []Effect{ArmTimer{At: next.ExpiresAt}}) {
			fail("effects %v, want the expiry timer", effects)
		}
	case next.Status == InvoiceSettled:
		want := []EventType{EventSettled}
		if prev.Status == InvoiceNew {
			want = []EventType{EventProcessing, EventSettled}
		}
		if got := emitTypes(emits); !reflect.DeepEqual(got, want) {
			fail("events %v, want %v", got, want)
		}
		additional := StatusNone
		switch {
		case prev.Status == InvoiceExpired:
			additional = StatusPaidAfterExpiration
		case next.Amount > 0 && confirmed > next.Amount:
			// Only final payments count: an unconfirmed extra output
			// does not make the invoice Overpaid.
			additional = StatusOverpaid
		}
		if next.AdditionalStatus != additional || emits[len(emits)-1].AdditionalStatus != additional {
			fail("additional status %s, event %s, want %s", next.AdditionalStatus, emits[len(emits)-1].AdditionalStatus, additional)
		}
		if !Covers(next.Amount, confirmed, next.Tolerance) {
			fail("settled with %d confirmed of %d", confirmed, next.Amount)
		}
		if len(settles) != 1 || settles[0].FullAmount != confirmed || settles[0].Fee != PercentOf(confirmed, next.PercentFee) {
			fail("settle effects %+v, want one of %d confirmed with fee %d", settles, confirmed, PercentOf(confirmed, next.PercentFee))
		}
		if !next.MonitoringDone || !next.SettledAt.Equal(next.UpdatedAt) {
			fail("settled without MonitoringDone and SettledAt")
		}
	case next.Status == InvoiceProcessing:
		if !reflect.DeepEqual(effects, []Effect{Emit{Type: EventProcessing}, ArmTimer{At: next.MonitorUntil}}) {
			fail("effects %v, want event Processing and the monitoring timer", effects)
		}
		if !Covers(next.Amount, received, next.Tolerance) || Covers(next.Amount, confirmed, next.Tolerance) {
			fail("Processing with %d received, %d confirmed of %d", received, confirmed, next.Amount)
		}
	case next.Status == InvoiceExpired:
		underpaid := received > 0
		want := Emit{Type: EventExpired, IsUnderpaid: underpaid}
		if underpaid {
			want.AdditionalStatus = StatusUnderpaid
		}
		if !reflect.DeepEqual(effects, []Effect{want, ArmTimer{At: next.MonitorUntil}}) {
			fail("effects %v, want %v and the monitoring timer", effects, want)
		}
		if next.AdditionalStatus != want.AdditionalStatus {
			fail("additional status %s, want %s", next.AdditionalStatus, want.AdditionalStatus)
		}
	case next.Status == InvoiceInvalid:
		if len(emits) > 0 || len(settles) > 0 || !next.MonitoringDone {
			fail("Invalid with events or still watched")
		}
	}
	if next.Status == InvoiceNew && Covers(next.Amount, received, next.Tolerance) {
		fail("still New with %d received of %d", received, next.Amount)
	}
	var paidAgain []PaidAgain
	for _, e := range effects {
		if e, ok := e.(PaidAgain); ok {
			paidAgain = append(paidAgain, e)
		}
	}
	if prev.Status == InvoiceSettled && next.Status == InvoiceSettled {
		// Money paid again is never absorbed: it turns the invoice
		// Overpaid and goes to the ledger, without a second settlement.
		want := prev.AdditionalStatus
		if len(paidAgain) > 0 {
			want = StatusOverpaid
		}
		if next.AdditionalStatus != want || !next.SettledAt.Equal(prev.SettledAt) {
			fail("a settled invoice changed its settlement: %s, want %s", next.AdditionalStatus, want)
		}
	} else if len(paidAgain) > 0 && prev.Status != InvoiceSettled {
		fail("paid again before the invoice settled")
	}
	// Every satoshi that is final on a settled invoice is in the ledger,
	// once: accounted payments stay accounted, and what this input
	// accounted is what its effects record.
	var newlyAccounted Sats
	for i, p := range next.Payments {
		if next.Status == InvoiceSettled && next.Final(&p) && !p.Accounted {
			fail("final payment %s of a settled invoice is not accounted", p.ID)
		}
		if i < len(prev.Payments) && prev.Payments[i].Accounted && !p.Accounted {
			fail("payment %s lost its accounting", p.ID)
		}
		if p.Accounted && (i >= len(prev.Payments) || !prev.Payments[i].Accounted) {
			newlyAccounted += p.Amount
		}
	}
	var recorded Sats
	for _, e := range settles {
		recorded += e.FullAmount
	}
	for _, e := range paidAgain {
		recorded += e.Amount
		if e.Fee != PercentOf(e.Amount, next.PercentFee) {
			fail("paid again %+v: fee %d, want %d", e, e.Fee, PercentOf(e.Amount, next.PercentFee))
		}
	}
	// Settling again after a reorg records nothing: the first
	// settlement's lines already hold the money.
	resettled := prev.SettlementReverted && prev.Status != InvoiceSettled && next.Status == InvoiceSettled
	if recorded != newlyAccounted && !(resettled && recorded == 0) {
		fail("ledger records %d sat, but %d sat became accounted", recorded, newlyAccounted)
	}
}

func emitTypes(emits []Emit) []EventType {
	var types []EventType
	for _, e := range emits {
		types = append(types, e.Type)
	}
	return types
}

// randomInputs returns n inputs for inv at increasing times: payments of
// a few outputs at varying depths, drops, Lightning payments, timers
// early and late, and now and then a person marking it invalid.
func randomInputs(rng *rand.Rand, inv Invoice, n int) []InvoiceInput {
	amount := inv.Amount
	if amount == 0 {
		amount = 5000
	}
	amounts := []Sats{amount, amount / 2, amount / 3, amount - 1, amount + 7, 1}
	ids := []string{"a", "b", "c", "d"}
	at := inv.CreatedAt
	var inputs []InvoiceInput
	for range n {
		at = at.Add(time.Duration(rng.Int64N(int64(90 * time.Minute))))
		switch r := rng.IntN(20); {
		case r < 9:
			id := ids[rng.IntN(len(ids))]
			inputs = append(inputs, PaymentObserved{At: at, Payment: Payment{
				ID: id, TxID: "tx-" + id, Amount: amounts[rng.IntN(len(amounts))], Confirmations: int32(rng.IntN(3)),
			}})
		case r < 12:
			inputs = append(inputs, PaymentDropped{PaymentID: ids[rng.IntN(len(ids))], At: at})
		case r < 14:
			inputs = append(inputs, LightningPaid{PaymentHash: fmt.Sprintf("h%d", rng.IntN(3)), AmountMSat: amounts[rng.IntN(len(amounts))].MSat(), At: at})
		case r < 17:
			inputs = append(inputs, ExpiryReached{At: inv.ExpiresAt.Add(time.Duration(rng.Int64N(int64(time.Hour))) - 10*time.Minute)})
		case r < 19:
			inputs = append(inputs, MonitoringEnded{At: inv.MonitorUntil.Add(time.Duration(rng.Int64N(int64(time.Hour))) - 10*time.Minute)})
		default:
			inputs = append(inputs, MarkedInvalid{At: at})
		}
	}
	return inputs
}

// TestPaidAgainAfterLegacySettlement checks that an invoice settled
// before payments were marked accounted does not put its settled money in
// the ledger again when it is paid a second time.
func TestPaidAgainAfterLegacySettlement(t *testing.T) {
	inv := newTestInvoice(t, 2000)
	inv.Status, inv.SettledAt, inv.SettledBy = InvoiceSettled, scriptEpoch.Add(time.Minute), MethodOnchain
	inv.MonitoringDone = true
	inv.Payments = []Payment{{ID: "a", Method: MethodOnchain, TxID: "tx-a", Amount: 2000, Confirmations: 1, ReceivedAt: scriptEpoch.Add(time.Minute)}}
	next, effects, err := inv.Apply(LightningPaid{PaymentHash: "h1", AmountMSat: 500_000, At: scriptEpoch.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	// The payment's notices first (Greenfield's InvoiceReceivedPayment and
	// InvoicePaymentSettled), then only the 500 sat paid again.
	want := []Effect{Notice{Type: NoticePaymentReceived, PaymentID: "h1"}, Notice{Type: NoticePaymentSettled, PaymentID: "h1"},
		PaidAgain{Amount: 500, Fee: 5, Method: MethodLightning, Hash: "h1"}}
	if !reflect.DeepEqual(effects, want) {
		t.Fatalf("effects = %v, want the payment's notices and only the 500 sat paid again", effects)
	}
	if !next.Payments[0].Accounted || next.AdditionalStatus != StatusOverpaid {
		t.Fatalf("after: %+v", next)
	}
}

// TestCanMarkInvalidIsTheTransitionsPrecondition: for every status,
// CanMarkInvalid answers what marking the invoice invalid does: true
// exactly when the transition changes the invoice. The dashboard offers
// the button by CanMarkInvalid, so it cannot drift from the rule.
func TestCanMarkInvalidIsTheTransitionsPrecondition(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, st := range []InvoiceStatus{InvoiceNew, InvoiceProcessing, InvoiceSettled, InvoiceExpired, InvoiceInvalid} {
		inv := Invoice{ID: "inv1", Status: st}
		_, _, err := inv.Apply(MarkedInvalid{At: now})
		if got, want := inv.CanMarkInvalid(), err == nil; got != want {
			t.Errorf("%s: CanMarkInvalid = %v, but marking it invalid gave %v", st, got, err)
		}
	}
}

// checkNotices checks the notices of one step: a payment-received notice
// for each payment new in next, a payment-settled one for each payment
// final in next and not in prev, each after expiration when prev was
// Expired or Invalid; an invalid notice exactly when the step made the
// invoice Invalid.
func checkNotices(fail func(string, ...any), prev, next Invoice, notices []Notice) {
	late := prev.Status == InvoiceExpired || prev.Status == InvoiceInvalid
	var want []Notice
	if next.Status == InvoiceInvalid && prev.Status != InvoiceInvalid {
		for _, n := range notices {
			if n.Type == NoticeInvalid {
				want = append(want, Notice{Type: NoticeInvalid, ManuallyMarked: n.ManuallyMarked})
			}
		}
		if len(want) != 1 {
			fail("made Invalid with notices %v, want one invalid notice", notices)
		}
	}
	for i := range next.Payments {
		p := &next.Payments[i]
		var before *Payment
		for j := range prev.Payments {
			if prev.Payments[j].ID == p.ID {
				before = &prev.Payments[j]
			}
		}
		if before == nil {
			want = append(want, Notice{Type: NoticePaymentReceived, PaymentID: p.ID, AfterExpiration: late})
		}
		if next.Final(p) && (before == nil || !prev.Final(before)) {
			want = append(want, Notice{Type: NoticePaymentSettled, PaymentID: p.ID, AfterExpiration: late})
		}
	}
	if len(notices) != len(want) {
		fail("notices %v, want %v", notices, want)
	}
	for _, w := range want {
		if !slices.Contains(notices, w) {
			fail("notices %v, want %v", notices, want)
		}
	}
}

// TestArchive: archiving hides nothing of the invoice's life: any status
// may be archived, once, without effects, and an archived invoice still
// settles.
func TestArchive(t *testing.T) {
	fresh := newTestInvoice(t, 1000)
	at := scriptEpoch.Add(time.Minute)
	archived, effects := mustApply(t, fresh, Archived{At: at})
	if !archived.Archived || archived.Status != InvoiceNew || len(effects) != 0 || !archived.UpdatedAt.Equal(at) {
		t.Errorf("archived: %v, %s, effects %v, updated %s", archived.Archived, archived.Status, effects, archived.UpdatedAt)
	}
	if _, _, err := archived.Apply(Archived{At: at}); !errors.Is(err, ErrNothingChanged) {
		t.Errorf("archived twice: %v, want ErrNothingChanged", err)
	}
	settled, _ := mustApply(t, archived, onchain("a", 1000, 6, 2*time.Minute))
	if settled.Status != InvoiceSettled || !settled.Archived {
		t.Errorf("paid after archiving: %s, archived %v", settled.Status, settled.Archived)
	}
	invalid, _ := mustApply(t, fresh, MarkedInvalid{At: at}, Archived{At: at})
	if !invalid.Archived || invalid.Status != InvoiceInvalid {
		t.Errorf("invalid, archived: %s, %v", invalid.Status, invalid.Archived)
	}
}
