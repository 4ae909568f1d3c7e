package main

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"
)

// TestRefundThroughTheBinary: kassa serve --dev answers the refund
// routes with a key the operator made for refunds: a settled invoice
// refunded, the refund claimed to a Lightning address, refused approval
// until the balance is topped up, approved (the refund and network fee
// lines in the ledger), then failed by the sender (the address does not
// resolve) with the money back.
func TestRefundThroughTheBinary(t *testing.T) {
	s := startServer(t, t.TempDir(), "--dev")
	a := s.createStore("--name", "Alpha", "--currency", "EUR", "--percent-fee", "1")
	base := "/api/v1/stores/" + a.StoreID
	// The store's first key holds the default set, which leaves refunds
	// out: the operator makes one that may refund.
	a.APIKey = adminKey(t, s, a.StoreID, "btcpay.store.cancreateinvoice", "btcpay.store.canviewinvoices", "btcpay.store.canviewreports",
		"btcpay.store.cancreatenonapprovedpullpayments", "btcpay.store.canviewpullpayments", "btcpay.store.canviewpayouts",
		"btcpay.store.canmanagepayouts")
	inv := s.json("POST", base+"/invoices", a.APIKey, map[string]any{"amount": 20000, "currency": "SATS"}, 200)
	id := inv["id"].(string)
	s.mustCLI("sim", "pay", id, "--method", "lightning")
	waitFor(t, 15*time.Second, id+" settled", func() bool {
		return s.json("GET", base+"/invoices/"+id, a.APIKey, nil, 200)["status"] == "Settled"
	})
	pp := s.json("POST", base+"/invoices/"+id+"/refund", a.APIKey, map[string]any{"refundVariant": "RateThen"}, 200)
	if num(pp, "amount") != 20000 || pp["currency"] != "SATS" {
		t.Fatalf("pull payment = %v", pp)
	}
	po := s.json("POST", base+"/pull-payments/"+pp["id"].(string)+"/payouts", a.APIKey, map[string]any{"destination": "customer@wallet.example"}, 200)
	poID := po["id"].(string)
	s.json("POST", base+"/payouts/"+poID+"/approve", a.APIKey, nil, 402)
	s.mustCLI("store", "topup", a.StoreID, "--amount", "50000")
	approved := s.json("POST", base+"/payouts/"+poID+"/approve", a.APIKey, nil, 200)
	if approved["state"] != "Approved" || num(approved, "feeLimit") != 200 {
		t.Fatalf("approved = %v", approved)
	}
	types := map[string]float64{}
	for _, tx := range s.list(base+"/transactions", a.APIKey) {
		types[tx["type"].(string)] += num(tx, "amount")
	}
	if types["refund"] != 20000 || types["network_fee"] != 200 {
		t.Fatalf("ledger by type = %v", types)
	}
	// The simulated node is the sender: it pays the approved payout at
	// once, and a Lightning address that does not resolve fails it, with
	// the money back on the balance.
	waitFor(t, 30*time.Second, poID+" failed", func() bool {
		return s.json("GET", base+"/payouts/"+poID, a.APIKey, nil, 200)["state"] == "Failed"
	})
	types = map[string]float64{}
	for _, tx := range s.list(base+"/transactions", a.APIKey) {
		types[tx["type"].(string)] += num(tx, "amount")
	}
	if types["refund_returned"] != 20200 {
		t.Fatalf("ledger by type after the failed payout = %v", types)
	}
}

// adminKey makes a key of store holding perms through the admin API.
func adminKey(t *testing.T, s *server, store string, perms ...string) string {
	t.Helper()
	status, body, err := postJSON(s.url+"/admin/v1/stores/"+store+"/api-keys",
		map[string]string{"Authorization": "Bearer " + adminTokenOf(t, s.data)}, map[string]any{"label": "refunds", "permissions": perms})
	var key struct {
		APIKey string `json:"apiKey"`
	}
	if err != nil || status != 200 || json.Unmarshal(body, &key) != nil || key.APIKey == "" {
		t.Fatalf("admin: make a key = %d, %v: %s", status, err, body)
	}
	return key.APIKey
}

// devRefund is a refund in kassa serve --dev: a settled invoice of the
// demo store (through its REFUND_KEY) refunded to a pull payment, and an
// unpaid invoice of another store whose BOLT11 (an invoice of the
// simulated node) is where the customer asks to be paid.
type devRefund struct {
	a, b             storeCreds
	pullPayment      string
	bolt11, targetID string
}

func newDevRefund(t *testing.T, s *server) devRefund {
	t.Helper()
	_, store := demoExports(t, s)
	m := regexp.MustCompile(`(?m)^export REFUND_KEY=(\S+)$`).FindStringSubmatch(s.Stdout())
	if m == nil {
		t.Fatalf("serve --dev printed no REFUND_KEY:\n%s", s.Stdout())
	}
	r := devRefund{a: storeCreds{StoreID: store, APIKey: m[1]}, b: s.createStore("--name", "Customer", "--currency", "EUR")}
	base := "/api/v1/stores/" + r.a.StoreID
	id := s.json("POST", base+"/invoices", r.a.APIKey, map[string]any{"amount": 20000, "currency": "SATS"}, 200)["id"].(string)
	s.mustCLI("sim", "pay", id, "--method", "lightning")
	waitFor(t, 15*time.Second, id+" settled", func() bool {
		return s.json("GET", base+"/invoices/"+id, r.a.APIKey, nil, 200)["status"] == "Settled"
	})
	r.pullPayment = s.json("POST", base+"/invoices/"+id+"/refund", r.a.APIKey, map[string]any{"refundVariant": "RateThen"}, 200)["id"].(string)
	created := s.json("POST", "/api/v1/stores/"+r.b.StoreID+"/invoices", r.b.APIKey, map[string]any{"amount": 20000, "currency": "SATS"}, 200)
	r.targetID = created["id"].(string)
	r.bolt11, _ = created["lightningInvoice"].(string)
	if r.bolt11 == "" {
		t.Fatalf("created = %v", created)
	}
	return r
}

// TestRefundCompletesInDevMode: in kassa serve --dev (the simulated
// backends) an approved refund is paid by the one sender through the
// simulated node: claimed to a BOLT11 invoice of that node (here another
// store's invoice, which the refund pays), it ends Completed with its
// payment hash and the invoice it paid Settled.
func TestRefundCompletesInDevMode(t *testing.T) {
	s := startServer(t, t.TempDir(), "--dev")
	r := newDevRefund(t, s)
	base := "/api/v1/stores/" + r.a.StoreID
	po := s.json("POST", base+"/pull-payments/"+r.pullPayment+"/payouts", r.a.APIKey, map[string]any{"destination": r.bolt11}, 200)
	poID := po["id"].(string)
	s.json("POST", base+"/payouts/"+poID+"/approve", r.a.APIKey, nil, 200)
	var done map[string]any
	waitFor(t, 30*time.Second, poID+" completed", func() bool {
		done = s.json("GET", base+"/payouts/"+poID, r.a.APIKey, nil, 200)
		return done["state"] == "Completed" || done["state"] == "Failed"
	})
	if done["state"] != "Completed" || done["paymentHash"] == "" {
		t.Fatalf("payout = %v", done)
	}
	waitFor(t, 15*time.Second, r.targetID+" settled by the refund", func() bool {
		return s.json("GET", "/api/v1/stores/"+r.b.StoreID+"/invoices/"+r.targetID, r.b.APIKey, nil, 200)["status"] == "Settled"
	})
}
