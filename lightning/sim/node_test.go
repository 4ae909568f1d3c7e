package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/internal/simstore"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/lightning/bolt11"
)

// recorder collects the events a Node hands to its handler.
type recorder struct {
	mu     sync.Mutex
	events []kassa.LightningEvent
}

func (r *recorder) handle(_ context.Context, ev kassa.LightningEvent) error {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	return nil
}

func (r *recorder) take() []kassa.LightningEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	evs := r.events
	r.events = nil
	return evs
}

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// started returns a node made by New on a test clock whose events go to
// a recorder.
func started(t *testing.T) (*Node, *recorder, *kassatest.TestClock) {
	t.Helper()
	return startedKind(t, "new")
}

// nodeKinds are the two kinds of node: "new" (New: records in memory,
// one per invoice, closed ones forgotten) and "open" (Open on a store:
// records only of closed invoices, open ones derived from the request).
var nodeKinds = []string{"new", "open"}

// startedKind is started for a node of kind (nodeKinds).
func startedKind(t *testing.T, kind string) (*Node, *recorder, *kassatest.TestClock) {
	t.Helper()
	clock := kassatest.NewTestClock(epoch.Add(700 * time.Millisecond))
	var n *Node
	var err error
	if kind == "open" {
		n, err = Open(t.Context(), clock, simstore.NewMem())
	} else {
		n, err = New(clock)
	}
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	if err := n.Start(t.Context(), r.handle); err != nil {
		t.Fatal(err)
	}
	return n, r, clock
}

