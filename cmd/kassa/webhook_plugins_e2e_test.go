package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kassapay/kassa/webhook"
)

// The webhook checks of the shop plugins built on the Coinsnap PHP
// library, replayed in Go on deliveries of the real binary: what header
// each reads, how it compares the signature over the raw body, and which
// fields of the body it then uses (docs/decisions.md, "Shop plugins").

// pluginView is what a plugin takes from a delivery it accepted.
type pluginView struct {
	Type, InvoiceID, OrderID string
	// Underpaid is the plugin's reading of an Expired event's flags, nil
	// for plugins that do not read them.
	Underpaid *bool
}

// pluginCheck verifies one delivery as a plugin does and returns what it
// reads, or why it refuses the delivery.
type pluginCheck func(h http.Header, body []byte, secret string) (pluginView, error)

var errPluginRefused = errors.New("refused")

// coinsnapLibraryValid is the PHP library's isIncomingWebhookRequestValid:
// "sha256=" and the hex HMAC-SHA256 of the raw body, compared in constant
// time with the header value.
func coinsnapLibraryValid(body []byte, header, secret string) bool {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	return header != "" && hmac.Equal([]byte(want), []byte(header))
}

// decodeLoosely decodes the body as PHP's json_decode and Python's
// json.loads do: into generic maps, missing members read as absent.
func decodeLoosely(body []byte) (map[string]any, error) {
	var m map[string]any
	err := json.Unmarshal(body, &m)
	return m, err
}

