//go:build itest

package itest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/harness"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc"
)

// poolInvoice is what the address pool test reads of an invoice.
type poolInvoice struct {
	ID                    string   `json:"id"`
	Status                string   `json:"status"`
	Amount                int64    `json:"amount"`
	OnchainAddress        string   `json:"onchainAddress"`
	LightningInvoice      string   `json:"lightningInvoice"`
	EnabledPaymentMethods []string `json:"enabledPaymentMethods"`
}

// TestAddressPoolDuringLndOutage (issue 20, finding 1) runs on btcd and
// a real lnd: a store without an xpub takes its on-chain addresses from
// lnd's wallet. While lnd is stopped its invoices are offered on-chain
// only, to addresses of the pool Kassa took ahead, each once, through a
// restart of Kassa; a payment to one settles while lnd is still down
// and lands in lnd's wallet; invoices made while Kassa reconnects to
// lnd answer 200; the pool fills up again with lnd back; used up in a
// second outage, creation answers 503 naming Lightning. On the old main
// the first invoice of the outage answered 503 "the chain backend
// cannot give an address right now".
func TestAddressPoolDuringLndOutage(t *testing.T) {
	t.Parallel()
	const size = 25
	wallet := harness.NewWallet(t, harness.ParamsOf("regtest"))
	btcd := harness.StartNode(t, harness.NodeConfig{MiningAddr: wallet.Address(), TxIndex: true})
	btcd.Mine(102)
	service := harness.StartLnd(t, btcd, "pool")
	args := []string{"--chain", chainURL(btcd), "--lightning", service.URL(), "--invoice-expiry", "10m", "--address-pool", fmt.Sprint(size)}
	k := harness.StartKassa(t, "", args...)
	store := k.CreateStore("--name", "No xpub", "--confirmations", "1")

	poolLeft := func() int {
		t.Helper()
		var h struct {
			Chain struct {
				AddressPool *int   `json:"addressPool"`
				Warning     string `json:"warning"`
			} `json:"chain"`
		}
		k.AdminGet("/api/v1/health", &h)
		if h.Chain.AddressPool == nil {
			return -1
		}
		return *h.Chain.AddressPool
	}
	waitPool := func(what string, want int) {
		t.Helper()
		// Health reads the chain backend at most every 5 s.
		kassatest.Eventually(t, 90*time.Second, what, func() error {
			if n := poolLeft(); n != want {
				return fmt.Errorf("health says %d addresses left, want %d", n, want)
			}
			return nil
		})
	}
	// create asks for an invoice on both methods and returns its status
	// code, the invoice (200, as GET shows it) or the error body. It
	// calls no t method: the reconnect check runs it in a goroutine.
	create := func() (int, poolInvoice, string, error) {
		do := func(method, path, body string) (int, []byte, error) {
			req, _ := http.NewRequest(method, k.URL+path, strings.NewReader(body))
			req.Header.Set("Authorization", "token "+store.APIKey)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return 0, nil, err
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			return res.StatusCode, b, err
		}
		code, b, err := do("POST", "/api/v1/stores/"+store.StoreID+"/invoices", `{"amount": 20000, "currency": "SATS"}`)
		if err != nil || code != http.StatusOK {
			return code, poolInvoice{}, string(b), err
		}
		var inv poolInvoice
		if err := json.Unmarshal(b, &inv); err != nil {
			return code, inv, string(b), err
		}
		if code, b, err = do("GET", "/api/v1/stores/"+store.StoreID+"/invoices/"+inv.ID, ""); err != nil || code != http.StatusOK {
			return code, inv, string(b), fmt.Errorf("read invoice %s: %d %v", inv.ID, code, err)
		}
		return code, inv, "", json.Unmarshal(b, &inv)
	}
	handed := map[string]string{} // address → invoice
	onchainOnly := func(what string) poolInvoice {
		t.Helper()
		code, inv, body, err := create()
		if err != nil || code != http.StatusOK {
			t.Fatalf("%s: %d %s %v", what, code, body, err)
		}
		if inv.LightningInvoice != "" || slices.Contains(inv.EnabledPaymentMethods, "Lightning") || inv.OnchainAddress == "" {
			t.Fatalf("%s: methods %v, bolt11 %q, address %q; want on-chain only", what, inv.EnabledPaymentMethods, inv.LightningInvoice, inv.OnchainAddress)
		}
		if other, ok := handed[inv.OnchainAddress]; ok {
			t.Fatalf("%s: address %s handed out twice (to %s and %s)", what, inv.OnchainAddress, other, inv.ID)
		}
		handed[inv.OnchainAddress] = inv.ID
		return inv
	}

	waitPool("the pool filled at start", size)
	code, up, body, err := create()
	if err != nil || code != http.StatusOK || up.LightningInvoice == "" || up.OnchainAddress == "" {
		t.Fatalf("invoice with lnd up: %d %+v %s %v", code, up, body, err)
	}
	handed[up.OnchainAddress] = up.ID

	t.Log("lnd stopped: invoices on-chain only, to pool addresses; one is paid and settles")
	service.Stop()
	var outage []poolInvoice
	for i := range 3 {
		outage = append(outage, onchainOnly(fmt.Sprintf("outage invoice %d", i)))
	}
	waitPool("three pool addresses used", size-3)
	paid := outage[0]
	wallet.Pay(t, btcd, harness.Output{Address: paid.OnchainAddress, Amount: paid.Amount})
	btcd.Mine(1)
	k.WaitStatus(store, paid.ID, "Settled", "")

	t.Log("kassa restarted during the outage: the used addresses stay used")
	k.Stop()
	k = harness.StartKassa(t, k.Data, args...)
	waitPool("the pool after a restart", size-3)
	onchainOnly("outage invoice after the restart") // a fifth address: none is handed out twice

	t.Log("lnd back: no 503 while lnd starts and Kassa reconnects, and the pool fills up again")
	// An invoice a second while lnd starts, until one offers Lightning.
	type answer struct {
		code          int
		lightning     bool
		address, body string
		err           error
	}
	answers := make(chan answer, 1000)
	go func() {
		defer close(answers)
		deadline := time.Now().Add(3 * time.Minute)
		for time.Now().Before(deadline) {
			code, inv, body, err := create()
			answers <- answer{code, inv.LightningInvoice != "", inv.OnchainAddress, body, err}
			if err != nil || code != http.StatusOK || inv.LightningInvoice != "" {
				return
			}
			time.Sleep(time.Second)
		}
	}()
	service.Start()
	reconnect, back := 0, false
	for a := range answers {
		if a.err != nil || a.code != http.StatusOK {
			t.Fatalf("invoice while lnd starts and Kassa reconnects: %d %s %v", a.code, a.body, a.err)
		}
		if other, ok := handed[a.address]; ok && a.address != "" {
			t.Fatalf("address %s handed out twice (to %s and another invoice)", a.address, other)
		}
		handed[a.address] = "reconnect"
		if back = a.lightning; !back {
			reconnect++
		}
	}
	if !back {
		t.Fatal("no invoice offered Lightning within 3 minutes of lnd's start")
	}
	t.Logf("invoices offered on-chain only while lnd started and Kassa reconnected: %d, none refused", reconnect)
	waitPool("the pool refilled with lnd back", size)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	var txs *lnrpc.TransactionDetails
	txs, err = service.Client.GetTransactions(ctx, &lnrpc.GetTransactionsRequest{})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if !serviceOwns(txs, paid.OnchainAddress) {
		t.Fatalf("the payment to pool address %s is not in lnd's wallet", paid.OnchainAddress)
	}

	t.Log("lnd stopped again: the pool used up, then 503 naming Lightning")
	service.Stop()
	for i := range size {
		onchainOnly(fmt.Sprintf("second outage invoice %d", i))
	}
	code, _, body, err = create()
	if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, "Lightning (lnd) is unreachable") || strings.Contains(body, "chain backend") {
		t.Fatalf("pool used up, lnd down: %d %s; want 503 naming Lightning", code, body)
	}
	waitPool("the pool empty", 0)
	t.Logf("pool size %d; %d addresses handed out in all, each once; %d left after the second outage", size, len(handed), poolLeft())

	service.Start()
	waitPool("the pool refilled after the second outage", size)
}
