package actors

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// downLightning is a Lightning backend whose node cannot be reached.
type downLightning struct{ fakeLightning }

func (downLightning) CreateInvoice(context.Context, kassa.MSat, string, time.Duration) (kassa.LightningInvoice, error) {
	return kassa.LightningInvoice{}, errors.New("lnd is unreachable")
}

func TestLightningOutageOffersOnchainOnly(t *testing.T) {
	h := newHarnessWith(t, openMem(t), kassatest.NewTestClock(time.Unix(1_700_000_000, 0)), func(c *Config) { c.Lightning = downLightning{} })
	h.createStore("0", "0")
	inv := h.invoice("10", kassa.EUR)
	if inv.Accepts(kassa.MethodLightning) || !inv.Accepts(kassa.MethodOnchain) || inv.OnchainAddress == "" || inv.LightningInvoice != "" {
		t.Fatalf("invoice while Lightning is down: methods %v, address %q, bolt11 %q", inv.EnabledMethods, inv.OnchainAddress, inv.LightningInvoice)
	}
	if stored := h.get(inv.ID); stored.Accepts(kassa.MethodLightning) {
		t.Fatalf("stored invoice still offers Lightning: %v", stored.EnabledMethods)
	}
	_, err := h.sys.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{
		Amount: decimal.NewFromInt(10), HasAmount: true, Currency: kassa.EUR,
		EnabledMethods: []kassa.PaymentMethod{kassa.MethodLightning},
	})
	if kassa.ErrorCode(err) != kassa.Unavailable {
		t.Fatalf("a Lightning-only invoice while Lightning is down: %v, want unavailable (503)", err)
	}
}
