package main

import (
	"encoding/json"
	"testing"
	"time"
)

// TestRefundThroughTheBinary: kassa serve --dev answers the refund
// routes: a settled invoice refunded, the refund claimed to a Lightning
// address, approved from a topped-up balance (the refund and network
// fee lines in the ledger), then cancelled with the money back. (The
// simulated backends have no forwarder: an approved payout waits there
// for one.)
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
	if c := s.json("POST", base+"/payouts/"+poID+"/cancel", a.APIKey, nil, 200); c["state"] != "Cancelled" {
		t.Fatalf("cancelled = %v", c)
	}
	types = map[string]float64{}
	for _, tx := range s.list(base+"/transactions", a.APIKey) {
		types[tx["type"].(string)] += num(tx, "amount")
	}
	if types["refund_returned"] != 20200 {
		t.Fatalf("ledger by type after cancel = %v", types)
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
