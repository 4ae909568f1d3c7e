package i18n

import (
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

func TestMoney(t *testing.T) {
	d := decimal.RequireFromString
	tests := []struct {
		lang   string
		amount string
		c      kassa.Currency
		want   string
	}{
		{"en", "1234.5", kassa.EUR, "€1,234.50"},
		{"de", "1234.5", kassa.EUR, "1.234,50\u00a0€"},
		{"en", "12.5", kassa.EUR, "€12.50"},
		{"de", "20", kassa.EUR, "20,00\u00a0€"},
		{"en", "1499.6", kassa.JPY, "¥1,500"},
		{"en", "3.1415", "BHD", "BHD\u00a03.142"},
		{"en", "250", "AUD", "A$250.00"},
		{"de", "250", "AUD", "250,00\u00a0AU$"},
		{"en", "5000", "INR", "₹5,000.00"},
		{"en", "99.99", "ZAR", "ZAR\u00a099.99"},
		{"en", "99.99", "BRL", "R$99.99"},
		{"de", "0.00014368", kassa.BTC, "0,00014368 BTC"},
		{"en", "14368", kassa.SATS, "14,368 sats"},
		{"sw", "12.5", kassa.EUR, "€12.50"}, // no catalogue: English
	}
	for _, tt := range tests {
		if got := Money(tt.lang, d(tt.amount), tt.c); got != tt.want {
			t.Errorf("Money(%s, %s, %s) = %q, want %q", tt.lang, tt.amount, tt.c, got, tt.want)
		}
	}
	if got := Sats("de", 1234567); got != "1.234.567 sats" {
		t.Errorf("Sats = %q", got)
	}
	if got := BTC("en", 14368); got != "0.00014368 BTC" {
		t.Errorf("BTC = %q", got)
	}
	if got := Number("de", d("-1234567.891"), 2); got != "-1.234.567,89" {
		t.Errorf("Number = %q", got)
	}
}

func TestTime(t *testing.T) {
	at := time.Date(2026, 11, 25, 22, 44, 0, 0, time.FixedZone("CET", 3600))
	if got := Time("en", at); got != "2026-11-25 21:44 UTC" {
		t.Errorf("en: %q", got)
	}
	if got := Time("de", at); got != "25.11.2026, 21:44 UTC" {
		t.Errorf("de: %q", got)
	}
	if got := ISOTime(at); got != "2026-11-25T21:44:00Z" {
		t.Errorf("ISOTime: %q", got)
	}
}

// TestPayLinkStatus: one vocabulary for a pay link's status, the API's
// words (kassa.PaymentRequest*), on the public page and the dashboard.
func TestPayLinkStatus(t *testing.T) {
	for _, s := range []string{kassa.PaymentRequestPending, kassa.PaymentRequestCompleted, kassa.PaymentRequestExpired, kassa.PaymentRequestArchived} {
		if got := PayLinkStatus("en", s); got != s {
			t.Errorf("en %s: %q, want the API's word", s, got)
		}
		if got := PayLinkStatus("de", s); got == s || got == "" || got == "paylink.status."+s {
			t.Errorf("de %s: %q", s, got)
		}
	}
	if got := PayLinkStatus("de", "Completed"); got != "Abgeschlossen" {
		t.Errorf("de Completed: %q", got)
	}
	if got := PayLinkStatus("en", "Bogus"); got != "Bogus" {
		t.Errorf("unknown status: %q, want it as it is", got)
	}
}

// TestMethodAndSeenWording: the on-chain method has one name wherever
// the pages show it, and the simulator's note for a payment just sent
// does not call it paid (it waits for confirmation).
func TestMethodAndSeenWording(t *testing.T) {
	for lang, want := range map[string]string{"en": "On-chain", "de": "On-Chain"} {
		if got := Method(lang, kassa.MethodOnchain); got != want {
			t.Errorf("%s: Method(on-chain) = %q, want %q", lang, got, want)
		}
		if got := Method(lang, kassa.MethodLightning); got != "Lightning" {
			t.Errorf("%s: Method(Lightning) = %q", lang, got)
		}
	}
	for lang, paid := range map[string]string{"en": "Paid", "de": "Bezahlt"} {
		if got := T(lang, "sim.paid"); strings.Contains(got, paid) {
			t.Errorf("%s: the simulator calls a payment just sent %q", lang, got)
		}
	}
}
