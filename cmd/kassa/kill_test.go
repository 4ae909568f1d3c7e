package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/bech32"

	"github.com/kassapay/kassa/kassatest"
)

// TestKill9 kills the server with SIGKILL under concurrent invoice
// creation and payment, restarts it on the same data, and checks that
// every invoice whose create answered 200 is there, that no transaction
// is duplicated, and that open invoices still expire on time.
func TestKill9(t *testing.T) {
	const expiry = 4 * time.Second
	dir := t.TempDir()
	s := startServer(t, dir, "--dev", "--invoice-expiry", expiry.String())
	a := s.createStore("--name", "Crash", "--percent-fee", "1")
	token, err := os.ReadFile(filepath.Join(dir, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	k := &kill9{t: t, expiry: expiry, dir: dir, s: s, a: a, token: strings.TrimSpace(string(token)),
		base: "/api/v1/stores/" + a.StoreID, paid: map[string]bool{}, stop: make(chan struct{})}

	step(t, "load: 8 workers create invoices, 2 pay them over Lightning", k.startLoad)
	step(t, "SIGKILL once the load is well under way", k.killUnderLoad)
	step(t, "restart: every answered invoice is there, every paid one Settled", k.restart)
	step(t, "no duplicated ledger line; every settled invoice has its deposit", k.ledger)
	step(t, "open invoices still expire, on time", k.expireOnTime)
}

// kill9 is TestKill9's state: the server killed and the one restarted on
// its data, the load's workers, and what the load saw answered.
type kill9 struct {
	t      *testing.T
	expiry time.Duration
	dir    string
	s, s2  *server
	a      storeCreds
	token  string // the admin token
	base   string

	mu       sync.Mutex
	answered []kill9Created  // creates that answered 200, in order
	paid     map[string]bool // invoices whose payment answered 200
	wg       sync.WaitGroup
	stop     chan struct{}

	ready  time.Time         // when the restarted server was up
	status map[string]string // each answered invoice's status after the restart
	lines  map[string]int    // ledger lines by invoice id/type
}

type kill9Created struct {
	id string
	at time.Time
}

// post sends a JSON POST to the first server with an API key or, when
// auth starts with "Bearer ", that header; no answer gives status 0.
func (k *kill9) post(path, auth string, body string) (int, map[string]any) {
	req, _ := http.NewRequest("POST", k.s.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if strings.HasPrefix(auth, "Bearer ") {
		req.Header.Set("Authorization", auth)
	} else {
		req.Header.Set("x-api-key", auth)
	}
	res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, nil
	}
	defer res.Body.Close()
	var m map[string]any
	json.NewDecoder(res.Body).Decode(&m)
	return res.StatusCode, m
}

// startLoad starts 8 workers that create invoices and two payers that
// settle them over Lightning while creation goes on.
func (k *kill9) startLoad() {
	for w := 0; w < 8; w++ {
		k.wg.Add(1)
		go k.creator(w)
	}
	for p := 0; p < 2; p++ {
		k.wg.Add(1)
		go k.payer(p)
	}
}

// creator creates invoices until stopped or the server is gone.
func (k *kill9) creator(w int) {
	defer k.wg.Done()
	for i := 0; ; i++ {
		select {
		case <-k.stop:
			return
		default:
		}
		status, m := k.post(k.base+"/invoices", k.a.APIKey, fmt.Sprintf(`{"amount": %d, "currency": "SATS", "orderId": "w%d-%d"}`, 1000+i, w, i))
		if id, ok := m["id"].(string); status == 200 && ok {
			k.mu.Lock()
			k.answered = append(k.answered, kill9Created{id, time.Now()})
			k.mu.Unlock()
		} else if status == 0 || status == 200 {
			// No answer, or a 200 whose body the kill cut off:
			// the server is gone.
			return // the server is gone
		}
	}
}

// payer p pays every other answered invoice, from the p-th, over
// Lightning, until stopped or the server is gone.
func (k *kill9) payer(p int) {
	defer k.wg.Done()
	for i := p; ; i += 2 {
		select {
		case <-k.stop:
			return
		default:
		}
		k.mu.Lock()
		if i >= len(k.answered) {
			k.mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			i -= 2
			continue
		}
		id := k.answered[i].id
		k.mu.Unlock()
		status, _ := k.post("/admin/v1/sim/pay", "Bearer "+k.token, fmt.Sprintf(`{"invoiceId": %q, "method": "lightning"}`, id))
		if status == 200 {
			k.mu.Lock()
			k.paid[id] = true
			k.mu.Unlock()
		} else if status == 0 {
			return
		}
	}
}

// killUnderLoad kills once the load is well under way, whatever the
// machine's speed, stops the load, and requires that it did enough.
func (k *kill9) killUnderLoad() {
	t := k.t
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		k.mu.Lock()
		enough := len(k.answered) >= 60 && len(k.paid) >= 10
		k.mu.Unlock()
		if enough {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	k.s.Kill()
	close(k.stop)
	k.wg.Wait()
	if len(k.answered) < 20 || len(k.paid) < 5 {
		t.Fatalf("too little load before the kill: %d created, %d paid", len(k.answered), len(k.paid))
	}
	t.Logf("killed after %d answered creates and %d payments", len(k.answered), len(k.paid))
}

// restart starts a server on the same data and reads every answered
// invoice: each is there, and each paid one is Settled.
func (k *kill9) restart() {
	t, base := k.t, k.base
	k.s2 = startServer(t, k.dir, "--dev", "--invoice-expiry", k.expiry.String())
	k.ready = time.Now()
	k.s2.t = t
	k.status = map[string]string{}
	for _, c := range k.answered {
		inv := k.s2.json("GET", base+"/invoices/"+c.id, k.a.APIKey, nil, 200)
		k.status[c.id] = inv["status"].(string)
	}
	for id := range k.paid {
		if k.status[id] != "Settled" {
			t.Errorf("invoice %s was paid before the kill but is %s", id, k.status[id])
		}
	}
}

// ledger: no duplicated ledger line; every settled invoice has its
// transfer and fee lines.
func (k *kill9) ledger() {
	t := k.t
	k.lines = map[string]int{}
	for _, tx := range k.s2.list(k.base+"/transactions", k.a.APIKey) {
		k.lines[fmt.Sprint(tx["invoiceId"], "/", tx["type"])]++
	}
	for key, n := range k.lines {
		if n != 1 {
			t.Errorf("%d ledger lines %s", n, key)
		}
	}
	for id, st := range k.status {
		if st == "Settled" && (k.lines[id+"/transfer"] != 1 || k.lines[id+"/fee"] != 1) {
			t.Errorf("settled invoice %s has lines %d/%d", id, k.lines[id+"/transfer"], k.lines[id+"/fee"])
		}
	}
}

// expireOnTime: open invoices still expire, on time: none before its
// expiry, all soon after it, or soon after the restart for those due
// while the service was down (a three-node cluster,
// KASSA_E2E_STORE=cluster, takes seconds to form again under load).
func (k *kill9) expireOnTime() {
	t, expiry, status := k.t, k.expiry, k.status
	due := k.answered[len(k.answered)-1].at.Add(expiry)
	if k.ready.After(due) {
		due = k.ready
	}
	kassatest.Eventually(t, time.Until(due.Add(5*time.Second)), "every open invoice to expire", func() error {
		for _, c := range k.answered {
			if status[c.id] == "Settled" || status[c.id] == "Expired" {
				continue
			}
			inv := k.s2.json("GET", k.base+"/invoices/"+c.id, k.a.APIKey, nil, 200)
			if inv["status"] == "Settled" {
				// A payment in flight at the kill, kept by the simulated
				// node and delivered after the restart.
				status[c.id] = "Settled"
				continue
			}
			if inv["status"] != "Expired" {
				return fmt.Errorf("invoice %s (created %s, due %s) is %v", c.id, c.at.Format(time.StampMilli),
					c.at.Add(expiry).Format(time.StampMilli), inv["status"])
			}
			// Both times are whole seconds: an expiry is on time when it
			// is not before the creation second plus the interval.
			if created, expired := int64(num(inv, "createdAt")), int64(num(inv, "updatedAt")); expired < created+int64(expiry/time.Second) {
				t.Fatalf("invoice %s expired at %d, before its expiry %d", c.id, expired, created+int64(expiry/time.Second))
			}
			status[c.id] = "Expired"
		}
		return nil
	})
}

// TestKill9DuringPayouts kills the server with SIGKILL while its sender
// pays approved refund payouts, Lightning (BOLT11 invoices of another
// store, which the simulated node pays) and on-chain (the simulated
// chain's wallet): approved at once, killed after half the answers, so
// that payouts are caught awaiting approval, approved, recorded, or sent
// but not yet recorded. After the restart every payout ends Completed, paid once:
// each target invoice settled, each payout's refund line written once,
// and the balance debited by the amounts and the network fees alone. The
// states met at the restart are logged: in-process tests
// (actors/refund_onchain_test.go, refund_send_test.go) set each one.
func TestKill9DuringPayouts(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, "--dev")
	a := s.createStore("--name", "Refunds", "--currency", "EUR")
	b := s.createStore("--name", "Customer", "--currency", "EUR")
	key := adminKey(t, s, a.StoreID, "btcpay.store.cancreatenonapprovedpullpayments", "btcpay.store.canviewpullpayments",
		"btcpay.store.canviewpayouts", "btcpay.store.canmanagepayouts", "btcpay.store.canviewinvoices", "btcpay.store.canviewreports")
	s.mustCLI("store", "topup", a.StoreID, "--amount", "500000")
	base := "/api/v1/stores/" + a.StoreID
	const n = 8
	var payouts, targets []string
	for i := range n {
		pp := s.json("POST", base+"/pull-payments", key, map[string]any{"name": fmt.Sprint("refund ", i), "amount": "10000", "currency": "SATS"}, 200)
		dest := fmt.Sprintf("bcrt1q%s", regtestProgram(i))
		if i%2 == 0 {
			inv := s.json("POST", "/api/v1/stores/"+b.StoreID+"/invoices", b.APIKey, map[string]any{"amount": 10000, "currency": "SATS"}, 200)
			targets = append(targets, inv["id"].(string))
			dest = inv["lightningInvoice"].(string)
		}
		po := s.json("POST", base+"/pull-payments/"+pp["id"].(string)+"/payouts", key, map[string]any{"destination": dest}, 200)
		payouts = append(payouts, po["id"].(string))
	}
	before := storeBalance(t, s, a.StoreID)
	// The approvals at once; the kill follows half of the answers, while
	// the sender pays the approved ones and the rest are in flight.
	var wg sync.WaitGroup
	answered := make(chan struct{}, n)
	client := &http.Client{Timeout: 10 * time.Second}
	for _, id := range payouts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", s.url+base+"/payouts/"+id+"/approve", nil)
			req.Header.Set("x-api-key", key)
			res, err := client.Do(req)
			if err != nil {
				return // the server is gone
			}
			res.Body.Close()
			if res.StatusCode == 200 {
				answered <- struct{}{}
			}
		}()
	}
	for range n / 2 {
		<-answered
	}
	s.Kill()
	wg.Wait()

	s2 := startServer(t, dir, "--dev")
	s2.t = t
	// Approvals the kill cut off are made again: each is approved once
	// (a second would answer 409).
	states := map[string]int{}
	for _, id := range payouts {
		p := s2.json("GET", base+"/payouts/"+id, key, nil, 200)
		states[p["state"].(string)]++
		if p["state"] == "AwaitingApproval" {
			s2.json("POST", base+"/payouts/"+id+"/approve", key, nil, 200)
		}
	}
	t.Logf("payouts by state at the restart: %v", states)
	var amounts, fees float64
	for _, id := range payouts {
		var p map[string]any
		waitFor(t, 60*time.Second, id+" completed", func() bool {
			p = s2.json("GET", base+"/payouts/"+id, key, nil, 200)
			return p["state"] == "Completed" || p["state"] == "Cancelled"
		})
		if p["state"] != "Completed" || (p["txid"] == nil && p["paymentHash"] == nil) {
			t.Fatalf("payout after the restart: %v", p)
		}
		amounts += num(p, "amount")
		fees += num(p, "networkFee")
	}
	for _, id := range targets {
		waitFor(t, 15*time.Second, id+" settled by its refund", func() bool {
			return s2.json("GET", "/api/v1/stores/"+b.StoreID+"/invoices/"+id, b.APIKey, nil, 200)["status"] == "Settled"
		})
	}
	refunds, refunded, netFees := refundLedger(s2, base, key)
	if refunds != n || refunded != amounts || netFees != fees {
		t.Fatalf("ledger: %d refund lines of %v sat, net network fees %v; payouts %v sat, fees %v", refunds, refunded, netFees, amounts, fees)
	}
	if got := storeBalance(t, s2, a.StoreID); got != before-amounts-fees {
		t.Fatalf("balance %v, want %v", got, before-amounts-fees)
	}
}

// regtestProgram is the data part of a distinct valid P2WPKH regtest
// address for i: a bech32 program of 20 bytes and its checksum.
func regtestProgram(i int) string {
	prog := make([]byte, 20)
	prog[19] = byte(i + 1)
	conv, _ := bech32.ConvertBits(prog, 8, 5, true)
	s, _ := bech32.Encode("bcrt", append([]byte{0}, conv...))
	return strings.TrimPrefix(s, "bcrt1q")
}
