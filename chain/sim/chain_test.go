package sim

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

func hexString(b []byte) string { return hex.EncodeToString(b) }

// recorder collects the events a Chain hands to its handler.
type recorder struct {
	mu     sync.Mutex
	events []kassa.ChainEvent
}

func (r *recorder) handle(_ context.Context, ev kassa.ChainEvent) error {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	return nil
}

// take returns the events recorded since the last take.
func (r *recorder) take() []kassa.ChainEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	evs := r.events
	r.events = nil
	return evs
}

// started returns a chain at a fixed clock whose events go to a recorder.
func started(t *testing.T) (*Chain, *recorder, time.Time) {
	t.Helper()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := New(kassatest.NewTestClock(now))
	r := &recorder{}
	if err := c.Start(t.Context(), r.handle); err != nil {
		t.Fatal(err)
	}
	return c, r, now
}

// summary writes events as "addr-suffix@confs" (or "!" when dropped), to
// compare sequences at a glance.
func summary(evs []kassa.ChainEvent, names map[string]string) string {
	var parts []string
	for _, ev := range evs {
		s := fmt.Sprintf("%s@%d", names[ev.Payment.TxID], ev.Payment.Confirmations)
		if ev.Dropped {
			s = names[ev.Payment.TxID] + "!"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestNewAddressIsFreshRegtestP2WPKH(t *testing.T) {
	c := New(nil)
	seen := make(map[string]bool)
	for i := range 50 {
		a, err := c.NewAddress(context.Background(), &kassa.Store{ID: "s"}, fmt.Sprint("inv", i))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(a, "bcrt1q") {
			t.Fatalf("address %s is not a regtest P2WPKH address", a)
		}
		decoded, err := btcutil.DecodeAddress(a, &chaincfg.RegressionNetParams)
		if err != nil {
			t.Fatalf("decode %s: %v", a, err)
		}
		if _, ok := decoded.(*btcutil.AddressWitnessPubKeyHash); !ok || !decoded.IsForNet(&chaincfg.RegressionNetParams) {
			t.Fatalf("%s decodes to %T", a, decoded)
		}
		if seen[a] {
			t.Fatalf("address %s handed out twice", a)
		}
		seen[a] = true
	}
}

func TestInfo(t *testing.T) {
	c := New(nil)
	want := kassa.BackendInfo{Backend: "sim", Network: "regtest", Simulated: true, Synced: true, Height: StartHeight}
	if got := c.Info(context.Background()); got != want {
		t.Fatalf("Info = %+v, want %+v", got, want)
	}
	if _, err := c.Mine(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	if got := c.Info(context.Background()).Height; got != StartHeight+3 {
		t.Fatalf("height = %d, want %d", got, StartHeight+3)
	}
}

func TestPayAndMineReportEachNewDepth(t *testing.T) {
	c, r, now := started(t)
	ctx := context.Background()
	addrA, _ := c.NewAddress(ctx, &kassa.Store{ID: "s"}, "a")
	addrB, _ := c.NewAddress(ctx, &kassa.Store{ID: "s"}, "b")
	names := make(map[string]string)
	pay := func(name, addr string, amount kassa.Sats) string {
		t.Helper()
		txid, err := c.Pay(ctx, addr, amount)
		if err != nil {
			t.Fatal(err)
		}
		if len(txid) != 64 {
			t.Fatalf("txid %q is not 32 bytes of hex", txid)
		}
		names[txid] = name
		return txid
	}
	mine := func(n int, wantHeight int64) {
		t.Helper()
		h, err := c.Mine(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if h != wantHeight {
			t.Fatalf("Mine(%d) = height %d, want %d", n, h, wantHeight)
		}
	}
	expect := func(want string) {
		t.Helper()
		if got := summary(r.take(), names); got != want {
			t.Fatalf("events %q, want %q", got, want)
		}
	}

	txA := pay("A", addrA, 12_345)
	pay("B", strings.ToUpper(addrB), 600) // bech32 in upper case is the same address
	evs := r.take()
	if got := summary(evs, names); got != "A@0 B@0" {
		t.Fatalf("events after paying %q", got)
	}
	wantA := kassa.Payment{
		ID: txA + ":0", Method: kassa.MethodOnchain, TxID: txA, Vout: 0, Amount: 12_345,
		Destination: addrA, NetworkFee: SimulatedNetworkFee, FeeRate: SimulatedFeeRate, ReceivedAt: now,
	}
	if evs[0].Payment != wantA || evs[0].Address != addrA || evs[0].Dropped {
		t.Fatalf("mempool event %+v, want payment %+v", evs[0], wantA)
	}
	if evs[1].Address != addrB || evs[1].Payment.Destination != addrB {
		t.Fatalf("event address %q, want canonical %q", evs[1].Address, addrB)
	}

	mine(1, 101)
	expect("A@1 B@1")
	pay("C", addrA, 1)
	expect("C@0")
	mine(2, 103)
	expect("A@3 B@3 C@2")
	mine(3, 106)
	expect("A@6 B@6 C@5")
	mine(1, 107)
	expect("C@6")
	mine(5, 112)
	expect("")
}

func TestDropReportsDoubleSpend(t *testing.T) {
	c, r, _ := started(t)
	ctx := context.Background()
	addr, _ := c.NewAddress(ctx, nil, "inv")
	txA, _ := c.Pay(ctx, addr, 1000)
	txB, _ := c.Pay(ctx, addr, 2000)
	names := map[string]string{txA: "A", txB: "B"}
	r.take()

	if err := c.Drop(ctx, strings.ToUpper(txA)); err != nil {
		t.Fatal(err)
	}
	evs := r.take()
	if got := summary(evs, names); got != "A!" {
		t.Fatalf("events %q, want A!", got)
	}
	if p := evs[0].Payment; !p.Dropped || p.Confirmations != 0 || p.Amount != 1000 || evs[0].Address != addr {
		t.Fatalf("dropped event %+v", evs[0])
	}

	if _, err := c.Mine(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := summary(r.take(), names); got != "B@1" {
		t.Fatalf("after mining: %q, want only B@1", got)
	}
	// A confirmed transaction can be dropped too: a reorganisation.
	if err := c.Drop(ctx, txB); err != nil {
		t.Fatal(err)
	}
	if got := summary(r.take(), names); got != "B!" {
		t.Fatalf("events %q, want B!", got)
	}

	if err := c.Drop(ctx, txA); !errors.Is(err, ErrAlreadyDropped) {
		t.Fatalf("second drop: %v, want ErrAlreadyDropped", err)
	}
	if err := c.Drop(ctx, strings.Repeat("ab", 32)); !errors.Is(err, ErrUnknownTransaction) || kassa.ErrorCode(err) != kassa.NotFound {
		t.Fatalf("unknown drop: %v, want ErrUnknownTransaction", err)
	}
	if evs := r.take(); len(evs) != 0 {
		t.Fatalf("refused drops reported %v", evs)
	}
}

func TestPayAndMineRefuseBadInput(t *testing.T) {
	c, r, _ := started(t)
	ctx := context.Background()
	addr, _ := c.NewAddress(ctx, nil, "inv")
	mainnet := regtestTwinOf(t, addr, &chaincfg.MainNetParams)
	testnet := regtestTwinOf(t, addr, &chaincfg.TestNet3Params)

	payTests := []struct {
		name    string
		address string
		amount  kassa.Sats
		want    error
	}{
		{"zero", addr, 0, ErrBadAmount},
		{"negative", addr, -5, ErrBadAmount},
		{"more than all bitcoin", addr, kassa.MaxSats + 1, ErrBadAmount},
		{"mainnet address", mainnet, 1000, ErrNotRegtestAddress},
		{"testnet address", testnet, 1000, ErrNotRegtestAddress},
		{"garbage", "bcrt1qnotanaddress", 1000, ErrNotRegtestAddress},
		{"empty", "", 1000, ErrNotRegtestAddress},
		{"public key", "0330d54fd0dd420a6e5f8d3624f5f3482cae350f79d5f0753bf5beef9c2d91af3c", 1000, ErrNotRegtestAddress},
	}
	for _, tt := range payTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Pay(ctx, tt.address, tt.amount)
			if !errors.Is(err, tt.want) || kassa.ErrorCode(err) != kassa.Invalid {
				t.Fatalf("Pay(%q, %d) = %v, want %v", tt.address, tt.amount, err, tt.want)
			}
		})
	}
	for _, n := range []int{0, -1, MaxBlocksPerMine + 1} {
		if _, err := c.Mine(ctx, n); !errors.Is(err, ErrBadBlockCount) {
			t.Fatalf("Mine(%d) = %v, want ErrBadBlockCount", n, err)
		}
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Pay(canceled, addr, 1000); !errors.Is(err, context.Canceled) {
		t.Fatalf("Pay with a canceled context = %v", err)
	}
	if evs := r.take(); len(evs) != 0 {
		t.Fatalf("refused calls reported %v", evs)
	}
	if h := c.Info(ctx).Height; h != StartHeight {
		t.Fatalf("refused Mine moved the height to %d", h)
	}
}

// regtestTwinOf spells the regtest address addr for net.
func regtestTwinOf(t *testing.T, addr string, net *chaincfg.Params) string {
	t.Helper()
	a, err := btcutil.DecodeAddress(addr, &chaincfg.RegressionNetParams)
	if err != nil {
		t.Fatal(err)
	}
	twin, err := btcutil.NewAddressWitnessPubKeyHash(a.ScriptAddress(), net)
	if err != nil {
		t.Fatal(err)
	}
	return twin.EncodeAddress()
}

// TestEventsWaitForARunningHandler checks that events made while no
// handler runs are kept, not dropped: the next Start delivers them, in
// order, before newer ones.
func TestEventsWaitForARunningHandler(t *testing.T) {
	c := New(nil)
	ctx := context.Background()
	addr, _ := c.NewAddress(ctx, nil, "inv")
	txid, err := c.Pay(ctx, addr, 1000)
	if err != nil {
		t.Fatal("Pay before Start:", err)
	}

	running, stop := context.WithCancel(ctx)
	r := &recorder{}
	if err := c.Start(running, r.handle); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mine(ctx, 1); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{txid: "a"}
	if got := summary(r.take(), names); got != "a@0 a@1" {
		t.Fatalf("events after Start = %q, want the payment kept from before Start, then its block", got)
	}
	stop()
	if _, err := c.Mine(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if evs := r.take(); len(evs) != 0 {
		t.Fatalf("events after the Start context ended: %v", evs)
	}
	again := &recorder{}
	if err := c.Start(ctx, again.handle); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mine(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := summary(again.take(), names); got != "a@2 a@3" {
		t.Fatalf("events after a new Start = %q, want the kept one, then the new one", got)
	}
	if err := c.Start(running, r.handle); err == nil {
		t.Fatal("Start with an ended context succeeded")
	}
	if err := c.Start(ctx, nil); err == nil {
		t.Fatal("Start without a handler succeeded")
	}
}

// TestConcurrentPayments releases 50 payers and a few miners at once. Every
// payment must get a distinct txid, and each output's events must arrive
// in order (mempool first, then growing depths) even though the handler
// runs outside the chain's lock and calls back into the chain.
func TestConcurrentPayments(t *testing.T) {
	const payers, miners = 50, 5
	c := New(nil)
	ctx := context.Background()
	var mu sync.Mutex
	depths := make(map[string][]int32)
	err := c.Start(t.Context(), func(ctx context.Context, ev kassa.ChainEvent) error {
		_ = c.Info(ctx) // would deadlock if called under the chain's lock
		mu.Lock()
		depths[ev.Payment.TxID] = append(depths[ev.Payment.TxID], ev.Payment.Confirmations)
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	addrs := make([]string, payers)
	for i := range addrs {
		addrs[i], _ = c.NewAddress(ctx, &kassa.Store{ID: "s"}, fmt.Sprint(i))
	}

	release := make(chan struct{})
	var wg sync.WaitGroup
	txids := make([]string, payers)
	errs := make([]error, payers+miners)
	for i := range payers {
		wg.Go(func() {
			<-release
			txids[i], errs[i] = c.Pay(ctx, addrs[i], kassa.Sats(1000+i))
		})
	}
	for i := range miners {
		wg.Go(func() {
			<-release
			_, errs[payers+i] = c.Mine(ctx, 1)
		})
	}
	close(release)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mine(ctx, int(ReportedDepth)); err != nil {
		t.Fatal(err)
	}

	unique := make(map[string]bool)
	for _, txid := range txids {
		unique[txid] = true
	}
	if len(unique) != payers {
		t.Fatalf("%d distinct txids for %d payments", len(unique), payers)
	}
	if got := c.Info(ctx).Height; got != StartHeight+miners+int64(ReportedDepth) {
		t.Fatalf("height %d after %d blocks", got, miners+int(ReportedDepth))
	}
	for _, txid := range txids {
		d := depths[txid]
		if len(d) < 2 || d[0] != 0 || d[len(d)-1] < ReportedDepth {
			t.Fatalf("tx %s reported at depths %v", txid, d)
		}
		for i := 1; i < len(d); i++ {
			if d[i] <= d[i-1] {
				t.Fatalf("tx %s reported at depths %v: out of order", txid, d)
			}
		}
	}
}
