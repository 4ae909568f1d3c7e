package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/internal/crashpoint"
	"github.com/kassapay/kassa/kassatest/harness"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/metrics"
)

var (
	crashpointOnce sync.Once
	crashpointPath string
	crashpointErr  error
)

// crashpointBin is kassa built with the crashpoints tag
// (internal/crashpoint), once per test run.
func crashpointBin(t *testing.T) string {
	t.Helper()
	needBinary(t)
	crashpointOnce.Do(func() { crashpointPath, crashpointErr = harness.BuildCrashpointKassa(binDir, raceEnabled) })
	if crashpointErr != nil {
		t.Fatalf("build kassa with crash points: %v", crashpointErr)
	}
	return crashpointPath
}

// TestPayoutCrashPoints kills the server with SIGKILL at each point of
// the one payment-out path (internal/crashpoint): with the payout's
// approval durable and nothing sent, with its attempt recorded, with
// the payment handed to the simulated node (or the on-chain transaction
// published) and its outcome not recorded, and with its outcome
// recorded. Restarted on the same data (a normal build), the payout ends
// Completed, paid once: the invoice it pays has one payment and one
// ledger line, the simulated node's record of the payment succeeded, and
// the refunding store's balance and ledger are debited once.
func TestPayoutCrashPoints(t *testing.T) {
	if e2eCluster() {
		t.Skip("skipped on a cluster: it starts its own single process of a crashpoints build on its own data directory, as make test's run does; on a cluster, TestKill9DuringPayouts kills a node during payouts")
	}
	for _, c := range []struct {
		point   string
		onchain bool
	}{
		{crashpoint.PayoutApproved, false},
		{crashpoint.PayoutAttemptRecorded, false},
		{crashpoint.PaymentSent, false},
		{crashpoint.PayoutRecorded, false},
		{crashpoint.PaymentSent, true},
	} {
		name := c.point
		if c.onchain {
			name += "/onchain"
		}
		t.Run(name, func(t *testing.T) { testPayoutCrashPoint(t, c.point, c.onchain) })
	}
}

func testPayoutCrashPoint(t *testing.T, point string, onchain bool) {
	dir := t.TempDir()
	storeFlags := e2eStoreArgs(t, dir)
	s := launchProcess(t, harness.KassaProcess{Bin: crashpointBin(t), Dir: dir, Env: []string{crashpoint.Env + "=" + point}},
		append(storeFlags, "--dev")...)
	a := s.createStore("--name", "Refunds", "--currency", "EUR")
	b := s.createStore("--name", "Customer", "--currency", "EUR")
	key := adminKey(t, s, a.StoreID, "btcpay.store.cancreatenonapprovedpullpayments", "btcpay.store.canviewpullpayments",
		"btcpay.store.canviewpayouts", "btcpay.store.canmanagepayouts", "btcpay.store.canviewinvoices", "btcpay.store.canviewreports")
	s.mustCLI("store", "topup", a.StoreID, "--amount", "100000")
	base := "/api/v1/stores/" + a.StoreID
	pp := s.json("POST", base+"/pull-payments", key, map[string]any{"name": "refund", "amount": "10000", "currency": "SATS"}, 200)
	target := s.json("POST", "/api/v1/stores/"+b.StoreID+"/invoices", b.APIKey, map[string]any{"amount": 10000, "currency": "SATS"}, 200)
	dest, _ := target["lightningInvoice"].(string)
	if onchain {
		dest, _ = target["onchainAddress"].(string)
	}
	if dest == "" {
		t.Fatalf("target invoice = %v", target)
	}
	payout := s.json("POST", base+"/pull-payments/"+pp["id"].(string)+"/payouts", key, map[string]any{"destination": dest}, 200)["id"].(string)
	before := storeBalance(t, s, a.StoreID)

	// The server may die before it answers the approval: the point
	// follows the approval's commit, not its answer.
	approved := make(chan int, 1)
	go func() {
		approved <- s.rawDo("POST", base+"/payouts/"+payout+"/approve", key)
	}()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the server did not die at %s", point)
	}
	_ = s.cmd.Wait()
	if ws, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the server ended %v, not killed at %s", s.cmd.ProcessState, point)
	}
	t.Logf("approval answered %d before the kill at %s", <-approved, point)

	s2 := launchServer(t, dir, append(storeFlags, "--dev")...)
	var p map[string]any
	waitFor(t, 30*time.Second, payout+" completed", func() bool {
		p = s2.json("GET", base+"/payouts/"+payout, key, nil, 200)
		return p["state"] == "Completed" || p["state"] == "Failed" || p["state"] == "Cancelled"
	})
	if p["state"] != "Completed" {
		t.Fatalf("payout after the restart: %v", p)
	}
	amount, fee := num(p, "amount"), num(p, "networkFee")

	// The target invoice is paid once: one payment, one ledger line.
	targetID := target["id"].(string)
	if onchain {
		s2.mustCLI("sim", "mine", "1")
	}
	waitFor(t, 15*time.Second, targetID+" settled by the payout", func() bool {
		return s2.json("GET", "/api/v1/stores/"+b.StoreID+"/invoices/"+targetID, b.APIKey, nil, 200)["status"] == "Settled"
	})
	inv := s2.json("GET", "/api/v1/stores/"+b.StoreID+"/invoices/"+targetID, b.APIKey, nil, 200)
	if inv["additionalStatus"] != "None" {
		t.Errorf("target invoice %v: paid %v of %v", inv["additionalStatus"], inv["totalPaid"], inv["amount"])
	}
	transfers := 0
	for _, tx := range s2.list("/api/v1/stores/"+b.StoreID+"/transactions", b.APIKey) {
		if tx["invoiceId"] == targetID && tx["type"] == "transfer" {
			transfers++
		}
	}
	if transfers != 1 {
		t.Errorf("%d transfer lines for the target invoice, want 1", transfers)
	}

	// The refunding store pays once: one refund line, the fee once.
	refunds, refunded, netFees := refundLedger(s2, base, key)
	if refunds != 1 || refunded != amount || netFees != fee {
		t.Errorf("ledger: %d refund lines of %v sat, net network fees %v; payout %v sat, fee %v", refunds, refunded, netFees, amount, fee)
	}
	if got := storeBalance(t, s2, a.StoreID); got != before-amount-fee {
		t.Errorf("balance %v, want %v", got, before-amount-fee)
	}

	if !onchain {
		// The simulated node's own record of the payment it sent.
		s2.Stop()
		hash, _ := p["paymentHash"].(string)
		if sent := simPayment(t, dir, storeFlags, hash); sent.Status != kassa.PaymentSucceeded {
			t.Errorf("the simulated node's record of %s: %+v", hash, sent)
		}
	}
}

