package main

import "github.com/kassapay/kassa/egress"

// newWebhookClient is the client for merchants' webhook URLs: https and
// public addresses only, unless --dev allows loopback and plain http.
func newWebhookClient(dev bool) egress.WebhookClient {
	cfg := egress.DefaultConfig()
	cfg.AllowPrivate = dev
	cfg.RequireHTTPS = !dev
	return egress.WebhookClient{Client: egress.New(cfg), App: "Kassa"}
}
