package main

import (
	"context"
	"net/http"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/http/egress"
)

// webhookClient adapts the egress client to what the actors consume.
type webhookClient struct {
	client *egress.Client
	app    string
}

var _ kassa.WebhookClient = webhookClient{}

func newWebhookClient(dev bool) webhookClient {
	cfg := egress.DefaultConfig()
	cfg.AllowPrivate = dev
	cfg.RequireHTTPS = !dev
	return webhookClient{client: egress.New(cfg), app: "Kassa"}
}

func (w webhookClient) CheckURL(rawURL string) error { return w.client.CheckURL(rawURL) }

func (w webhookClient) Validate(ctx context.Context, rawURL string) error {
	_, err := w.client.Validate(ctx, rawURL, w.app)
	return err
}

func (w webhookClient) Deliver(ctx context.Context, rawURL string, headers http.Header, body []byte) kassa.WebhookAttempt {
	a := w.client.Deliver(ctx, rawURL, headers, body)
	return kassa.WebhookAttempt{StatusCode: a.StatusCode, ResponseBody: a.ResponseBody, Duration: a.Duration, Err: a.Err, OK: a.OK}
}
