package actors

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// heldLightning is fakeLightning whose CreateInvoice waits for release,
// to hold creates under way.
type heldLightning struct {
	fakeLightning
	entered chan struct{}
	release chan struct{}
}

func (l heldLightning) CreateInvoice(ctx context.Context, amount kassa.MSat, memo string, expiry time.Duration) (kassa.LightningInvoice, error) {
	l.entered <- struct{}{}
	<-l.release
	return l.fakeLightning.CreateInvoice(ctx, amount, memo, expiry)
}

// TestCreatesUnderWayCountsCreatesInFlight: the store paces its syncs by
// the creates under way (persistence.DB.PaceSyncs), so the count must
// rise with each create that has begun and fall back to zero when they
// end, failed ones included.
func TestCreatesUnderWayCountsCreatesInFlight(t *testing.T) {
	ln := heldLightning{entered: make(chan struct{}), release: make(chan struct{})}
	h := newHarnessWith(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), func(c *Config) {
		c.Lightning = ln
	})
	h.createStore("0", "0")
	const n = 3
	errs := make(chan error, n+1)
	for range n {
		go func() {
			_, err := h.sys.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{
				Amount: decimal.NewFromInt(1000), HasAmount: true, Currency: kassa.SATS})
			errs <- err
		}()
		<-ln.entered
	}
	if got := h.sys.CreatesUnderWay(); got != n {
		t.Errorf("with %d creates waiting for Lightning: %d under way", n, got)
	}
	// One refused at validation counts while it runs and not after.
	if _, err := h.sys.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{
		Amount: decimal.NewFromInt(-1), HasAmount: true, Currency: kassa.SATS}); kassa.ErrorCode(err) != kassa.Invalid {
		t.Errorf("an invoice of -1 sat: %v, want invalid", err)
	}
	if got := h.sys.CreatesUnderWay(); got != n {
		t.Errorf("after a refused create: %d under way, want %d", got, n)
	}
	close(ln.release)
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("create: %v", err)
		}
	}
	if got := h.sys.CreatesUnderWay(); got != 0 {
		t.Errorf("after every create ended: %d under way", got)
	}
}
