package greenfield_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/lightning/bolt11"
)

// withCheckout is createBody with checkout's speedPolicy and
// expirationMinutes set to the JSON values given.
func withCheckout(speedPolicy, expirationMinutes string) string {
	body := strings.Replace(createBody, `"speedPolicy":null`, `"speedPolicy":`+speedPolicy, 1)
	return strings.Replace(body, `"expirationMinutes":null`, `"expirationMinutes":`+expirationMinutes, 1)
}

// checkoutTerms is what an answer reports of an invoice's own terms.
type checkoutTerms struct {
	ID             string `json:"id"`
	Status         string `json:"status"`
	CreatedTime    int64  `json:"createdTime"`
	ExpirationTime int64  `json:"expirationTime"`
	Checkout       struct {
		SpeedPolicy       *string `json:"speedPolicy"`
		ExpirationMinutes float64 `json:"expirationMinutes"`
	} `json:"checkout"`
}

// TestCheckoutTermsBounds: speedPolicy and expirationMinutes out of
// their bounds are 422 naming them, and nothing is stored.
func TestCheckoutTermsBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	create := base + "/api/v1/stores/store_a/invoices"
	for _, tt := range []struct{ name, speed, minutes, path string }{
		{"unknown speed policy", `"Instant"`, `null`, "checkout.speedPolicy"},
		{"speed policy in the wrong case", `"highspeed"`, `null`, "checkout.speedPolicy"},
		{"speed policy of the wrong type", `6`, `null`, "checkout.speedPolicy"},
		{"negative expiration", `null`, `-5`, "checkout.expirationMinutes"},
		{"zero expiration", `null`, `0`, "checkout.expirationMinutes"},
		{"expiration under 30 seconds", `null`, `0.4`, "checkout.expirationMinutes"},
		{"expiration over 30 days", `null`, `43201`, "checkout.expirationMinutes"},
		{"huge expiration", `null`, `1e300`, "checkout.expirationMinutes"},
		{"expiration of the wrong type", `null`, `"soon"`, "checkout.expirationMinutes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			expectValidation(t, e.do("POST", create, withCheckout(tt.speed, tt.minutes)), tt.path)
		})
	}
	if n := e.invoiceCount("store_a"); n != 0 {
		t.Errorf("store A has %d invoices after bad input", n)
	}
	// The bounds themselves are taken.
	for _, minutes := range []string{`0.5`, `43200`} {
		expectStatus(t, e.do("POST", create, withCheckout(`"LowSpeed"`, minutes)), http.StatusOK)
	}
}

