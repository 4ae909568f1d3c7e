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
// docs/api.md's invoice states through the HTTP API and the sim CLI: the
// health, store and rates records; a Lightning invoice from its create
// response to its transactions and payment; on-chain, overpaid, short
// within the tolerance, expired, underpaid and paid after expiry; the
// invoice lists and their date filters; pay links; and bad input.
func TestEndToEnd(t *testing.T) {
	s := startServer(t, t.TempDir(), "--dev", "--invoice-expiry", "8s", "--monitoring", "1m")
	a := s.createStore("--name", "Alpha", "--currency", "EUR", "--percent-fee", "1", "--tolerance", "1")
	b := s.createStore("--name", "Beta", "--currency", "USD")
	e := &endToEnd{t: t, s: s, a: a, b: b, base: "/api/v1/stores/" + a.StoreID}

	step(t, "health needs no key and says it is a simulation", e.health)
	step(t, "store record (docs/api.md, Stores)", e.storeRecord)
	step(t, "rates: one entry per fiat pair", e.rates)
	step(t, "Lightning: the create response", e.createLightning)
	step(t, "Lightning: Processing then Settled, back to back", e.payLightning)
	step(t, "Lightning: transfer and fee lines, the payment", e.lightningRecords)
	step(t, "on-chain: Processing in the mempool, Settled after a block", e.onchain)
	step(t, "overpaid: Settled Overpaid", e.overpaid)
	step(t, "short within the 1% tolerance: Settled None", e.withinTolerance)
	step(t, "expiry: nothing received, underpaid, paid after expiry", e.expiry)
	step(t, "lists: newest first, date filters", e.lists)
	step(t, "pay links", e.payLinks)
	step(t, "bad input gets a clear error and stores nothing", e.badInput)
}

// endToEnd is TestEndToEnd's server, its two stores, and the Lightning
// invoice its later steps read again.
type endToEnd struct {
	t    *testing.T
	s    *server
	a, b storeCreds
	base string // store a's API path

	lnID    string         // the Lightning invoice
	settled map[string]any // its record once Settled
}

func (e *endToEnd) create(body map[string]any) map[string]any {
	e.t.Helper()
	return e.s.json("POST", e.base+"/invoices", e.a.APIKey, body, 200)
}

func (e *endToEnd) get(id string) map[string]any {
	e.t.Helper()
	return e.s.json("GET", e.base+"/invoices/"+id, e.a.APIKey, nil, 200)
}

func (e *endToEnd) waitStatus(id, status, additional string) map[string]any {
	e.t.Helper()
	var inv map[string]any
	waitFor(e.t, 15*time.Second, id+" "+status+"/"+additional, func() bool {
		inv = e.get(id)
		return inv["status"] == status && inv["additionalStatus"] == additional
	})
	return inv
}

func (e *endToEnd) health() {
	t, s := e.t, e.s
	health := s.json("GET", "/api/v1/health", "", nil, 200)
	if health["status"] != "ok" || health["simulation"] != true {
		t.Fatalf("health = %v", health)
	}
}

func (e *endToEnd) storeRecord() {
	t, s, a := e.t, e.s, e.a
	st := s.json("GET", e.base, a.APIKey, nil, 200)
	requireFields(t, "store", st, "storeId", "name", "walletMinSendable", "walletMaxSendable", "apiKey", "percentFee", "underpaymentTolerance", "currency")
	if st["storeId"] != a.StoreID || st["currency"] != "EUR" || num(st, "percentFee") != 1 || num(st, "underpaymentTolerance") != 1 || st["apiKey"] != a.APIKey {
		t.Fatalf("store = %v", st)
	}
}

func (e *endToEnd) rates() {
	t := e.t
	rates := e.s.list(e.base+"/rates", e.a.APIKey)
	if len(rates) < 6 {
		t.Fatalf("rates = %v", rates)
	}
	requireFields(t, "rate", rates[0], "currencyPair", "rate", "errors")
}

