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

// TestAddressPoolDuringLndOutage runs on btcd and
// a real lnd: a store without an xpub takes its on-chain addresses from
// lnd's wallet. While lnd is stopped its invoices are offered on-chain
// only, to addresses of the pool Kassa took ahead, each once, through a
// restart of Kassa; a payment to one settles while lnd is still down
// and lands in lnd's wallet; invoices made while Kassa reconnects to
// lnd answer 200; the pool fills up again with lnd back; used up in a
// second outage, creation answers 503 naming Lightning.
func TestAddressPoolDuringLndOutage(t *testing.T) {
	t.Parallel()
	s := &poolScenario{t: t, size: 25, handed: map[string]string{}}
	s.wallet = harness.NewWallet(t, harness.ParamsOf("regtest"))
	s.btcd = harness.StartNode(t, harness.NodeConfig{MiningAddr: s.wallet.Address(), TxIndex: true})
	s.btcd.Mine(102)
	s.service = harness.StartLnd(t, s.btcd, "pool")
	s.args = []string{"--chain", chainURL(s.btcd), "--lightning", s.service.URL(), "--invoice-expiry", "10m", "--address-pool", fmt.Sprint(s.size)}
	s.k = harness.StartKassa(t, "", s.args...)
	s.store = s.k.CreateStore("--name", "No xpub", "--confirmations", "1")

	step(t, "the pool filled at start; an invoice with lnd up offers Lightning and an address", s.lndUp)
	step(t, "lnd stopped: invoices on-chain only, to pool addresses; one is paid and settles", s.firstOutage)
	step(t, "kassa restarted during the outage: the used addresses stay used", s.restartInOutage)
	step(t, "lnd back: no 503 while lnd starts and Kassa reconnects", s.lndBack)
	step(t, "the pool fills up again, and the outage's payment is in lnd's wallet", s.refilled)
	step(t, "lnd stopped again: the pool used up, then 503 naming Lightning", s.secondOutage)
	step(t, "lnd back after the second outage: the pool fills up again", func() {
		s.service.Start()
		s.waitPool("the pool refilled after the second outage", s.size)
	})
}

// poolScenario is what the address pool test's steps share: the
// network, Kassa with its pool of size addresses, the store without an
// xpub, and every on-chain address handed out so far.
type poolScenario struct {
	t       *testing.T
	size    int
	wallet  *harness.Wallet
	btcd    *harness.Node
	service *harness.Lnd
	args    []string
	k       *harness.Kassa
	store   harness.Store
	handed  map[string]string // address → invoice
	paid    poolInvoice       // the outage invoice paid on-chain
}

// poolLeft is the pool's size as health shows it, -1 when it shows none.
func (s *poolScenario) poolLeft() int {
	s.t.Helper()
	var h struct {
		Chain struct {
			AddressPool *int   `json:"addressPool"`
			Warning     string `json:"warning"`
		} `json:"chain"`
	}
	s.k.AdminGet("/api/v1/health", &h)
	if h.Chain.AddressPool == nil {
		return -1
	}
	return *h.Chain.AddressPool
}

func (s *poolScenario) waitPool(what string, want int) {
	s.t.Helper()
	// Health reads the chain backend at most every 5 s.
	kassatest.Eventually(s.t, 90*time.Second, what, func() error {
		if n := s.poolLeft(); n != want {
			return fmt.Errorf("health says %d addresses left, want %d", n, want)
		}
		return nil
	})
}

// create asks for an invoice on both methods and returns its status
// code, the invoice (200, as GET shows it) or the error body. It calls
// no t method: the reconnect check runs it in a goroutine.
func (s *poolScenario) create() (int, poolInvoice, string, error) {
	do := func(method, path, body string) (int, []byte, error) {
		req, _ := http.NewRequest(method, s.k.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "token "+s.store.APIKey)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return res.StatusCode, b, err
	}
	code, b, err := do("POST", "/api/v1/stores/"+s.store.StoreID+"/invoices", `{"amount": 20000, "currency": "SATS"}`)
	if err != nil || code != http.StatusOK {
		return code, poolInvoice{}, string(b), err
	}
	var inv poolInvoice
	if err := json.Unmarshal(b, &inv); err != nil {
		return code, inv, string(b), err
	}
	if code, b, err = do("GET", "/api/v1/stores/"+s.store.StoreID+"/invoices/"+inv.ID, ""); err != nil || code != http.StatusOK {
		return code, inv, string(b), fmt.Errorf("read invoice %s: %d %v", inv.ID, code, err)
	}
	return code, inv, "", json.Unmarshal(b, &inv)
}