func create(t *testing.T, n *Node, amount kassa.MSat, memo string, expiry time.Duration) kassa.LightningInvoice {
	t.Helper()
	inv, err := n.CreateInvoice(context.Background(), amount, memo, expiry)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func TestCreateInvoiceRefusesBadInput(t *testing.T) {
	n, _, _ := started(t)
	ctx := context.Background()
	for _, tt := range []struct {
		amount kassa.MSat
		expiry time.Duration
		want   error
	}{
		{-1, time.Minute, ErrBadAmount},
		{kassa.MaxSats.MSat() + 1, time.Minute, ErrBadAmount},
		{1000, -time.Second, ErrBadExpiry},
	} {
		if _, err := n.CreateInvoice(ctx, tt.amount, "x", tt.expiry); !errors.Is(err, tt.want) {
			t.Errorf("CreateInvoice(%d, %s) = %v, want %v", tt.amount, tt.expiry, err, tt.want)
		}
	}
}

func TestPaySettlesOnce(t *testing.T) {
	for _, kind := range nodeKinds {
		t.Run(kind, func(t *testing.T) { testPaySettlesOnce(t, kind) })
	}
}

func testPaySettlesOnce(t *testing.T, kind string) {
	n, r, clock := startedKind(t, kind)
	ctx := context.Background()
	inv := create(t, n, 21_000, "coffee", 15*time.Minute)
	if _, ok := n.Preimage(inv.PaymentHash); ok {
		t.Fatal("preimage revealed before payment")
	}

	clock.Advance(time.Minute)
	hash, err := n.Pay(ctx, inv.PaymentRequest, 0)
	if err != nil {
		t.Fatal(err)
	}
	if hash != inv.PaymentHash {
		t.Fatalf("Pay returned hash %s, want %s", hash, inv.PaymentHash)
	}
	want := []kassa.LightningEvent{{PaymentHash: inv.PaymentHash, AmountMSat: 21_000, SettledAt: clock.Now()}}
	if got := r.take(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	preimage, ok := n.Preimage(strings.ToUpper(hash))
	raw, _ := hex.DecodeString(preimage)
	if sum := sha256.Sum256(raw); !ok || hex.EncodeToString(sum[:]) != hash {
		t.Fatalf("preimage %s does not hash to %s", preimage, hash)
	}

	_, err = n.Pay(ctx, inv.PaymentRequest, 0)
	if !errors.Is(err, ErrInvoiceAlreadyPaid) || kassa.ErrorCode(err) != kassa.Conflict {
		t.Fatalf("second payment: %v, want ErrInvoiceAlreadyPaid", err)
	}
	if evs := r.take(); len(evs) != 0 {
		t.Fatalf("refused payment reported %v", evs)
	}
}

func TestPayAmounts(t *testing.T) {
	for _, kind := range nodeKinds {
		t.Run(kind, func(t *testing.T) { testPayAmounts(t, kind) })
	}
}

func testPayAmounts(t *testing.T, kind string) {
	n, r, _ := startedKind(t, kind)
	ctx := context.Background()
	tests := []struct {
		name     string
		invoice  kassa.MSat
		pay      kassa.MSat
		settled  kassa.MSat
		want     error
		mentions string
	}{
		{"invoice amount", 50_000, 0, 50_000, nil, ""},
		{"exact", 50_000, 50_000, 50_000, nil, ""},
		{"over", 50_000, 75_000, 75_000, nil, ""},
		{"twice", 50_000, 100_000, 100_000, nil, ""},
		{"more than twice", 50_000, 100_001, 0, ErrAmountTooHigh, "100001 msat"},
		{"less", 50_000, 49_999, 0, ErrAmountTooLow, "49999 msat is less than the 50000 msat"},
		{"amountless with amount", 0, 7_000, 7_000, nil, ""},
		{"amountless without amount", 0, 0, 0, ErrAmountRequired, ""},
		{"negative", 50_000, -1, 0, ErrBadAmount, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := create(t, n, tt.invoice, tt.name, time.Hour)
			_, err := n.Pay(ctx, inv.PaymentRequest, tt.pay)
			evs := r.take()
			if tt.want != nil {
				if !errors.Is(err, tt.want) || kassa.ErrorCode(err) != kassa.Invalid {
					t.Fatalf("err = %v, want %v", err, tt.want)
				}
				if msg := kassa.ErrorMessage(err); !strings.Contains(msg, tt.mentions) {
					t.Errorf("message %q does not mention %q", msg, tt.mentions)
				}
				if len(evs) != 0 {
					t.Fatalf("refused payment reported %v", evs)
				}
				// A refused payment leaves the invoice payable.
				if _, err := n.Pay(ctx, inv.PaymentRequest, max(tt.invoice, 1)); err != nil {
					t.Fatalf("paying after the refusal: %v", err)
				}
				r.take()
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 1 || evs[0].AmountMSat != tt.settled || evs[0].PaymentHash != inv.PaymentHash {
				t.Fatalf("events %v, want one of %d msat", evs, tt.settled)
			}
		})
	}
}

func TestPayRefusesExpiredAndUnknown(t *testing.T) {
	for _, kind := range nodeKinds {
		t.Run(kind, func(t *testing.T) { testPayRefusesExpiredAndUnknown(t, kind) })
	}
}

func testPayRefusesExpiredAndUnknown(t *testing.T, kind string) {
	n, r, clock := startedKind(t, kind)
	ctx := context.Background()
	inv := create(t, n, 1000, "soon gone", 10*time.Second)
	// The invoice counts from its whole-second timestamp: 9.3 s from now.
	clock.Advance(9 * time.Second)
	stillOpen := create(t, n, 1000, "still open", time.Minute)
	clock.Advance(300 * time.Millisecond)
	_, err := n.Pay(ctx, inv.PaymentRequest, 0)
	if !errors.Is(err, ErrInvoiceExpired) || kassa.ErrorCode(err) != kassa.Conflict {
		t.Fatalf("expired: %v, want ErrInvoiceExpired", err)
	}
	if !strings.Contains(kassa.ErrorMessage(err), "2026-03-01T12:00:10Z") {
		t.Errorf("message %q does not say when", kassa.ErrorMessage(err))
	}

	other, _, _ := started(t)
	foreign := create(t, other, 1000, "elsewhere", time.Minute)
	if _, err := n.Pay(ctx, foreign.PaymentRequest, 0); !errors.Is(err, ErrUnknownInvoice) || kassa.ErrorCode(err) != kassa.NotFound {
		t.Fatalf("foreign invoice: %v, want ErrUnknownInvoice", err)
	}

	hash, x := [32]byte{1}, "x"
	mainnet := &bolt11.Invoice{Net: &chaincfg.MainNetParams, Timestamp: epoch, PaymentHash: &hash, Description: &x}
	mainnetRequest, err := mainnet.Encode(n.key)
	if err != nil {
		t.Fatal(err)
	}
	broken := []byte(stillOpen.PaymentRequest) // last checksum character changed
	broken[len(broken)-1] = map[bool]byte{true: 'p', false: 'q'}[broken[len(broken)-1] == 'q']
	for _, bad := range []string{"", "lnbcrt1garbage", mainnetRequest, string(broken)} {
		_, err := n.Pay(ctx, bad, 0)
		if !errors.Is(err, ErrBadPaymentRequest) || kassa.ErrorCode(err) != kassa.Invalid {
			t.Errorf("Pay(%.20q) = %v, want ErrBadPaymentRequest", bad, err)
		}
	}
	if evs := r.take(); len(evs) != 0 {
		t.Fatalf("refused payments reported %v", evs)
	}
	if _, err := n.Pay(ctx, strings.ToUpper(stillOpen.PaymentRequest), 0); err != nil {
		t.Fatalf("upper-case request: %v", err)
	}
}

func TestInfoAndStart(t *testing.T) {
	n, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := kassa.BackendInfo{Backend: "sim", Network: "regtest", Simulated: true, Synced: true}
	if got := n.Info(context.Background()); got != want {
		t.Fatalf("Info = %+v, want %+v", got, want)
	}
	if err := n.Start(context.Background(), nil); err == nil {
		t.Fatal("Start without a handler succeeded")
	}
	running, stop := context.WithCancel(context.Background())
	r := &recorder{}
	if err := n.Start(running, r.handle); err != nil {
		t.Fatal(err)
	}
	stop()
	inv := create(t, n, 1000, "late", time.Minute)
	if _, err := n.Pay(context.Background(), inv.PaymentRequest, 0); err != nil {
		t.Fatal(err)
	}
	if evs := r.take(); len(evs) != 0 {
		t.Fatalf("events after the Start context ended: %v", evs)
	}
}

// TestConcurrentPayments releases 50 payers at once, first on 50 invoices,
// then all on one invoice: every invoice settles exactly once.
func TestConcurrentPayments(t *testing.T) {
	const payers = 50
	n, r, _ := started(t)
	ctx := context.Background()

	invoices := make([]kassa.LightningInvoice, payers)
	for i := range invoices {
		invoices[i] = create(t, n, kassa.MSat(1000*(i+1)), fmt.Sprint("order ", i), time.Hour)
	}
	release := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, payers)
	for i := range payers {
		wg.Go(func() {
			<-release
			_, errs[i] = n.Pay(ctx, invoices[i].PaymentRequest, 0)
		})
	}
	close(release)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	settled := make(map[string]kassa.MSat)
	for _, ev := range r.take() {
		settled[ev.PaymentHash] += ev.AmountMSat
	}
	for i, inv := range invoices {
		if settled[inv.PaymentHash] != kassa.MSat(1000*(i+1)) {
			t.Fatalf("invoice %d settled for %d msat", i, settled[inv.PaymentHash])
		}
	}

	one := create(t, n, 5000, "contested", time.Hour)
	release = make(chan struct{})
	for i := range payers {
		wg.Go(func() {
			<-release
			_, errs[i] = n.Pay(ctx, one.PaymentRequest, 0)
		})
	}
	close(release)
	wg.Wait()
	winners := 0
	for _, err := range errs {
		switch {
		case err == nil:
			winners++
		case !errors.Is(err, ErrInvoiceAlreadyPaid):
			t.Fatal(err)
		}
	}
	if evs := r.take(); winners != 1 || len(evs) != 1 {
		t.Fatalf("%d payments succeeded and %d were reported, want 1", winners, len(evs))
	}
}
