package main

import (
	"net/http"
	"slices"
	"strings"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/egress"
)

// newWebhookClient is the client for merchants' webhook URLs: https and
// public addresses only, unless --dev allows loopback and plain http.
func newWebhookClient(dev bool) egress.WebhookClient {
	cfg := egress.DefaultConfig()
	cfg.AllowPrivate = dev
	cfg.RequireHTTPS = !dev
	return egress.WebhookClient{Client: egress.New(cfg), App: "Kassa"}
}

// sigAliases is the value of --webhook-sig-alias: header names that repeat
// the X-Service-Sig value, for shop plugins that read it under another
// name (X-Coinsnap-Sig). The flag may be repeated, and each value may list
// several names separated by commas, as KASSA_WEBHOOK_SIG_ALIAS does.
type sigAliases []string

func (a *sigAliases) String() string { return strings.Join(*a, ",") }

// Set checks and adds the names of one value, each once.
func (a *sigAliases) Set(value string) error {
	for _, name := range strings.Split(value, ",") {
		name = strings.TrimSpace(name)
		if err := kassa.CheckSigAlias(name); err != nil {
			return err
		}
		name = http.CanonicalHeaderKey(name)
		if !slices.Contains(*a, name) {
			*a = append(*a, name)
		}
	}
	return nil
}