// onchainOnly creates an invoice and checks that it offers on-chain
// only, to an address not handed out before.
func (s *poolScenario) onchainOnly(what string) poolInvoice {
	t := s.t
	t.Helper()
	code, inv, body, err := s.create()
	if err != nil || code != http.StatusOK {
		t.Fatalf("%s: %d %s %v", what, code, body, err)
	}
	if inv.LightningInvoice != "" || slices.Contains(inv.EnabledPaymentMethods, "Lightning") || inv.OnchainAddress == "" {
		t.Fatalf("%s: methods %v, bolt11 %q, address %q; want on-chain only", what, inv.EnabledPaymentMethods, inv.LightningInvoice, inv.OnchainAddress)
	}
	if other, ok := s.handed[inv.OnchainAddress]; ok {
		t.Fatalf("%s: address %s handed out twice (to %s and %s)", what, inv.OnchainAddress, other, inv.ID)
	}
	s.handed[inv.OnchainAddress] = inv.ID
	return inv
}

func (s *poolScenario) lndUp() {
	s.waitPool("the pool filled at start", s.size)
	code, up, body, err := s.create()
	if err != nil || code != http.StatusOK || up.LightningInvoice == "" || up.OnchainAddress == "" {
		s.t.Fatalf("invoice with lnd up: %d %+v %s %v", code, up, body, err)
	}
	s.handed[up.OnchainAddress] = up.ID
}

func (s *poolScenario) firstOutage() {
	s.service.Stop()
	var outage []poolInvoice
	for i := range 3 {
		outage = append(outage, s.onchainOnly(fmt.Sprintf("outage invoice %d", i)))
	}
	s.waitPool("three pool addresses used", s.size-3)
	s.paid = outage[0]
	s.wallet.Pay(s.t, s.btcd, harness.Output{Address: s.paid.OnchainAddress, Amount: s.paid.Amount})
	s.btcd.Mine(1)
	s.k.WaitStatus(s.store, s.paid.ID, "Settled", "")
}

func (s *poolScenario) restartInOutage() {
	s.k.Stop()
	s.k = harness.StartKassa(s.t, s.k.Data, s.args...)
	s.waitPool("the pool after a restart", s.size-3)
	s.onchainOnly("outage invoice after the restart") // a fifth address: none is handed out twice
}

func (s *poolScenario) lndBack() {
	t := s.t
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
			code, inv, body, err := s.create()
			answers <- answer{code, inv.LightningInvoice != "", inv.OnchainAddress, body, err}
			if err != nil || code != http.StatusOK || inv.LightningInvoice != "" {
				return
			}
			time.Sleep(time.Second)
		}
	}()
	s.service.Start()
	reconnect, back := 0, false
	for a := range answers {
		if a.err != nil || a.code != http.StatusOK {
			t.Fatalf("invoice while lnd starts and Kassa reconnects: %d %s %v", a.code, a.body, a.err)
		}
		if other, ok := s.handed[a.address]; ok && a.address != "" {
			t.Fatalf("address %s handed out twice (to %s and another invoice)", a.address, other)
		}
		s.handed[a.address] = "reconnect"
		if back = a.lightning; !back {
			reconnect++
		}
	}
	if !back {
		t.Fatal("no invoice offered Lightning within 3 minutes of lnd's start")
	}
	t.Logf("invoices offered on-chain only while lnd started and Kassa reconnected: %d, none refused", reconnect)
}

func (s *poolScenario) refilled() {
	s.waitPool("the pool refilled with lnd back", s.size)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	txs, err := s.service.Client.GetTransactions(ctx, &lnrpc.GetTransactionsRequest{})
	cancel()
	if err != nil {
		s.t.Fatal(err)
	}
	if !serviceOwns(txs, s.paid.OnchainAddress) {
		s.t.Fatalf("the payment to pool address %s is not in lnd's wallet", s.paid.OnchainAddress)
	}
}

func (s *poolScenario) secondOutage() {
	s.service.Stop()
	for i := range s.size {
		s.onchainOnly(fmt.Sprintf("second outage invoice %d", i))
	}
	code, _, body, err := s.create()
	if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, "Lightning (lnd) is unreachable") || strings.Contains(body, "chain backend") {
		s.t.Fatalf("pool used up, lnd down: %d %s; want 503 naming Lightning", code, body)
	}
	s.waitPool("the pool empty", 0)
	s.t.Logf("pool size %d; %d addresses handed out in all, each once; %d left after the second outage", s.size, len(s.handed), s.poolLeft())
}