// rawDo sends a request with key and returns its status, 0 when the
// server gave no answer (it died).
func (s *server) rawDo(method, path, key string) int {
	req, err := http.NewRequest(method, s.url+path, nil)
	if err != nil {
		return 0
	}
	req.Header.Set("x-api-key", key)
	res, err := httpClient.Do(req)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// storeBalance is the store's balance that the admin API shows.
func storeBalance(t *testing.T, s *server, storeID string) float64 {
	t.Helper()
	req, _ := http.NewRequest("GET", s.url+"/admin/v1/stores/"+storeID, nil)
	req.Header.Set("Authorization", "Bearer "+adminTokenOf(t, s.data))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st map[string]any
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil || res.StatusCode != 200 {
		t.Fatalf("admin store = %d, %v", res.StatusCode, err)
	}
	return num(st, "balance")
}

// refundLedger reads the ledger of the store at base (its API path)
// with key: its refund lines, their sum, and the network fees it paid
// less those returned.
func refundLedger(s *server, base, key string) (refunds int, refunded, netFees float64) {
	for _, tx := range s.list(base+"/transactions", key) {
		switch tx["type"] {
		case "refund":
			refunds++
			refunded += num(tx, "amount")
		case "network_fee":
			netFees += num(tx, "amount")
		case "refund_returned":
			netFees -= num(tx, "amount")
		}
	}
	return refunds, refunded, netFees
}

// simPayment reads, from the stopped server's data, the simulated
// Lightning node's record of the payment it sent with hash.
func simPayment(t *testing.T, dir string, storeFlags []string, hash string) kassa.LightningPayment {
	t.Helper()
	c := Config{Data: dir}
	if len(storeFlags) >= 2 && storeFlags[0] == "--store" {
		c.Store = storeFlags[1]
	}
	ctx := context.Background()
	st, err := openStorage(ctx, c, kassa.SystemClock{}, metrics.New(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	node, err := lnsim.Open(ctx, kassa.SystemClock{}, st.State("lnsim"))
	if err != nil {
		t.Fatal(err)
	}
	sent, err := node.TrackPayment(ctx, hash)
	if err != nil {
		t.Fatal(err)
	}
	return sent
}
