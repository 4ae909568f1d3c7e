package egress

import (
	"context"
	"net/http"
	"net/url"

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

var _ kassa.WebhookAddressChecker = WebhookClient{}

// CheckAddress checks a webhook URL without sending anything: its form
// (CheckURL), then that its host resolves only to addresses the Client
// may reach, as a delivery would dial them. The error is a kassa.Invalid
// *kassa.Error.
func (w WebhookClient) CheckAddress(ctx context.Context, rawURL string) error {
	if err := w.CheckURL(rawURL); err != nil {
		return err
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return kassa.Errorf(kassa.Invalid, "webhook URL is not a valid URL")
	}
	if _, err := w.lookup(ctx, u.Hostname()); err != nil {
		return kassa.Errorf(kassa.Invalid, "webhook URL: %s", err.Error())
	}
	return nil
}
