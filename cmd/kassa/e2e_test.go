package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image/png"
	"regexp"
	"strings"
	"testing"
	"time"
)

var digits = regexp.MustCompile(`^[0-9]+$`)

// requireFields fails unless m has every key of fields.
func requireFields(t *testing.T, what string, m map[string]any, fields ...string) {
	t.Helper()
	for _, f := range fields {
		if _, ok := m[f]; !ok {
			t.Errorf("%s has no field %q: %v", what, f, m)
		}
	}
}

func checkPNGDataURI(t *testing.T, what string, v any) {
	t.Helper()
	s, _ := v.(string)
	const prefix = "data:image/png;base64,"
	if !strings.HasPrefix(s, prefix) {
		t.Fatalf("%s is not a PNG data URI: %.40q", what, s)
	}
	raw, err := base64.StdEncoding.DecodeString(s[len(prefix):])
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
		t.Fatalf("%s does not decode as PNG: %v", what, err)
	}
}

func num(m map[string]any, k string) float64 {
	f, _ := m[k].(float64)
	return f
}

// TestEndToEnd starts the real binary and drives every invoice path of
// docs/api.md's invoice states through the HTTP API and the sim CLI.
func TestEndToEnd(t *testing.T) {
	s := startServer(t, t.TempDir(), "--dev", "--invoice-expiry", "8s", "--monitoring", "1m")
	a := s.createStore("--name", "Alpha", "--currency", "EUR", "--percent-fee", "1", "--tolerance", "1")
	b := s.createStore("--name", "Beta", "--currency", "USD")
	base := "/api/v1/stores/" + a.StoreID

	// Health needs no key and says it is a simulation.
	health := s.json("GET", "/api/v1/health", "", nil, 200)
	if health["status"] != "ok" || health["simulation"] != true {
		t.Fatalf("health = %v", health)
	}

	// Store record (docs/api.md, Stores).
	st := s.json("GET", base, a.APIKey, nil, 200)
	requireFields(t, "store", st, "storeId", "name", "walletMinSendable", "walletMaxSendable", "apiKey", "percentFee", "underpaymentTolerance", "currency")
	if st["storeId"] != a.StoreID || st["currency"] != "EUR" || num(st, "percentFee") != 1 || num(st, "underpaymentTolerance") != 1 || st["apiKey"] != a.APIKey {
		t.Fatalf("store = %v", st)
	}

	// Rates: one entry per fiat pair.
	rates := s.list(base+"/rates", a.APIKey)
	if len(rates) < 6 {
		t.Fatalf("rates = %v", rates)
	}
	requireFields(t, "rate", rates[0], "currencyPair", "rate", "errors")

	create := func(body map[string]any) map[string]any {
		t.Helper()
		return s.json("POST", base+"/invoices", a.APIKey, body, 200)
	}
	get := func(id string) map[string]any {
		t.Helper()
		return s.json("GET", base+"/invoices/"+id, a.APIKey, nil, 200)
	}
	waitStatus := func(id, status, additional string) map[string]any {
		t.Helper()
		var inv map[string]any
		waitFor(t, 15*time.Second, id+" "+status+"/"+additional, func() bool {
			inv = get(id)
			return inv["status"] == status && inv["additionalStatus"] == additional
		})
		return inv
	}

	// 1. Lightning: Processing then Settled, back to back, transaction with fee.
	ln := create(map[string]any{"amount": "10", "currency": "EUR", "orderId": "1001", "buyerEmail": "b@example.com",
		"walletMessage": "thanks", "metadata": map[string]any{"sku": "A1"}, "redirectUrl": "https://shop.example/done"})
	requireFields(t, "create response", ln, "id", "storeId", "status", "amount", "orderId", "buyerEmail", "currency",
		"enabledPaymentMethods", "metadata", "lightningInvoice", "onchainAddress", "qrCodes", "redirectAutomatically",
		"walletMessage", "createdAt", "checkoutLink", "bip21")
	if ln["status"] != "New" || ln["storeId"] != a.StoreID || ln["currency"] != "EUR" || ln["orderId"] != "1001" {
		t.Fatalf("created = %v", ln)
	}
	if c, _ := ln["createdAt"].(string); !digits.MatchString(c) {
		t.Fatalf("createdAt in the create response must be a digit string: %#v", ln["createdAt"])
	}
	if md, _ := ln["metadata"].(map[string]any); md["orderId"] != "1001" || md["sku"] != "A1" {
		t.Fatalf("metadata = %v", ln["metadata"])
	}
	qr, _ := ln["qrCodes"].(map[string]any)
	checkPNGDataURI(t, "lightningQR", qr["lightningQR"])
	checkPNGDataURI(t, "bitcoinQR", qr["bitcoinQR"])
	if !strings.HasPrefix(ln["lightningInvoice"].(string), "lnbcrt") || !strings.HasPrefix(ln["onchainAddress"].(string), "bcrt1") {
		t.Fatalf("payment details = %v %v", ln["lightningInvoice"], ln["onchainAddress"])
	}
	if !strings.HasPrefix(ln["bip21"].(string), "bitcoin:"+ln["onchainAddress"].(string)+"?amount=") {
		t.Fatalf("bip21 = %v", ln["bip21"])
	}
	lnID := ln["id"].(string)
	s.mustCLI("sim", "pay", lnID, "--method", "lightning")
	inv := waitStatus(lnID, "Settled", "None")
	requireFields(t, "invoice", inv, "id", "storeId", "terminalName", "status", "additionalStatus", "amount", "totalPaid",
		"invoiceAmount", "orderId", "buyerEmail", "currency", "exchangeRate", "fiatAmount", "fiatTotalPaid",
		"enabledPaymentMethods", "paymentMethod", "walletMessage", "metadata", "lightningInvoice", "onchainAddress",
		"qrCodes", "redirectUrl", "redirectAutomatically", "createdAt", "updatedAt")
	if num(inv, "totalPaid") != num(inv, "amount") || num(inv, "invoiceAmount") != 10 || num(inv, "fiatAmount") != 10 ||
		inv["paymentMethod"] != "BTC/Lightning" || inv["terminalName"] != "Alpha" {
		t.Fatalf("settled invoice = %v", inv)
	}
	if _, ok := inv["createdAt"].(float64); !ok {
		t.Fatalf("createdAt on the invoice record must be a number: %#v", inv["createdAt"])
	}
	if ev := s.waitEvents(lnID, 3); ev != "[New:None Processing:None Settled:None]" {
		t.Fatalf("lightning events = %s", ev)
	}
	sats := num(inv, "amount")
	txs := s.list(base+"/transactions", a.APIKey)
	var transfer, fee map[string]any
	for _, tx := range txs {
		if tx["invoiceId"] == lnID && tx["type"] == "transfer" {
			transfer = tx
		}
		if tx["invoiceId"] == lnID && tx["type"] == "fee" {
			fee = tx
		}
	}
	if transfer == nil || fee == nil {
		t.Fatalf("transactions = %v", txs)
	}
	requireFields(t, "transaction", transfer, "id", "invoiceId", "type", "status", "amount", "fullAmount", "feeAmount",
		"amountInPreferredCurrency", "depositMethod", "hash", "comment", "createdAt")
	wantFee := float64(int64(sats+99) / 100) // 1%, rounded up
	if transfer["status"] != "Settled" || num(transfer, "fullAmount") != sats || num(transfer, "amount") != sats ||
		num(transfer, "feeAmount") != wantFee || transfer["depositMethod"] != "Lightning" || num(fee, "amount") != wantFee {
		t.Fatalf("transfer = %v, fee = %v", transfer, fee)
	}
	byID := s.json("GET", fmt.Sprintf("%s/transactions/%d", base, int64(num(transfer, "id"))), a.APIKey, nil, 200)
	if num(byID, "amountInPreferredCurrency") != 10 {
		t.Fatalf("transaction by id = %v", byID)
	}
	byInvoice := s.json("GET", base+"/transactions/"+lnID, a.APIKey, nil, 200)
	if byInvoice["invoiceId"] != lnID || byInvoice["type"] != "transfer" {
		t.Fatalf("transaction by invoice id = %v", byInvoice)
	}
	payments := s.list(base+"/invoices/"+lnID+"/payments", a.APIKey)
	if len(payments) != 1 {
		t.Fatalf("payments = %v", payments)
	}
	requireFields(t, "payment", payments[0], "transactionId", "amount", "networkFee", "receivedDate", "destination",
		"replacedByFee", "status", "priority", "feeRate", "createdAt")
	if _, err := time.Parse(time.RFC3339, payments[0]["receivedDate"].(string)); err != nil {
		t.Fatalf("receivedDate: %v", err)
	}

	// 2. On-chain: Processing in the mempool, Settled after a block.
	oc := create(map[string]any{"amount": 20000, "currency": "SATS"})
	ocID := oc["id"].(string)
	s.mustCLI("sim", "pay", ocID, "--method", "onchain")
	waitStatus(ocID, "Processing", "None")
	s.mustCLI("sim", "mine", "1")
	waitStatus(ocID, "Settled", "None")
	if ev := s.waitEvents(ocID, 3); ev != "[New:None Processing:None Settled:None]" {
		t.Fatalf("on-chain events = %s", ev)
	}
	if p := get(ocID)["paymentMethod"]; p != "BTC/BTC" {
		t.Fatalf("paymentMethod = %v", p)
	}

	// 3. Overpaid.
	over := create(map[string]any{"amount": 10000, "currency": "SATS"})
	s.mustCLI("sim", "pay", over["id"].(string), "--method", "onchain", "--amount", "12000")
	s.mustCLI("sim", "mine")
	if inv := waitStatus(over["id"].(string), "Settled", "Overpaid"); num(inv, "totalPaid") != 12000 {
		t.Fatalf("overpaid = %v", inv)
	}

	// 4. Short within the 1% tolerance settles with None.
	tol := create(map[string]any{"amount": 10000, "currency": "SATS"})
	s.mustCLI("sim", "pay", tol["id"].(string), "--method", "onchain", "--amount", "9900")
	s.mustCLI("sim", "mine")
	waitStatus(tol["id"].(string), "Settled", "None")

	// 5. Nothing received: Expired None after the interval; 6. underpaid:
	// Expired Underpaid; 7. paid after expiry: Settled PaidAfterExpiration.
	empty := create(map[string]any{"amount": 1000, "currency": "SATS"})
	under := create(map[string]any{"amount": 10000, "currency": "SATS"})
	late := create(map[string]any{"amount": 5000, "currency": "SATS"})
	s.mustCLI("sim", "pay", under["id"].(string), "--method", "onchain", "--amount", "5000")
	s.mustCLI("sim", "mine")
	// A partial payment leaves the invoice New (no Processing). The
	// invoice may already have expired on a slow machine (the interval is
	// 3 s), so the status is only required not to have moved forward;
	// the event list below proves that no Processing was ever sent.
	if inv := get(under["id"].(string)); (inv["status"] != "New" && inv["status"] != "Expired") || num(inv, "totalPaid") != 5000 {
		t.Fatalf("partial payment must leave the invoice New: %v", inv)
	}
	waitStatus(empty["id"].(string), "Expired", "None")
	waitStatus(under["id"].(string), "Expired", "Underpaid")
	waitStatus(late["id"].(string), "Expired", "None")
	if ev := s.waitEvents(under["id"].(string), 2); ev != "[New:None Expired:Underpaid]" {
		t.Fatalf("underpaid events = %s", ev)
	}
	s.mustCLI("sim", "pay", late["id"].(string), "--method", "onchain")
	s.mustCLI("sim", "mine")
	waitStatus(late["id"].(string), "Settled", "PaidAfterExpiration")
	if ev := s.waitEvents(late["id"].(string), 3); ev != "[New:None Expired:None Settled:PaidAfterExpiration]" {
		t.Fatalf("late events = %s", ev)
	}
	// An expired invoice's Lightning invoice can no longer be paid.
	if _, err := s.cli("sim", "pay", empty["id"].(string), "--method", "lightning"); err == nil {
		t.Fatal("paid an expired Lightning invoice")
	}

	// Lists: newest first, date filters in ISO 8601 and Unix seconds.
	all := s.list(base+"/invoices", a.APIKey)
	if len(all) != 7 {
		t.Fatalf("list = %d invoices, want 7", len(all))
	}
	for i := 1; i < len(all); i++ {
		if num(all[i], "createdAt") > num(all[i-1], "createdAt") {
			t.Fatalf("list is not newest first at %d", i)
		}
	}
	if _, ok := all[0]["enabledPaymentMethods"].(string); !ok {
		t.Fatalf("enabledPaymentMethods in the list must be a comma-separated string: %#v", all[0]["enabledPaymentMethods"])
	}
	future := time.Now().Add(time.Hour)
	if l := s.list(fmt.Sprintf("%s/invoices?startDate=%d", base, future.Unix()), a.APIKey); len(l) != 0 {
		t.Fatalf("startDate in the future listed %d", len(l))
	}
	if l := s.list(base+"/invoices?endDate="+future.UTC().Format(time.RFC3339), a.APIKey); len(l) != 7 {
		t.Fatalf("endDate in the future listed %d", len(l))
	}

	// Pay links.
	pr := s.json("POST", base+"/payment-requests", a.APIKey, map[string]any{"amount": 25.5, "title": "Boots", "currency": "EUR", "description": "Brown"}, 200)
	prID, _ := pr["id"].(string)
	if prID == "" || pr["url"] != s.url+"/payment-requests/"+prID {
		t.Fatalf("pay link = %v", pr)
	}
	got := s.json("GET", base+"/payment-requests/"+prID, a.APIKey, nil, 200)
	requireFields(t, "payment request", got, "id", "amount", "title", "currency", "description", "expiryDate", "storeId", "status", "type", "createdAt", "updatedAt")
	s.json("PUT", base+"/payment-requests/"+prID, a.APIKey, map[string]any{"amount": 30, "title": "Boots"}, 200)
	if l := s.list(base+"/payment-requests", a.APIKey); len(l) != 1 || num(l[0], "amount") != 30 {
		t.Fatalf("pay links = %v", l)
	}
	if e := s.json("POST", base+"/payment-requests", a.APIKey, map[string]any{"amount": 0}, 400); e["errors"] == nil {
		t.Fatalf("pay link validation = %v", e)
	}
	s.json("DELETE", base+"/payment-requests/"+prID, a.APIKey, nil, 200)

	// Bad input gets a clear error and stores nothing.
	before := len(s.list(base+"/invoices", a.APIKey))
	for _, c := range []struct {
		name, key, body string
		want            int
	}{
		{"malformed JSON", a.APIKey, `{"amount": 1,`, 400},
		{"unknown currency", a.APIKey, `{"amount": 1, "currency": "XYZ"}`, 400},
		{"negative amount", a.APIKey, `{"amount": -5}`, 400},
		{"zero amount", a.APIKey, `{"amount": 0}`, 400},
		{"walletMessage over 255", a.APIKey, `{"amount": 1, "walletMessage": "` + strings.Repeat("x", 256) + `"}`, 400},
		{"body over 1 MiB", a.APIKey, `{"amount": 1, "metadata": {"x": "` + strings.Repeat("x", 1<<20) + `"}}`, 413},
		{"key of another store", b.APIKey, `{"amount": 1}`, 403},
		{"no key", "", `{"amount": 1}`, 401},
	} {
		status, body, _ := s.do("POST", base+"/invoices", c.key, c.body)
		if status != c.want || !bytes.Contains(body, []byte(`"message"`)) {
			t.Errorf("%s: %d %s, want %d with a message", c.name, status, body, c.want)
		}
	}
	if after := len(s.list(base+"/invoices", a.APIKey)); after != before {
		t.Fatalf("bad requests stored %d invoices", after-before)
	}
	if status, _, _ := s.do("GET", base+"/invoices/"+lnID, b.APIKey, nil); status != 403 {
		t.Fatalf("other store's key reading an invoice: %d", status)
	}
	if status, _, _ := s.do("GET", "/api/v1/stores/"+b.StoreID+"/invoices/"+lnID, b.APIKey, nil); status != 404 {
		t.Fatalf("another store's invoice: %d", status)
	}
}
