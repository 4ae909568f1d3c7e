package actors

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// lockedBuffer is a log destination that tests read while actors write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestInvoiceEventLogLevels checks which invoice events an operator sees
// in the log: at info, the events that move money or close an invoice
// and not New, which every create has (kassa_invoices_created_total
// counts those); at debug, New too.
func TestInvoiceEventLogLevels(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		t.Run(level.String(), func(t *testing.T) {
			logs := &lockedBuffer{}
			h := newHarnessWith(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), func(c *Config) {
				c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level}))
			})
			h.createStore("1", "0")
			inv := h.invoice("10", kassa.EUR)
			h.payLightning(inv, 20_000)
			// The positive control: the settle's line, which the actor
			// logs after the create's.
			eventually(t, "the Settled event's line", func() bool {
				return strings.Contains(logs.String(), "invoice="+inv.ID+" store="+inv.StoreID+" type=Settled")
			})
			for typ, want := range map[string]bool{"Processing": true, "Settled": true, "New": level == slog.LevelDebug} {
				line := `msg="invoice event" invoice=` + inv.ID + " store=" + inv.StoreID + " type=" + typ + " "
				if got := strings.Contains(logs.String(), line); got != want {
					t.Errorf("at %s, a %s event's line logged = %v, want %v\n%s", level, typ, got, want, logs)
				}
			}
		})
	}
}
