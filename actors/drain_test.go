package actors

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// hangingWebhookClient is the fake webhook client whose deliveries hang
// until their context is canceled, as a real request to an endpoint that
// does not answer; started receives each delivery as it begins.
type hangingWebhookClient struct {
	*fakeWebhookClient
	started chan struct{}
}

func (c hangingWebhookClient) Deliver(ctx context.Context, _ string, _ http.Header, _ []byte) kassa.WebhookAttempt {
	c.started <- struct{}{}
	<-ctx.Done()
	return kassa.WebhookAttempt{Err: ctx.Err().Error()}
}

// TestDrainOutOfTimeWaitsForCutDeliveries runs a drain whose deadline
// passes while a delivery hangs: the drain cuts it off, and returns only
// once the cut attempt has come back and been logged as left in the
// outbox (the process exits right after the drain, and the line was
// lost), with the delivery still pending there.
func TestDrainOutOfTimeWaitsForCutDeliveries(t *testing.T) {
	var logs kassatest.LogBuffer
	started := make(chan struct{}, 1)
	h := newHarnessWith(t, openMem(t), kassatest.NewTestClock(time.Now()), func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.Webhooks = hangingWebhookClient{fakeWebhookClient: newFakeWebhookClient(), started: started}
	})
	h.createStore("0", "0")
	w := h.webhook("https://hang.example/hook", kassa.EventNew)
	h.invoice("1000", kassa.SATS)
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the delivery did not start")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if h.sys.Runtime.Drain(ctx) {
		t.Fatal("the drain says it finished while the delivery hung")
	}
	if !strings.Contains(logs.String(), `msg="webhook delivery left in the outbox for the next start"`) {
		t.Fatalf("the drain returned before the cut delivery was logged as left in the outbox:\n%s", logs.String())
	}
	pending := 0
	h.db.PendingDeliveries(context.Background(), func(webhookID, _ string) error {
		if webhookID == w.ID {
			pending++
		}
		return nil
	})
	if pending != 1 {
		t.Errorf("%d deliveries pending in the outbox after the drain, want the one cut off", pending)
	}
}