// createLightning creates the Lightning invoice and checks every field
// of the create response.
func (e *endToEnd) createLightning() {
	t := e.t
	ln := e.create(map[string]any{"amount": "10", "currency": "EUR", "orderId": "1001", "buyerEmail": "b@example.com",
		"walletMessage": "thanks", "metadata": map[string]any{"sku": "A1"}, "redirectUrl": "https://shop.example/done"})
	requireFields(t, "create response", ln, "id", "storeId", "status", "amount", "orderId", "buyerEmail", "currency",
		"enabledPaymentMethods", "metadata", "lightningInvoice", "onchainAddress", "qrCodes", "redirectAutomatically",
		"walletMessage", "createdAt", "checkoutLink", "bip21")
	if ln["status"] != "New" || ln["storeId"] != e.a.StoreID || ln["currency"] != "EUR" || ln["orderId"] != "1001" {
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
	e.lnID = ln["id"].(string)
}

// payLightning pays the Lightning invoice and checks the settled record
// and its events.
func (e *endToEnd) payLightning() {
	t, s, lnID := e.t, e.s, e.lnID
	s.mustCLI("sim", "pay", lnID, "--method", "lightning")
	inv := e.waitStatus(lnID, "Settled", "None")
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
	e.settled = inv
}

// lightningRecords checks the settled Lightning invoice's transfer line
// with its 1% fee, its fee line, both transaction reads, and its payment.
func (e *endToEnd) lightningRecords() {
	t, s, a, base, lnID := e.t, e.s, e.a, e.base, e.lnID
	sats := num(e.settled, "amount")
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
}

func (e *endToEnd) onchain() {
	t, s := e.t, e.s
	oc := e.create(map[string]any{"amount": 20000, "currency": "SATS"})
	ocID := oc["id"].(string)
	s.mustCLI("sim", "pay", ocID, "--method", "onchain")
	e.waitStatus(ocID, "Processing", "None")
	s.mustCLI("sim", "mine", "1")
	e.waitStatus(ocID, "Settled", "None")
	if ev := s.waitEvents(ocID, 3); ev != "[New:None Processing:None Settled:None]" {
		t.Fatalf("on-chain events = %s", ev)
	}
	if p := e.get(ocID)["paymentMethod"]; p != "BTC/BTC" {
		t.Fatalf("paymentMethod = %v", p)
	}
}

func (e *endToEnd) overpaid() {
	s := e.s
	over := e.create(map[string]any{"amount": 10000, "currency": "SATS"})
	s.mustCLI("sim", "pay", over["id"].(string), "--method", "onchain", "--amount", "12000")
	s.mustCLI("sim", "mine")
	if inv := e.waitStatus(over["id"].(string), "Settled", "Overpaid"); num(inv, "totalPaid") != 12000 {
		e.t.Fatalf("overpaid = %v", inv)
	}
}

func (e *endToEnd) withinTolerance() {
	s := e.s
	tol := e.create(map[string]any{"amount": 10000, "currency": "SATS"})
	s.mustCLI("sim", "pay", tol["id"].(string), "--method", "onchain", "--amount", "9900")
	s.mustCLI("sim", "mine")
	e.waitStatus(tol["id"].(string), "Settled", "None")
}

// expiry: nothing received, Expired None after the interval; underpaid,
// Expired Underpaid; paid after expiry, Settled PaidAfterExpiration; and
// an expired invoice's Lightning invoice can no longer be paid.
func (e *endToEnd) expiry() {
	t, s := e.t, e.s
	empty := e.create(map[string]any{"amount": 1000, "currency": "SATS"})
	under := e.create(map[string]any{"amount": 10000, "currency": "SATS"})
	late := e.create(map[string]any{"amount": 5000, "currency": "SATS"})
	s.mustCLI("sim", "pay", under["id"].(string), "--method", "onchain", "--amount", "5000")
	s.mustCLI("sim", "mine")
	// A partial payment leaves the invoice New (no Processing). The
	// invoice may already have expired on a slow machine (the interval is
	// 3 s), so the status is only required not to have moved forward;
	// the event list below proves that no Processing was ever sent.
	if inv := e.get(under["id"].(string)); (inv["status"] != "New" && inv["status"] != "Expired") || num(inv, "totalPaid") != 5000 {
		t.Fatalf("partial payment must leave the invoice New: %v", inv)
	}
	e.waitStatus(empty["id"].(string), "Expired", "None")
	e.waitStatus(under["id"].(string), "Expired", "Underpaid")
	e.waitStatus(late["id"].(string), "Expired", "None")
	if ev := s.waitEvents(under["id"].(string), 2); ev != "[New:None Expired:Underpaid]" {
		t.Fatalf("underpaid events = %s", ev)
	}
	s.mustCLI("sim", "pay", late["id"].(string), "--method", "onchain")
	s.mustCLI("sim", "mine")
	e.waitStatus(late["id"].(string), "Settled", "PaidAfterExpiration")
	if ev := s.waitEvents(late["id"].(string), 3); ev != "[New:None Expired:None Settled:PaidAfterExpiration]" {
		t.Fatalf("late events = %s", ev)
	}
	// An expired invoice's Lightning invoice can no longer be paid.
	if _, err := s.cli("sim", "pay", empty["id"].(string), "--method", "lightning"); err == nil {
		t.Fatal("paid an expired Lightning invoice")
	}
}

// lists: newest first, date filters in ISO 8601 and Unix seconds.
func (e *endToEnd) lists() {
	t, s, a, base := e.t, e.s, e.a, e.base
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
}

// payLinks creates, reads, updates, lists and deletes a pay link, and
// checks that an amount of 0 is refused.
func (e *endToEnd) payLinks() {
	t, s, a, base := e.t, e.s, e.a, e.base
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
	if v := s.json("POST", base+"/payment-requests", a.APIKey, map[string]any{"amount": 0}, 400); v["errors"] == nil {
		t.Fatalf("pay link validation = %v", v)
	}
	s.json("DELETE", base+"/payment-requests/"+prID, a.APIKey, nil, 200)
}

// badInput: each bad create gets its status and a message and stores
// nothing; another store's key reads neither the invoice nor, through
// its own store, an invoice of this one.
func (e *endToEnd) badInput() {
	t, s, a, b, base, lnID := e.t, e.s, e.a, e.b, e.base, e.lnID
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
