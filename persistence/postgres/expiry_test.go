package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/expiry"
	"github.com/kassapay/kassa/kassatest"
)

// TestExpirySweepers: two nodes' sweepers, side by side over one
// database, fire the deadline of every invoice overdue by more than the
// grace, each once, and leave the others to their owners' timers.
func TestExpirySweepers(t *testing.T) {
	clock := kassatest.NewTestClock(kassatest.Epoch)
	dbA, dbB := openClocked(t, clock)
	var deadline time.Time
	for i := range 30 {
		inv := kassatest.NewInvoice(fmt.Sprintf("inv_%02d", i), "s1", kassatest.Epoch.Add(time.Duration(i)*time.Second))
		kassatest.Commit(t, dbA, func(b kassa.Batch) { b.PutInvoice(inv, nil, 1) })
		if i == 19 {
			deadline, _ = inv.Deadline()
		}
	}
	// Twenty invoices (inv_00 … inv_19) are overdue by more than the
	// grace, the rest are not.
	clock.Advance(deadline.Add(expiry.DefaultGrace + time.Millisecond).Sub(clock.Now()))

	var (
		mu    sync.Mutex
		fired = map[string]int{}
	)
	fire := func(_ context.Context, storeID, invoiceID string) error {
		mu.Lock()
		fired[invoiceID]++
		mu.Unlock()
		return nil
	}
	sweeper := func(db *DB, holder string) *expiry.Sweeper {
		return &expiry.Sweeper{Claims: db, Fire: fire, Holder: holder, Clock: clock, Log: slog.New(slog.DiscardHandler), Batch: 3}
	}
	var wg sync.WaitGroup
	for _, s := range []*expiry.Sweeper{sweeper(dbA, "node-a"), sweeper(dbB, "node-b")} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n, err := s.SweepOnce(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if n == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := range 30 {
		id := fmt.Sprintf("inv_%02d", i)
		want := 0
		if i < 20 {
			want = 1
		}
		if fired[id] != want {
			t.Errorf("%s fired %d times, want %d", id, fired[id], want)
		}
	}
}
