package actors

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	lnsim "github.com/kassapay/kassa/lightning/sim"
)

// hopFee is a route of one hop charging 1 sat plus 1,000 ppm.
func hopFee(amount kassa.MSat) kassa.MSat { return 1000 + amount/1000 }

// A forward asks the store's Lightning address for one invoice: the
// route fee is estimated to the node of the address's last invoice
// before the invoice is asked for. Only the first forward to an address
// whose node is not known yet asks for one more, unpaid, to learn it;
// after a restart the node is still known. The merchant receives the
// amount less the routing fee the payment cost, to the satoshi, and the
// transfer line names that fee.
func TestForwardAsksTheAddressForOneInvoice(t *testing.T) {
	m := newMerchant(t)
	payer := lnsim.NewPayer(m.node)
	payer.Fee = hopFee
	db := openMem(t)
	clock := kassatest.NewTestClock(time.Unix(1_700_000_000, 0))
	h := newForwardHarness(t, db, clock, m, payer)
	h.createStore()

	forward := func(h *forwardHarness, euros string) (kassa.Transaction, int64) {
		t.Helper()
		before := m.invoices.Load()
		inv := h.invoice(euros, kassa.EUR)
		h.payLightning(inv, inv.Amount)
		tx := h.waitSettled(inv.ID)
		m.mu.Lock()
		got := m.amounts[tx.Hash]
		m.mu.Unlock()
		fee := hopFee(got)
		if got != inv.Amount.MSat()-hopFee(inv.Amount.MSat()) {
			t.Fatalf("the merchant's invoice is for %d msat; want %d less the estimated fee", got, inv.Amount.MSat())
		}
		if tx.Amount != got.Sats() || tx.RoutingFee != (fee+999).Sats() || tx.Amount+tx.RoutingFee != inv.Amount || tx.FullAmount != inv.Amount {
			t.Fatalf("transfer %+v: want %d sat received and a routing fee of %d msat, adding up to the %d sat paid", tx, got.Sats(), fee, inv.Amount)
		}
		return tx, m.invoices.Load() - before
	}
	if _, n := forward(h, "10"); n > 2 {
		t.Fatalf("the first forward asked for %d invoices, want at most 2 (one to learn the address's node)", n)
	}
	var forwards, invoices int64
	for _, euros := range []string{"10", "7", "3.5"} {
		_, n := forward(h, euros)
		forwards, invoices = forwards+1, invoices+n
		if n != 1 {
			t.Fatalf("a forward asked the Lightning address for %d invoices, want 1", n)
		}
	}
	// A restart: the address's node is read back from storage.
	h.fwd.Shutdown()
	h2 := newForwardHarness(t, db, clock, m, payer)
	h2.store = h.store
	if _, n := forward(h2, "10"); n != 1 {
		t.Fatalf("after a restart a forward asked for %d invoices, want 1", n)
	}
	forwards, invoices = forwards+1, invoices+1
	t.Logf("merchant invoices per forward once the address's node is known: %.2f", float64(invoices)/float64(forwards))
	if paid := m.paid(); len(paid) != 5 {
		t.Fatalf("merchant invoices paid: %d, want 5", len(paid))
	}
}

// An estimate too low for the route the payment takes: the payment fails
// for its fee (nothing is paid), and the next attempt estimates again and
// asks for a new invoice, which is paid once.
func TestForwardFailingForItsFeeAsksAgain(t *testing.T) {
	m := newMerchant(t)
	payer := lnsim.NewPayer(m.node)
	payer.Fee = hopFee
	var estimates atomic.Int64
	payer.Estimate = func(_ kassa.Payee, amount, limit kassa.MSat) (kassa.MSat, error) {
		if estimates.Add(1) == 1 {
			return 0, nil // the route looked free
		}
		return hopFee(amount), nil
	}
	clock := kassatest.NewTestClock(time.Unix(1_700_000_000, 0))
	h := newForwardHarness(t, openMem(t), clock, m, payer)
	h.createStore()
	inv := h.invoice("10", kassa.EUR)
	h.payLightning(inv, inv.Amount)
	eventually(t, "the payment to fail for its fee", func() bool { return payer.Sent() == 1 })
	if len(m.paid()) != 0 || h.transfer(inv.ID).Status != kassa.TransactionPending {
		t.Fatal("a payment above its fee limit was made")
	}
	tx := h.retryUntilSettled(clock, inv.ID)
	paid := m.paid()
	if len(paid) != 1 || tx.Hash != paid[0] || payer.Sent() != 2 || m.invoices.Load() != 2 {
		t.Fatalf("paid %v, %d payments, %d invoices; transfer %+v", paid, payer.Sent(), m.invoices.Load(), tx)
	}
	if tx.Amount+tx.RoutingFee != inv.Amount || tx.RoutingFee == 0 {
		t.Fatalf("transfer %+v: amount and routing fee do not add up to %d", tx, inv.Amount)
	}
}