func pluginString(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func pluginOrderID(m map[string]any) string {
	meta, _ := m["metadata"].(map[string]any)
	return pluginString(meta, "orderId")
}

// pluginFlag reads a boolean member the way a PHP `if ($data->name)` does.
func pluginFlag(m map[string]any, k string) bool {
	b, _ := m[k].(bool)
	return b
}

var plugins = map[string]pluginCheck{
	// WooCommerce walks every request header, lower-cases the name and
	// takes x-coinsnap-sig, then asks the library; it reads type,
	// invoiceId, metadata.orderId and, on Expired, partiallyPaid or
	// underpaid to put the order on hold instead of cancelling it.
	"woocommerce": func(h http.Header, body []byte, secret string) (pluginView, error) {
		var sig string
		for name, values := range h {
			if strings.ToLower(name) == "x-coinsnap-sig" && len(values) > 0 {
				sig = values[0]
			}
		}
		if !coinsnapLibraryValid(body, sig, secret) {
			return pluginView{}, errPluginRefused
		}
		m, err := decodeLoosely(body)
		if err != nil {
			return pluginView{}, err
		}
		v := pluginView{Type: pluginString(m, "type"), InvoiceID: pluginString(m, "invoiceId"), OrderID: pluginOrderID(m)}
		if v.Type == "Expired" {
			u := pluginFlag(m, "partiallyPaid") || pluginFlag(m, "underpaid")
			v.Underpaid = &u
		}
		return v, nil
	},
	// Shopware requires the header x-coinsnap-sig (names are
	// case-insensitive in Symfony's HeaderBag) and asks the library.
	"shopware": func(h http.Header, body []byte, secret string) (pluginView, error) {
		if !coinsnapLibraryValid(body, h.Get("x-coinsnap-sig"), secret) {
			return pluginView{}, errPluginRefused
		}
		m, err := decodeLoosely(body)
		if err != nil {
			return pluginView{}, err
		}
		return pluginView{Type: pluginString(m, "type"), InvoiceID: pluginString(m, "invoiceId"), OrderID: pluginOrderID(m)}, nil
	},
	// pretix takes X-Coinsnap-Sig, removes "sha256=", compares the rest
	// with its own hex HMAC of the raw body; it confirms the order named
	// by metadata.orderId on Settled and reads the underpaid flags.
	"pretix": func(h http.Header, body []byte, secret string) (pluginView, error) {
		sig := strings.Replace(h.Get("X-Coinsnap-Sig"), "sha256=", "", 1)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		if !hmac.Equal([]byte(sig), []byte(hex.EncodeToString(mac.Sum(nil)))) {
			return pluginView{}, errPluginRefused
		}
		m, err := decodeLoosely(body)
		if err != nil {
			return pluginView{}, err
		}
		v := pluginView{Type: pluginString(m, "type"), InvoiceID: pluginString(m, "invoiceId"), OrderID: pluginOrderID(m)}
		if v.Type == "Expired" {
			u := pluginFlag(m, "underpaid") && pluginFlag(m, "partiallyPaid")
			v.Underpaid = &u
		}
		return v, nil
	},
	// The PHP library on its own, as a hand-written integration uses it.
	"coinsnap-php": func(h http.Header, body []byte, secret string) (pluginView, error) {
		if !coinsnapLibraryValid(body, h.Get("X-Coinsnap-Sig"), secret) {
			return pluginView{}, errPluginRefused
		}
		m, err := decodeLoosely(body)
		if err != nil {
			return pluginView{}, err
		}
		return pluginView{Type: pluginString(m, "type"), InvoiceID: pluginString(m, "invoiceId"), OrderID: pluginOrderID(m)}, nil
	},
}

// TestShopPluginsAcceptDeliveries registers a webhook as the plugins do
// (authorizedEvents with a subset, Invalid included), runs a Lightning
// payment and an underpaid expiry, and replays every plugin's check on
// each delivery: with --webhook-sig-alias X-Coinsnap-Sig all accept and
// read the right fields; without it (the default) all refuse, and the
// headers are the two signature headers of the API alone.
func TestShopPluginsAcceptDeliveries(t *testing.T) {
	t.Parallel()
	for _, withAlias := range []bool{true, false} {
		t.Run(fmt.Sprintf("alias=%v", withAlias), func(t *testing.T) {
			t.Parallel()
			// The payments must come within the expiry of each
			// invoice's creation: 10 s leaves a loaded machine room
			// for the CLI calls.
			args := []string{"--dev", "--invoice-expiry", "10s"}
			if withAlias {
				args = append(args, "--webhook-sig-alias", "X-Coinsnap-Sig")
			}
			s := startServer(t, t.TempDir(), args...)
			c := s.createStore("--name", "Shop")
			rcv := newReceiver(t)
			wh := addWebhook(t, s, c, map[string]any{"url": rcv.url("/shop"),
				"authorizedEvents": map[string]any{"everything": false, "specificEvents": []string{"Settled", "Expired", "Invalid"}}})
			if fmt.Sprint(wh["events"]) != "[Settled Expired Invalid]" {
				t.Fatalf("authorizedEvents: webhook has events %v", wh["events"])
			}
			secret := wh["secret"].(string)

			paid := createInvoice(t, s, c, map[string]any{"amount": 5000, "currency": "SATS", "orderId": "shop-paid"})
			s.mustCLI("sim", "pay", paid, "--method", "lightning")
			under := createInvoice(t, s, c, map[string]any{"amount": 10000, "currency": "SATS", "orderId": "shop-under"})
			s.mustCLI("sim", "pay", under, "--method", "onchain", "--amount", "4000")
			s.mustCLI("sim", "mine")
			empty := createInvoice(t, s, c, map[string]any{"amount": 1000, "currency": "SATS", "orderId": "shop-empty"})
			rcv.wait(t, "/shop", paid, "Settled", 1)
			rcv.wait(t, "/shop", under, "Expired", 1)
			rcv.wait(t, "/shop", empty, "Expired", 1)
			// The subset holds: no New, no Processing.
			for _, id := range []string{paid, under, empty} {
				if got := rcv.summary("/shop", id); got != "[Settled:None]" && got != "[Expired:Underpaid]" && got != "[Expired:None]" {
					t.Errorf("%s: got %s, want only the selected events", id, got)
				}
			}

			want := map[string]pluginView{
				paid:  {Type: "Settled", InvoiceID: paid, OrderID: "shop-paid"},
				under: {Type: "Expired", InvoiceID: under, OrderID: "shop-under"},
				empty: {Type: "Expired", InvoiceID: empty, OrderID: "shop-empty"},
			}
			underpaid := map[string]bool{under: true, empty: false}
			for _, d := range rcv.events("/shop") {
				verify(t, d, secret) // the API's own headers stay valid either way
				e := d.event()
				if withAlias {
					if d.Header.Get("X-Coinsnap-Sig") != d.Header.Get(webhook.SigHeader) {
						t.Errorf("X-Coinsnap-Sig %q differs from X-Service-Sig %q", d.Header.Get("X-Coinsnap-Sig"), d.Header.Get(webhook.SigHeader))
					}
				} else if len(d.Header.Values("X-Coinsnap-Sig")) != 0 {
					t.Errorf("X-Coinsnap-Sig sent without --webhook-sig-alias")
				}
				for name, check := range plugins {
					got, err := check(d.Header, d.Body, secret)
					if !withAlias {
						if !errors.Is(err, errPluginRefused) {
							t.Errorf("%s accepted a delivery without X-Coinsnap-Sig: %v", name, err)
						}
						continue
					}
					if err != nil {
						t.Errorf("%s refused %s of %s: %v\n%s", name, e.Type, e.InvoiceID, err, d.Body)
						continue
					}
					w := want[e.InvoiceID]
					if got.Type != w.Type || got.InvoiceID != w.InvoiceID || got.OrderID != w.OrderID {
						t.Errorf("%s read %+v, want %+v", name, got, w)
					}
					if got.Underpaid != nil && *got.Underpaid != underpaid[e.InvoiceID] {
						t.Errorf("%s read underpaid %v for %s, want %v", name, *got.Underpaid, e.InvoiceID, underpaid[e.InvoiceID])
					}
				}
				// A body changed by one byte is refused by every plugin.
				tampered := append([]byte(nil), d.Body...)
				tampered[len(tampered)-2] ^= 1
				for name, check := range plugins {
					if _, err := check(d.Header, tampered, secret); !errors.Is(err, errPluginRefused) {
						t.Errorf("%s accepted a changed body: %v", name, err)
					}
				}
			}
		})
	}
}
