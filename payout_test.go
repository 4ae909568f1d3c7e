package kassa

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa/lightning/bolt11"
)

var payoutEpoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testBOLT11 encodes an invoice of msat (nil: no amount) on net, made at
// payoutEpoch and valid for an hour.
func testBOLT11(t *testing.T, net *chaincfg.Params, msat *uint64) string {
	t.Helper()
	key, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	hash, secret, desc, expiry := [32]byte{1, 2, 3}, [32]byte{4, 5, 6}, "refund", time.Hour
	inv := &bolt11.Invoice{Net: net, MilliSat: msat, Timestamp: payoutEpoch, PaymentHash: &hash, PaymentAddr: &secret,
		Description: &desc, ExpiryTime: &expiry}
	s, err := inv.Encode(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func u64(v uint64) *uint64 { return &v }

func TestParseDestination(t *testing.T) {
	net := &chaincfg.RegressionNetParams
	pr := testBOLT11(t, net, u64(1_500_000))
	d, err := ParseDestination("lightning:"+pr, net, payoutEpoch.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if d.Kind != DestinationBOLT11 || d.Amount != 1_500_000 || d.PaymentHash == "" || !d.ExpiresAt.Equal(payoutEpoch.Add(time.Hour)) {
		t.Fatalf("BOLT11 destination: %+v", d)
	}
	if d, err := ParseDestination("Alice@Example.com", net, payoutEpoch); err != nil || d.Kind != DestinationLNURL || d.Address != "alice@example.com" {
		t.Fatalf("Lightning address: %+v, %v", d, err)
	}
	if d, err := ParseDestination("bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080", net, payoutEpoch); err != nil || d.Kind != DestinationOnchain {
		t.Fatalf("regtest address: %+v, %v", d, err)
	}
	for _, tc := range []struct{ name, raw string }{
		{"empty", " "},
		{"mainnet address on regtest", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"},
		{"mainnet invoice on regtest", testBOLT11(t, &chaincfg.MainNetParams, u64(1000))},
		{"amountless invoice", testBOLT11(t, net, nil)},
		{"fraction of a satoshi", testBOLT11(t, net, u64(1500))},
		{"garbage", "hello"},
		{"bad Lightning address", "a b@example.com"},
	} {
		_, err := ParseDestination(tc.raw, net, payoutEpoch)
		if ErrorCode(err) != Invalid {
			t.Errorf("%s: err = %v, want invalid", tc.name, err)
		}
	}
	if _, err := ParseDestination(pr, net, payoutEpoch.Add(time.Hour)); ErrorCode(err) != Invalid {
		t.Errorf("expired invoice: err = %v, want invalid", err)
	}
	if _, err := ParseDestination("bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", net, payoutEpoch); err == nil || ErrorMessage(err) != "destination: is a bitcoin address of another network than this server's (regtest)" {
		t.Errorf("another network's address: %v", err)
	}
}

func satsPullPayment(amount int64) *PullPayment {
	return &PullPayment{ID: "pp1", StoreID: "s1", InvoiceID: "inv1", Currency: SATS, Amount: decimal.NewFromInt(amount), CreatedAt: payoutEpoch}
}

func TestClaimPayoutOfBOLT11TakesItsAmount(t *testing.T) {
	pp := satsPullPayment(2000)
	dest := Destination{Kind: DestinationBOLT11, Amount: 1_500_000, PaymentHash: "ab"}
	p, err := ClaimPayout("po1", pp, dest, decimal.Zero, decimal.Zero, payoutEpoch)
	if err != nil {
		t.Fatal(err)
	}
	if p.Amount != 1500 || !p.Claimed.Equal(dec("1500")) || !pp.Claimed.Equal(dec("1500")) || p.State != PayoutAwaitingApproval {
		t.Fatalf("payout %+v, pull payment claimed %s", p, pp.Claimed)
	}
	if _, err := ClaimPayout("po2", pp, dest, decimal.Zero, decimal.Zero, payoutEpoch); ErrorCode(err) != Invalid {
		t.Fatalf("a second invoice above what is left: %v", err)
	}
	if _, err := ClaimPayout("po2", pp, Destination{Kind: DestinationLNURL, Address: "a@b.c"}, dec("100"), decimal.Zero, payoutEpoch); err != nil {
		t.Fatal(err)
	}
	p3, err := ClaimPayout("po3", pp, Destination{Kind: DestinationLNURL, Address: "a@b.c"}, decimal.Zero, decimal.Zero, payoutEpoch)
	if err != nil || p3.Amount != 400 {
		t.Fatalf("claim of what is left: %+v, %v", p3, err)
	}
	if _, err := ClaimPayout("po4", pp, Destination{Kind: DestinationLNURL, Address: "a@b.c"}, decimal.Zero, decimal.Zero, payoutEpoch); err != ErrPullPaymentSpent {
		t.Fatalf("claim of a spent pull payment: %v", err)
	}
}

func TestFiatPayoutIsConvertedAtApproval(t *testing.T) {
	pp := &PullPayment{ID: "pp1", StoreID: "s1", Currency: USD, Amount: dec("20"), CreatedAt: payoutEpoch}
	p, err := ClaimPayout("po1", pp, Destination{Kind: DestinationLNURL, Address: "a@b.c"}, decimal.Zero, decimal.Zero, payoutEpoch)
	if err != nil {
		t.Fatal(err)
	}
	if p.Amount != 0 {
		t.Fatalf("a fiat claim fixed its satoshis before approval: %d", p.Amount)
	}
	next, effects, err := p.Apply(PayoutApprove{Rate: dec("60000"), FeeLimit: 10, At: payoutEpoch.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	// 20 USD at 60,000 USD/BTC: 33,333.33 sat, rounded up.
	if next.Amount != 33_334 || !next.Rate.Equal(dec("60000")) || next.Debited != 33_344 || next.FeeLimit != 10 {
		t.Fatalf("approved: %+v", next)
	}
	if !reflect.DeepEqual(effects, []PayoutEffect{DebitBalance{Amount: 33_334}, ChargeNetworkFee{Amount: 10}, SendPayout{}}) {
		t.Fatalf("effects %#v", effects)
	}
	if _, _, err := p.Apply(PayoutApprove{At: payoutEpoch}); ErrorCode(err) != Unavailable {
		t.Fatalf("approval without a rate: %v", err)
	}
}

func mustPayout(t *testing.T, p Payout, inputs ...PayoutInput) (Payout, []PayoutEffect) {
	t.Helper()
	var effects []PayoutEffect
	for _, in := range inputs {
		var err error
		if p, effects, err = p.Apply(in); err != nil {
			t.Fatalf("Apply(%#v): %v", in, err)
		}
	}
	return p, effects
}

func awaiting(t *testing.T) Payout {
	p, err := ClaimPayout("po1", satsPullPayment(1000), Destination{Kind: DestinationLNURL, Address: "a@b.c"}, decimal.Zero, decimal.Zero, payoutEpoch)
	if err != nil {
		t.Fatal(err)
	}
	return *p
}

func TestPayoutTransitions(t *testing.T) {
	at := func(m int) time.Time { return payoutEpoch.Add(time.Duration(m) * time.Minute) }
	approve := PayoutApprove{FeeLimit: 5, At: at(1)}
	attempt := PayoutAttempt{PaymentRequest: "lnbcrt1", PaymentHash: "aa", At: at(2)}
	for _, tc := range []struct {
		name    string
		inputs  []PayoutInput
		state   PayoutState
		effects []PayoutEffect
		debited Sats
	}{
		{"approved: amount and fee limit debited", []PayoutInput{approve}, PayoutApproved, []PayoutEffect{DebitBalance{1000}, ChargeNetworkFee{5}, SendPayout{}}, 1005},
		{"approved without a fee limit", []PayoutInput{PayoutApprove{At: at(1)}}, PayoutApproved, []PayoutEffect{DebitBalance{1000}, SendPayout{}}, 1000},
		{"attempt recorded", []PayoutInput{approve, attempt}, PayoutInProgress, nil, 1005},
		{"succeeded: unused fee limit back", []PayoutInput{approve, attempt, PayoutSucceeded{Preimage: "pp", NetworkFee: 3, At: at(3)}}, PayoutCompleted, []PayoutEffect{ReturnUnusedFee{2}}, 0},
		{"succeeded without a fee: fee limit back", []PayoutInput{approve, attempt, PayoutSucceeded{At: at(3)}}, PayoutCompleted, []PayoutEffect{ReturnUnusedFee{5}}, 0},
		{"succeeded at the fee limit", []PayoutInput{approve, attempt, PayoutSucceeded{NetworkFee: 5, At: at(3)}}, PayoutCompleted, nil, 0},
		{"succeeded above the fee limit: the rest charged", []PayoutInput{approve, attempt, PayoutSucceeded{NetworkFee: 7, At: at(3)}}, PayoutCompleted, []PayoutEffect{ChargeNetworkFee{2}}, 0},
		{"failed: money and claim back", []PayoutInput{approve, attempt, PayoutPaymentFailed{Reason: "no route", At: at(3)}}, PayoutFailed, []PayoutEffect{CreditBalance{1005}, ReleaseClaim{dec("1000")}}, 0},
		{"failed before any attempt", []PayoutInput{approve, PayoutPaymentFailed{Reason: "unreachable", At: at(3)}}, PayoutFailed, []PayoutEffect{CreditBalance{1005}, ReleaseClaim{dec("1000")}}, 0},
		{"cancelled awaiting approval: claim back only", []PayoutInput{PayoutCancel{At: at(1)}}, PayoutCancelled, []PayoutEffect{ReleaseClaim{dec("1000")}}, 0},
		{"cancelled approved: money back", []PayoutInput{approve, PayoutCancel{At: at(2)}}, PayoutCancelled, []PayoutEffect{CreditBalance{1005}, ReleaseClaim{dec("1000")}}, 0},
		{"marked paid approved: money back, claim kept", []PayoutInput{approve, PayoutMarkPaid{At: at(2)}}, PayoutCompleted, []PayoutEffect{CreditBalance{1005}}, 0},
		{"marked paid awaiting approval", []PayoutInput{PayoutMarkPaid{At: at(2)}}, PayoutCompleted, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, effects := mustPayout(t, awaiting(t), tc.inputs...)
			if p.State != tc.state || p.Debited != tc.debited || !reflect.DeepEqual(effects, tc.effects) {
				t.Fatalf("state %s debited %d effects %#v; want %s %d %#v", p.State, p.Debited, effects, tc.state, tc.debited, tc.effects)
			}
			// Replay: the same inputs on the same state give the same
			// payout, so the journal's inputs rebuild it.
			again, _ := mustPayout(t, awaiting(t), tc.inputs...)
			if !reflect.DeepEqual(p, again) {
				t.Fatalf("replay differs:\n%+v\n%+v", p, again)
			}
		})
	}
}

func TestPayoutRefusedTransitions(t *testing.T) {
	at := payoutEpoch.Add(time.Minute)
	approved, _ := mustPayout(t, awaiting(t), PayoutApprove{At: at})
	sent, _ := mustPayout(t, approved, PayoutAttempt{PaymentHash: "aa", At: at})
	done, _ := mustPayout(t, sent, PayoutSucceeded{At: at})
	failed, _ := mustPayout(t, sent, PayoutPaymentFailed{At: at})
	for _, tc := range []struct {
		name string
		p    Payout
		in   PayoutInput
		want error
	}{
		{"approve twice", approved, PayoutApprove{At: at}, ErrPayoutNotAwaitingApproval},
		{"attempt before approval", awaiting(t), PayoutAttempt{At: at}, ErrPayoutNotApproved},
		{"attempt twice", sent, PayoutAttempt{At: at}, ErrPayoutNotApproved},
		{"success without attempt", approved, PayoutSucceeded{At: at}, ErrPayoutNoAttempt},
		{"cancel once sent", sent, PayoutCancel{At: at}, ErrPayoutSent},
		{"mark paid once sent", sent, PayoutMarkPaid{At: at}, ErrPayoutSent},
		{"cancel completed", done, PayoutCancel{At: at}, ErrPayoutFinal},
		{"fail completed", done, PayoutPaymentFailed{At: at}, ErrPayoutNotApproved},
		{"fail twice", failed, PayoutPaymentFailed{At: at}, ErrPayoutNotApproved},
		{"mark failed paid", failed, PayoutMarkPaid{At: at}, ErrPayoutFinal},
	} {
		next, effects, err := tc.p.Apply(tc.in)
		if err != tc.want || effects != nil || !reflect.DeepEqual(next, tc.p) {
			t.Errorf("%s: err %v effects %v changed %v; want %v", tc.name, err, effects, !reflect.DeepEqual(next, tc.p), tc.want)
		}
	}
}

func TestPayoutTransactionsMoveTheBalance(t *testing.T) {
	st := &Store{ID: "s1", Currency: USD}
	p, _ := mustPayout(t, awaiting(t), PayoutApprove{At: payoutEpoch})
	effects := []PayoutEffect{DebitBalance{1000}, CreditBalance{1000}, ChargeNetworkFee{3}, ReturnUnusedFee{1}, ReleaseClaim{dec("1")}, SendPayout{}}
	lines := PayoutTransactions(st, &p, effects, dec("50000"), payoutEpoch)
	var delta Sats
	var types []TransactionType
	for _, l := range lines {
		delta += l.BalanceDelta()
		types = append(types, l.Type)
	}
	if delta != -2 || !reflect.DeepEqual(types, []TransactionType{TransactionRefund, TransactionRefundReturned, TransactionNetworkFee, TransactionRefundReturned}) {
		t.Fatalf("delta %d types %v", delta, types)
	}
	if !lines[0].AmountInPreferredCurrency.Equal(dec("0.5")) || lines[0].InvoiceID != "inv1" {
		t.Fatalf("refund line %+v", lines[0])
	}
}

func TestPayoutEvents(t *testing.T) {
	for _, tc := range []struct {
		from, to PayoutState
		want     []EventType
	}{
		{0, PayoutAwaitingApproval, []EventType{GreenfieldPayoutCreated}},
		{0, PayoutApproved, []EventType{GreenfieldPayoutCreated, GreenfieldPayoutApproved}},
		{PayoutAwaitingApproval, PayoutApproved, []EventType{GreenfieldPayoutApproved}},
		{PayoutApproved, PayoutInProgress, []EventType{GreenfieldPayoutUpdated}},
		{PayoutInProgress, PayoutFailed, []EventType{GreenfieldPayoutUpdated}},
		{PayoutAwaitingApproval, PayoutCompleted, []EventType{GreenfieldPayoutUpdated}},
		{PayoutApproved, PayoutApproved, nil},
	} {
		if got := PayoutEvents(tc.from, tc.to); !slices.Equal(got, tc.want) {
			t.Errorf("%s → %s: %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
	if GreenfieldPayoutState(PayoutFailed) != "Cancelled" || GreenfieldPayoutState(PayoutApproved) != "AwaitingPayment" || GreenfieldPayoutState(PayoutInProgress) != "InProgress" {
		t.Error("BTCPay's payout state names")
	}
}

// TestOnchainPayoutRecordsItsTransaction: an on-chain payout's attempt
// is its signed transaction, whose fee it records and which may not pay
// more than the fee limit; success charges that fee and gives back the
// rest of the limit.
func TestOnchainPayoutRecordsItsTransaction(t *testing.T) {
	pp := satsPullPayment(5000)
	dest := Destination{Kind: DestinationOnchain, Address: "bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080"}
	p, err := ClaimPayout("po1", pp, dest, decimal.Zero, decimal.Zero, payoutEpoch)
	if err != nil {
		t.Fatal(err)
	}
	at := payoutEpoch.Add(time.Minute)
	approved, _ := mustPayout(t, *p, PayoutApprove{FeeLimit: 300, At: at})
	for _, bad := range []PayoutAttempt{
		{RawTx: "00", TxID: "aa", Fee: 301, At: at},            // beyond the limit
		{PaymentRequest: "lnbcrt1", PaymentHash: "aa", At: at}, // not a transaction
		{RawTx: "00", At: at},                                  // no txid
	} {
		if _, _, err := approved.Apply(bad); ErrorCode(err) != Invalid {
			t.Errorf("attempt %+v: err = %v, want invalid", bad, err)
		}
	}
	sent, _ := mustPayout(t, approved, PayoutAttempt{RawTx: "00", TxID: "aa", Fee: 141, At: at})
	if sent.State != PayoutInProgress || sent.RawTx != "00" || sent.TxID != "aa" || sent.NetworkFee != 141 {
		t.Fatalf("after the attempt: %+v", sent)
	}
	done, effects := mustPayout(t, sent, PayoutSucceeded{NetworkFee: sent.NetworkFee, At: at})
	if done.State != PayoutCompleted || done.NetworkFee != 141 || !reflect.DeepEqual(effects, []PayoutEffect{ReturnUnusedFee{Amount: 159}}) {
		t.Fatalf("completed %+v, effects %+v", done, effects)
	}
	// A Lightning payout's attempt carries no transaction.
	if _, _, err := awaitingApproved(t).Apply(PayoutAttempt{RawTx: "00", TxID: "aa", At: at}); ErrorCode(err) != Invalid {
		t.Errorf("a transaction for a Lightning payout: err = %v, want invalid", err)
	}
}

func awaitingApproved(t *testing.T) Payout {
	t.Helper()
	p, _ := mustPayout(t, awaiting(t), PayoutApprove{FeeLimit: 10, At: payoutEpoch})
	return p
}
