package egress

import (
	"context"
	"net/http"

	"github.com/kassapay/kassa"
)

// WebhookClient is a Client as the core consumes it (kassa.WebhookClient):
// the registration check names the service as App.
type WebhookClient struct {
	*Client
	App string
}

var _ kassa.WebhookClient = WebhookClient{}

// Validate sends the unsigned registration check.
func (w WebhookClient) Validate(ctx context.Context, rawURL string) error {
	_, err := w.Client.Validate(ctx, rawURL, w.App)
	return err
}

// Deliver sends one POST and reports what it gave.
func (w WebhookClient) Deliver(ctx context.Context, rawURL string, headers http.Header, body []byte) kassa.WebhookAttempt {
	a := w.Client.Deliver(ctx, rawURL, headers, body)
	return kassa.WebhookAttempt{StatusCode: a.StatusCode, ResponseBody: a.ResponseBody, Duration: a.Duration, Err: a.Err, OK: a.OK}
}