// TestSpeedPolicy: an invoice's speedPolicy, not the store's
// confirmations (1 for store A), decides when its on-chain payment
// settles it: HighSpeed at 0 confirmations, LowSpeed at 6; without one,
// the store's. Get and list report each invoice's own.
func TestSpeedPolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	create := func(speed string) checkoutTerms {
		t.Helper()
		w := e.do("POST", base+"/api/v1/stores/store_a/invoices", withCheckout(speed, `null`))
		expectStatus(t, w, http.StatusOK)
		return decode[checkoutTerms](t, w)
	}
	get := func(id string) checkoutTerms {
		t.Helper()
		w := e.do("GET", base+"/api/v1/stores/store_a/invoices/"+id, "")
		expectStatus(t, w, http.StatusOK)
		return decode[checkoutTerms](t, w)
	}
	pay := func(id string) {
		t.Helper()
		inv, err := e.db.Invoice(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.sim.Pay(ctx, inv.OnchainAddress, inv.Amount); err != nil {
			t.Fatal(err)
		}
	}
	policy := func(got checkoutTerms) string {
		if got.Checkout.SpeedPolicy == nil {
			return "<null>"
		}
		return *got.Checkout.SpeedPolicy
	}
	high, low, store := create(`"HighSpeed"`), create(`"LowSpeed"`), create(`null`)
	for _, tt := range []struct {
		inv  checkoutTerms
		want string
	}{{high, "HighSpeed"}, {low, "LowSpeed"}, {store, "MediumSpeed"}} {
		if got := policy(tt.inv); got != tt.want {
			t.Errorf("create answered speedPolicy %s, want %s", got, tt.want)
		}
		if got := policy(get(tt.inv.ID)); got != tt.want {
			t.Errorf("get answers speedPolicy %s, want %s", got, tt.want)
		}
	}

	pay(high.ID)
	pay(low.ID)
	pay(store.ID)
	if got := get(high.ID).Status; got != "Settled" {
		t.Errorf("HighSpeed at 0 confirmations: %s, want Settled", got)
	}
	for _, id := range []string{low.ID, store.ID} {
		if got := get(id).Status; got != "Processing" {
			t.Errorf("at 0 confirmations: %s, want Processing", got)
		}
	}
	if _, err := e.sim.Mine(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := get(store.ID).Status; got != "Settled" {
		t.Errorf("the store's 1 confirmation: %s, want Settled", got)
	}
	if _, err := e.sim.Mine(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if got := get(low.ID).Status; got != "Processing" {
		t.Errorf("LowSpeed at 5 confirmations: %s, want Processing", got)
	}
	if _, err := e.sim.Mine(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := get(low.ID).Status; got != "Settled" {
		t.Errorf("LowSpeed at 6 confirmations: %s, want Settled", got)
	}

	w := e.do("GET", base+"/api/v1/stores/store_a/invoices", "")
	expectStatus(t, w, http.StatusOK)
	listed := map[string]string{}
	for _, inv := range decode[[]checkoutTerms](t, w) {
		listed[inv.ID] = policy(inv)
	}
	if listed[high.ID] != "HighSpeed" || listed[low.ID] != "LowSpeed" || listed[store.ID] != "MediumSpeed" {
		t.Errorf("list: %v", listed)
	}
}

// TestExpirationMinutes: an invoice expires after its own
// expirationMinutes, not the 15 minutes of the service, and its
// Lightning invoice expires with it; answers report the deadline.
func TestExpirationMinutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.do("POST", base+"/api/v1/stores/store_a/invoices", withCheckout(`null`, `90`))
	expectStatus(t, w, http.StatusOK)
	inv := decode[checkoutTerms](t, w)
	want := testNow.Add(90 * time.Minute)
	if inv.ExpirationTime != want.Unix() || inv.Checkout.ExpirationMinutes != 90 {
		t.Errorf("expirationTime %d, expirationMinutes %v; want %d and 90", inv.ExpirationTime, inv.Checkout.ExpirationMinutes, want.Unix())
	}
	stored, err := e.db.Invoice(t.Context(), inv.ID)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := bolt11.Decode(stored.LightningInvoice, &chaincfg.RegressionNetParams)
	if err != nil {
		t.Fatal(err)
	}
	if got := ln.Timestamp.Add(ln.Expiry()); !got.Equal(want) {
		t.Errorf("the Lightning invoice expires at %s, want %s", got, want)
	}

	// Still New after the service's 15 minutes; Expired at 90.
	e.clock.Advance(30 * time.Minute)
	if got := decode[checkoutTerms](t, e.do("GET", base+"/api/v1/stores/store_a/invoices/"+inv.ID, "")).Status; got != "New" {
		t.Fatalf("after 30 minutes: %s, want New", got)
	}
	e.clock.Advance(want.Add(-time.Minute).Sub(e.clock.Now()))
	if got := decode[checkoutTerms](t, e.do("GET", base+"/api/v1/stores/store_a/invoices/"+inv.ID, "")).Status; got != "New" {
		t.Fatalf("a minute before its expiry: %s, want New", got)
	}
	expired := func() bool {
		s, err := e.db.Invoice(t.Context(), inv.ID)
		return err == nil && s.Status == kassa.InvoiceExpired
	}
	e.clock.StepUntil(t, "the invoice expires", want, expired)
	if now := e.clock.Now(); now.Before(want) {
		t.Errorf("expired at %s, before its %s", now, want)
	}
	// Fractions of a minute count.
	w = e.do("POST", base+"/api/v1/stores/store_a/invoices", withCheckout(`null`, `0.5`))
	expectStatus(t, w, http.StatusOK)
	if half := decode[checkoutTerms](t, w); half.ExpirationTime-half.CreatedTime != 30 || half.Checkout.ExpirationMinutes != 0.5 {
		t.Errorf("0.5 minutes: expires %d s after creation, expirationMinutes %v", half.ExpirationTime-half.CreatedTime, half.Checkout.ExpirationMinutes)
	}
}

// TestStoreRedirectAutomatically: the store's redirectAutomatically
// (Store.DefaultRedirectAutomatically) is reported with the store and
// taken by an invoice whose checkout.redirectAutomatically is null; an
// invoice that says false keeps false.
func TestStoreRedirectAutomatically(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st, err := e.db.Store(t.Context(), "store_a")
	if err != nil {
		t.Fatal(err)
	}
	st.DefaultRedirectAutomatically = true
	b := e.db.NewBatch()
	b.PutStore(st, 0)
	if err := e.db.Commit(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	w := e.do("GET", base+"/api/v1/stores/store_a", "")
	expectStatus(t, w, http.StatusOK)
	if got := decode[struct {
		RedirectAutomatically *bool `json:"redirectAutomatically"`
	}](t, w); got.RedirectAutomatically == nil || !*got.RedirectAutomatically {
		t.Errorf("store redirectAutomatically %v, want true", got.RedirectAutomatically)
	}
	type answer struct {
		ID       string `json:"id"`
		Checkout struct {
			RedirectAutomatically bool `json:"redirectAutomatically"`
		} `json:"checkout"`
	}
	for _, tt := range []struct {
		asked string
		want  bool
	}{{`null`, true}, {`false`, false}, {`true`, true}} {
		body := strings.Replace(createBody, `"redirectAutomatically":null`, `"redirectAutomatically":`+tt.asked, 1)
		w := e.do("POST", base+"/api/v1/stores/store_a/invoices", body)
		expectStatus(t, w, http.StatusOK)
		got := decode[answer](t, w)
		stored, err := e.db.Invoice(t.Context(), got.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Checkout.RedirectAutomatically != tt.want || stored.RedirectAutomatically != tt.want {
			t.Errorf("asked %s: answered %v, stored %v; want %v", tt.asked, got.Checkout.RedirectAutomatically, stored.RedirectAutomatically, tt.want)
		}
	}
}
