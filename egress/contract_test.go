package egress

import (
	"testing"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestContract runs the WebhookClient contract on the egress client as
// --dev configures it (loopback and plain http allowed, to reach the
// suite's test server).
func TestContract(t *testing.T) {
	kassatest.RunWebhookClient(t, func(t *testing.T) kassa.WebhookClient {
		cfg := DefaultConfig()
		cfg.AllowPrivate, cfg.RequireHTTPS = true, false
		return WebhookClient{Client: New(cfg), App: "Kassa"}
	})
}