// A Lightning payment to a store without a Lightning address is held on
// the service's node: its transfer line says Held, not Settled, and it
// is queued. Once the store sets an address it is forwarded like any
// other, once.
func TestPaymentToAStoreWithoutAnAddressIsHeldThenForwarded(t *testing.T) {
	m := newMerchant(t)
	payer := lnsim.NewPayer(m.node)
	clock := kassatest.NewTestClock(time.Unix(1_700_000_000, 0))
	h := newForwardHarness(t, openMem(t), clock, m, payer)
	st, err := h.sys.Service.CreateStore(context.Background(), kassa.StoreSettings{
		Name: "No address", Currency: kassa.EUR, PercentFee: decimal.NewFromInt(1), ConfirmationsRequired: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.store = st
	inv := h.invoice("10", kassa.EUR)
	h.payLightning(inv, inv.Amount)
	tx := h.transfer(inv.ID)
	if tx.Status != kassa.TransactionHeld || tx.Hash != "" || tx.Amount != inv.Amount {
		t.Fatalf("transfer of a store without a Lightning address: %+v, want Held without a hash", tx)
	}
	var held kassa.MSat
	if err := h.db.QueuedTransfers(context.Background(), st.ID, func(q kassa.QueuedTransfer) error { held += q.Amount; return nil }); err != nil {
		t.Fatal(err)
	}
	if held != inv.Amount.MSat() {
		t.Fatalf("held %d msat, want %d", held, inv.Amount.MSat())
	}
	if payer.Sent() != 0 || m.invoices.Load() != 0 {
		t.Fatal("money forwarded without an address")
	}
	if _, err := h.sys.Service.UpdateStore(context.Background(), st.ID, kassa.StoreUpdate{
		Name: st.Name, Currency: st.Currency, ConfirmationsRequired: st.ConfirmationsRequired, LightningAddress: m.address(),
	}); err != nil {
		t.Fatal(err)
	}
	tx = h.waitSettled(inv.ID)
	paid := m.paid()
	if len(paid) != 1 || tx.Hash != paid[0] || tx.Amount != inv.Amount || payer.Sent() != 1 {
		t.Fatalf("after the address was set: paid %v, %d payments, transfer %+v", paid, payer.Sent(), tx)
	}
}

// addressesDown is the Lightning-address client while lnd cannot be
// asked its network: every look-up fails with ErrLightningNodeUnreachable.
type addressesDown struct{}

func (addressesDown) PayRequest(context.Context, string) (kassa.PayRequest, error) {
	return kassa.PayRequest{}, kassa.ErrLightningNodeUnreachable
}
func (addressesDown) Invoice(context.Context, kassa.PayRequest, kassa.MSat, string) (kassa.AddressInvoice, error) {
	return kassa.AddressInvoice{}, kassa.ErrLightningNodeUnreachable
}

// A store created while lnd is unreachable is refused with 503 naming
// lnd, not with a 400 that blames its Lightning address; a store without
// an address is created.
func TestStoreCreationWhileLndIsUnreachableNamesLnd(t *testing.T) {
	m := newMerchant(t)
	h := newForwardHarness(t, openMem(t), kassatest.NewTestClock(time.Unix(1_700_000_000, 0)), m, lnsim.NewPayer(m.node),
		func(c *ForwarderConfig) { c.Addresses = addressesDown{} })
	_, err := h.sys.Service.CreateStore(context.Background(), kassa.StoreSettings{
		Name: "Shop", Currency: kassa.EUR, ConfirmationsRequired: 1, LightningAddress: m.address(),
	})
	if kassa.ErrorCode(err) != kassa.Unavailable || !strings.Contains(kassa.ErrorMessage(err), "lnd is unreachable") {
		t.Fatalf("store creation with lnd down: %v (%s), want Unavailable naming lnd", err, kassa.ErrorCode(err))
	}
	var ke *kassa.Error
	if errors.As(err, &ke) && len(ke.Fields) != 0 {
		t.Fatalf("the refusal blames a field: %v", ke.Fields)
	}
	if _, err := h.sys.Service.CreateStore(context.Background(), kassa.StoreSettings{Name: "No address", Currency: kassa.EUR, ConfirmationsRequired: 1}); err != nil {
		t.Fatalf("a store without a Lightning address: %v", err)
	}
}
