package kassa

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// TestPersistedEnums pins the numbers and names of the enums stored on
// disk and shown by the API: renumbering one must fail here.
func TestPersistedEnums(t *testing.T) {
	for _, tc := range []struct {
		value fmtStringer
		num   uint8
		name  string
	}{
		{InvoiceNew, 1, "New"},
		{InvoiceProcessing, 2, "Processing"},
		{InvoiceSettled, 3, "Settled"},
		{InvoiceExpired, 4, "Expired"},
		{InvoiceInvalid, 5, "Invalid"},
		{InvoiceStatus(0), 0, "Unknown"},
		{InvoiceStatus(6), 6, "Unknown"},

		{StatusNone, 0, "None"},
		{StatusUnderpaid, 1, "Underpaid"},
		{StatusOverpaid, 2, "Overpaid"},
		{StatusPaidAfterExpiration, 3, "PaidAfterExpiration"},
		{AdditionalStatus(4), 4, "None"},

		{MethodOnchain, 1, "BTC"},
		{MethodLightning, 2, "Lightning"},
		{PaymentMethod(0), 0, "Unknown"},
		{PaymentMethod(3), 3, "Unknown"},

		{TransactionTransfer, 1, "transfer"},
		{TransactionFee, 2, "fee"},
		{TransactionTopUp, 3, "topup"},
		{TransactionType(0), 0, "unknown"},

		{TransactionPending, 1, "Pending"},
		{TransactionSettled, 2, "Settled"},
		{TransactionFailed, 3, "Failed"},
		{TransactionStatus(0), 0, "Unknown"},
	} {
		if got := tc.value.String(); got != tc.name {
			t.Errorf("%T(%d).String() = %q, want %q", tc.value, tc.num, got, tc.name)
		}
		if got := enumNumber(tc.value); got != tc.num {
			t.Errorf("%T %s is %d on disk, want %d", tc.value, tc.name, got, tc.num)
		}
	}
	if !InvoiceNew.Open() {
		t.Error("New is not open")
	}
	for _, s := range []InvoiceStatus{InvoiceProcessing, InvoiceSettled, InvoiceExpired, InvoiceInvalid} {
		if s.Open() {
			t.Errorf("%s is open", s)
		}
	}
	if want := []EventType{"New", "Processing", "Settled", "Expired"}; len(EventTypes) != len(want) {
		t.Errorf("EventTypes = %v, want %v", EventTypes, want)
	} else {
		for i := range want {
			if EventTypes[i] != want[i] {
				t.Errorf("EventTypes = %v, want %v", EventTypes, want)
			}
		}
	}
}

type fmtStringer interface{ String() string }

func enumNumber(v fmtStringer) uint8 {
	switch v := v.(type) {
	case InvoiceStatus:
		return uint8(v)
	case AdditionalStatus:
		return uint8(v)
	case PaymentMethod:
		return uint8(v)
	case TransactionType:
		return uint8(v)
	case TransactionStatus:
		return uint8(v)
	}
	panic("not an enum")
}

// TestInvoiceJSON checks that an invoice's snapshot stores the enums as
// their numbers and decodes to the same invoice.
func TestInvoiceJSON(t *testing.T) {
	inv := newTestInvoice(t, 1000)
	inv.Metadata = json.RawMessage(`{"orderId":"A-1"}`)
	inv.Tolerance = decimalOf("0.25")
	inv = mustApplyOne(t, inv, onchain("a", 400, 1, time.Minute))
	inv = mustApplyOne(t, inv, PaymentDropped{PaymentID: "a", At: scriptEpoch.Add(2 * time.Minute)})
	inv = mustApplyOne(t, inv, LightningPaid{PaymentHash: "h", AmountMSat: 300_500, At: scriptEpoch.Add(3 * time.Minute)})
	inv = mustApplyOne(t, inv, ExpiryReached{At: inv.ExpiresAt})
	b, err := json.Marshal(inv)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Status           int             `json:"status"`
		AdditionalStatus int             `json:"additionalStatus"`
		EnabledMethods   []PaymentMethod `json:"enabledMethods"`
		Payments         []struct {
			Method int `json:"method"`
		} `json:"payments"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Status != 4 || m.AdditionalStatus != 1 || len(m.EnabledMethods) != 2 || m.EnabledMethods[0] != MethodOnchain ||
		len(m.Payments) != 2 || m.Payments[0].Method != 1 || m.Payments[1].Method != 2 {
		t.Errorf("snapshot has %s", b)
	}
	var back Invoice
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, err := json.Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != string(b2) {
		t.Errorf("snapshot does not round-trip:\n%s\n%s", b, b2)
	}
	if back.TotalPaid() != 300 || back.Status != InvoiceExpired || !back.ExpiresAt.Equal(inv.ExpiresAt) || !back.Tolerance.Equal(inv.Tolerance) {
		t.Errorf("decoded snapshot %+v", back)
	}
}

func TestParsePaymentMethod(t *testing.T) {
	for in, want := range map[string]PaymentMethod{
		"BTC": MethodOnchain, "btc": MethodOnchain, "onchain": MethodOnchain, "BTC-OnChain": MethodOnchain,
		"bitcoin": MethodOnchain, " BTC ": MethodOnchain,
		"Lightning": MethodLightning, "lightning": MethodLightning, "LN": MethodLightning,
		"BTC-LightningNetwork": MethodLightning, "BTC_Lightning": MethodLightning, "BTC-LN": MethodLightning,
		"Lightning Network": MethodLightning,
	} {
		if got, err := ParsePaymentMethod(in); err != nil || got != want {
			t.Errorf("ParsePaymentMethod(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "ETH", "card", "Lightnin", "BTC-Liquid"} {
		if got, err := ParsePaymentMethod(in); ErrorCode(err) != Invalid {
			t.Errorf("ParsePaymentMethod(%q) = %s, %v; want Invalid", in, got, err)
		}
	}
}

func TestParseCurrency(t *testing.T) {
	for _, c := range Currencies {
		for _, in := range []string{string(c), " " + string(c) + " ", lower(string(c))} {
			if got, err := ParseCurrency(in); err != nil || got != c {
				t.Errorf("ParseCurrency(%q) = %s, %v; want %s", in, got, err, c)
			}
		}
	}
	// Not ISO 4217 fiat: retired codes (HRK, VEF), unofficial ones
	// (CNH, GGP), metals, XDR, test and fund codes.
	for _, in := range []string{"", "XBT", "EURO", "msat", "€", "HRK", "VEF", "CNH", "GGP", "XAU", "XDR", "XTS", "XXX", "CLF", "BOV"} {
		if got, err := ParseCurrency(in); ErrorCode(err) != Invalid {
			t.Errorf("ParseCurrency(%q) = %s, %v; want Invalid", in, got, err)
		}
	}
	// Minor units of the ISO 4217 table (github.com/bojanz/currency).
	for c, want := range map[Currency]int32{EUR: 2, USD: 2, CAD: 2, GBP: 2, CHF: 2, JPY: 0, SATS: 0, BTC: 8,
		"AUD": 2, "BRL": 2, "INR": 2, "ZAR": 2, "KRW": 0, "BHD": 3, "KWD": 3, "TND": 3, "IDR": 2, "CLP": 0, "VND": 0, "ISK": 0} {
		if got := c.Decimals(); got != want {
			t.Errorf("%s.Decimals() = %d, want %d", c, got, want)
		}
		if got := c.IsFiat(); got != (c != BTC && c != SATS) {
			t.Errorf("%s.IsFiat() = %t", c, got)
		}
	}
	// Every active ISO 4217 currency but fund codes; ZWG and XCG are
	// recent (2024, 2025).
	if len(FiatCurrencies) < 150 || len(Currencies) != len(FiatCurrencies)+2 || !slices.IsSorted(FiatCurrencies) {
		t.Errorf("currencies %v, fiat %v", Currencies, FiatCurrencies)
	}
	for _, c := range []Currency{"RUB", "AUD", "BRL", "INR", "ZAR", "ZWG", "XCG", "VES"} {
		if !slices.Contains(FiatCurrencies, c) {
			t.Errorf("%s is missing from FiatCurrencies", c)
		}
	}
	for _, c := range FiatCurrencies {
		if !c.IsFiat() {
			t.Errorf("%s in FiatCurrencies is not fiat", c)
		}
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func TestInvoicePaidAmounts(t *testing.T) {
	inv := Invoice{
		Amount:                10_000,
		ConfirmationsRequired: 2,
		Payments: []Payment{
			{ID: "a", Method: MethodOnchain, Amount: 1000, Confirmations: 2},
			{ID: "b", Method: MethodOnchain, Amount: 2000, Confirmations: 1},
			{ID: "c", Method: MethodOnchain, Amount: 4000, Confirmations: 6, Dropped: true},
			{ID: "h", Method: MethodLightning, Amount: 300, AmountMSat: 300_500},
			{ID: "d", Method: MethodOnchain, Amount: 50, Confirmations: 0},
		},
	}
	if got := inv.TotalPaid(); got != 3350 {
		t.Errorf("TotalPaid = %d, want 3350 (dropped payments do not count)", got)
	}
	if got := inv.ConfirmedPaid(); got != 1300 {
		t.Errorf("ConfirmedPaid = %d, want 1300 (deep enough on-chain and Lightning)", got)
	}
	inv.ConfirmationsRequired = 0
	if got := inv.ConfirmedPaid(); got != 3350 {
		t.Errorf("ConfirmedPaid at 0 confirmations = %d, want 3350", got)
	}
	if got := (&Invoice{}).TotalPaid(); got != 0 {
		t.Errorf("TotalPaid of nothing = %d", got)
	}
}

func TestInvoiceFiat(t *testing.T) {
	rate := decimalOf("87000")
	// A request in the store currency echoes the request amount.
	inv := Invoice{Amount: 11_495, InvoiceAmount: decimalOf("10"), Currency: EUR, StoreCurrency: EUR, ExchangeRate: rate}
	if got := inv.FiatAmount(); !got.Equal(decimalOf("10")) {
		t.Errorf("FiatAmount = %s, want 10", got)
	}
	inv.Payments = []Payment{{ID: "a", Amount: 5000}, {ID: "b", Amount: 6495}}
	if got := inv.FiatTotalPaid(); !got.Equal(decimalOf("10")) { // 10.00065
		t.Errorf("FiatTotalPaid = %s, want 10", got)
	}
	// Another currency: the sats at the store's locked rate.
	inv = Invoice{Amount: 100_000, InvoiceAmount: decimalOf("100"), Currency: USD, StoreCurrency: EUR, ExchangeRate: rate}
	if got := inv.FiatAmount(); !got.Equal(decimalOf("87")) {
		t.Errorf("FiatAmount = %s, want 87", got)
	}
	// A top-up invoice asks for nothing.
	inv = Invoice{Currency: SATS, StoreCurrency: EUR, ExchangeRate: rate}
	if got := inv.FiatAmount(); !got.IsZero() {
		t.Errorf("FiatAmount of a top-up = %s", got)
	}
	inv = Invoice{Currency: EUR, StoreCurrency: EUR, ExchangeRate: rate}
	if got := inv.FiatAmount(); !got.IsZero() {
		t.Errorf("FiatAmount of a top-up = %s", got)
	}
}

func TestInvoiceAccepts(t *testing.T) {
	inv := Invoice{EnabledMethods: []PaymentMethod{MethodLightning}}
	if !inv.Accepts(MethodLightning) || inv.Accepts(MethodOnchain) {
		t.Errorf("Accepts with %v is wrong", inv.EnabledMethods)
	}
	if (&Invoice{}).Accepts(MethodOnchain) {
		t.Error("an invoice without methods accepts on-chain")
	}
}

func TestDeadline(t *testing.T) {
	inv := newTestInvoice(t, 1000)
	at, ok := inv.Deadline()
	if !ok || !at.Equal(inv.ExpiresAt) {
		t.Errorf("New: Deadline = %s, %t; want the expiry", at, ok)
	}
	if _, isExpiry := inv.DeadlineInput(at).(ExpiryReached); !isExpiry {
		t.Errorf("New: DeadlineInput = %T, want ExpiryReached", inv.DeadlineInput(at))
	}
	// The deadline input applies cleanly at the deadline, all the way.
	inv = mustApplyOne(t, inv, inv.DeadlineInput(at))
	at, ok = inv.Deadline()
	if inv.Status != InvoiceExpired || !ok || !at.Equal(inv.MonitorUntil) {
		t.Errorf("Expired: Deadline = %s, %t; want the end of monitoring", at, ok)
	}
	if in, isEnd := inv.DeadlineInput(at).(MonitoringEnded); !isEnd || !in.At.Equal(at) {
		t.Errorf("Expired: DeadlineInput = %#v", inv.DeadlineInput(at))
	}
	inv = mustApplyOne(t, inv, inv.DeadlineInput(at))
	if _, ok := inv.Deadline(); ok {
		t.Error("Expired and no longer watched still has a deadline")
	}

	processing := mustApplyOne(t, newTestInvoice(t, 1000), onchain("a", 1000, 0, time.Minute))
	if at, ok := processing.Deadline(); !ok || !at.Equal(processing.MonitorUntil) {
		t.Errorf("Processing: Deadline = %s, %t; want the end of monitoring", at, ok)
	}
	for _, in := range []InvoiceInput{onchain("a", 1000, 1, 2*time.Minute), MarkedInvalid{At: scriptEpoch}} {
		done := mustApplyOne(t, processing, in)
		if at, ok := done.Deadline(); ok {
			t.Errorf("%s: Deadline = %s, want none", done.Status, at)
		}
	}
}

func TestNewInvoice(t *testing.T) {
	store := scriptStore()
	store.PercentFee = decimalOf("0.5")
	store.UnderpaymentTolerance = decimalOf("0.25")
	store.ConfirmationsRequired = 2
	now := time.Date(2025, 11, 21, 10, 0, 0, 123_456_789, time.FixedZone("CET", 3600))
	yes := true
	req := InvoiceRequest{
		Amount: decimalOf("10"), HasAmount: true, Currency: "usd",
		OrderID: "A-7", WalletMessage: "thanks", Metadata: json.RawMessage(`{"b":2,"a":1}`),
		BuyerEmail: "buyer@example.com", RedirectURL: "https://shop.example/done", RedirectAutomatically: &yes,
		PaymentLinkID: "pl1", ReferralCode: "ref",
	}
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	terms := InvoiceTerms{
		RequestRate: decimalOf("100000"), StoreRate: decimalOf("87000"),
		Now: now, Expiry: 15 * time.Minute, Monitoring: time.Hour,
	}
	inv, effects, err := NewInvoice("inv9", &store, &req, terms)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2025, 11, 21, 9, 0, 0, 123_000_000, time.UTC)
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"id and store", inv.ID == "inv9" && inv.StoreID == "store1" && inv.TerminalName == "Corner Shop" && inv.PaymentLinkID == "pl1"},
		{"status", inv.Status == InvoiceNew && inv.AdditionalStatus == StatusNone},
		{"amount from the request rate", inv.Amount == 10_000 && inv.InvoiceAmount.Equal(decimalOf("10")) && inv.Currency == USD},
		{"rates locked", inv.StoreCurrency == EUR && inv.ExchangeRate.Equal(decimalOf("87000")) && inv.RequestRate.Equal(decimalOf("100000"))},
		{"fiat amount at the store rate", inv.FiatAmount().Equal(decimalOf("8.7"))},
		{"store rules copied", inv.PercentFee.Equal(decimalOf("0.5")) && inv.Tolerance.Equal(decimalOf("0.25")) && inv.ConfirmationsRequired == 2},
		{"methods defaulted", len(inv.EnabledMethods) == 2},
		{"request fields", inv.OrderID == "A-7" && inv.WalletMessage == "thanks" && inv.BuyerEmail == "buyer@example.com" &&
			inv.RedirectURL == "https://shop.example/done" && inv.RedirectAutomatically && inv.ReferralCode == "ref"},
		{"times in UTC to the millisecond", inv.CreatedAt.Equal(created) && inv.CreatedAt.Location() == time.UTC && inv.UpdatedAt.Equal(created)},
		{"expiry", inv.ExpiresAt.Equal(created.Add(15 * time.Minute))},
		{"monitoring after expiry", inv.MonitorUntil.Equal(created.Add(75 * time.Minute))},
		{"no payments", len(inv.Payments) == 0 && inv.TotalPaid() == 0},
	} {
		if !c.ok {
			t.Errorf("NewInvoice: %s wrong in %+v", c.name, inv)
		}
	}
	if got, want := string(inv.Metadata), `{"a":1,"b":2,"orderId":"A-7"}`; got != want {
		t.Errorf("metadata = %s, want %s", got, want)
	}
	var md struct {
		OrderID string `json:"orderId"`
	}
	if json.Unmarshal(inv.Metadata, &md) != nil || md.OrderID != "A-7" {
		t.Errorf("the order id is not in the metadata")
	}
	want := []Effect{Emit{Type: EventNew}, ArmTimer{At: inv.ExpiresAt}}
	if len(effects) != 2 || effects[0] != want[0] || effects[1] != want[1] {
		t.Errorf("effects = %v, want %v", effects, want)
	}

	// A top-up invoice asks for nothing and needs no rate.
	topUp := InvoiceRequest{}
	if err := topUp.Validate(); err != nil {
		t.Fatal(err)
	}
	inv, _, err = NewInvoice("inv10", &store, &topUp, InvoiceTerms{Now: now, Expiry: time.Minute})
	if err != nil || inv.Amount != 0 || inv.Currency != EUR || inv.Status != InvoiceNew {
		t.Errorf("top-up: %+v, %v", inv, err)
	}

	// Fiat without a rate cannot be priced.
	if _, _, err := NewInvoice("inv11", &store, &req, InvoiceTerms{Now: now}); ErrorCode(err) != Unavailable {
		t.Errorf("no rate: %v, want Unavailable", err)
	}
	// Nor more than every bitcoin.
	huge := InvoiceRequest{Amount: decimalOf("21000001"), HasAmount: true, Currency: BTC}
	if _, _, err := NewInvoice("inv12", &store, &huge, terms); ErrorCode(err) != Invalid {
		t.Errorf("21000001 BTC: %v, want Invalid", err)
	}
	// An amount below one satoshi that validation let through.
	tiny := InvoiceRequest{Amount: decimalOf("-1"), HasAmount: true, Currency: SATS}
	if _, _, err := NewInvoice("inv13", &store, &tiny, terms); ErrorCode(err) != Invalid {
		t.Errorf("-1 SATS: %v, want Invalid", err)
	}
}

func TestWithOrderID(t *testing.T) {
	for _, tc := range []struct{ metadata, want string }{
		{``, `{"orderId":"A-7"}`},
		{`{}`, `{"orderId":"A-7"}`},
		{`{"x":"y"}`, `{"orderId":"A-7","x":"y"}`},
		// An orderId already in the metadata wins, untouched.
		{`{"orderId":"B-1", "x":1}`, `{"orderId":"B-1", "x":1}`},
		{`{"orderId":42}`, `{"orderId":42}`},
		// Not an object: left alone.
		{`[1,2]`, `[1,2]`},
		{`"text"`, `"text"`},
	} {
		if got := string(withOrderID(json.RawMessage(tc.metadata), "A-7")); got != tc.want {
			t.Errorf("withOrderID(%s) = %s, want %s", tc.metadata, got, tc.want)
		}
	}
	if got := string(withOrderID(nil, `quote " and <tag>`)); got != `{"orderId":"quote \" and \u003ctag\u003e"}` {
		t.Errorf("withOrderID escapes to %s", got)
	}
}

// TestInvoiceRequestValidate checks the rules of a create-invoice request
// and its defaults.
func TestInvoiceRequestValidate(t *testing.T) {
	valid := func() InvoiceRequest {
		return InvoiceRequest{Amount: decimalOf("12.50"), HasAmount: true}
	}
	r := valid()
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	if r.Currency != EUR || len(r.EnabledMethods) != 2 || r.EnabledMethods[0] != MethodOnchain || r.EnabledMethods[1] != MethodLightning {
		t.Errorf("defaults: currency %s, methods %v; want EUR and both methods", r.Currency, r.EnabledMethods)
	}
	r = InvoiceRequest{Currency: " sats ", EnabledMethods: []PaymentMethod{MethodLightning}}
	if err := r.Validate(); err != nil || r.Currency != SATS || len(r.EnabledMethods) != 1 {
		t.Errorf("currency %s, methods %v, %v: want SATS, Lightning only", r.Currency, r.EnabledMethods, err)
	}

	long := func(n int, s string) string { return strings.Repeat(s, n) }
	bigObject := func(size int) json.RawMessage {
		// {"k":"xxx…"} of exactly size bytes.
		return json.RawMessage(`{"k":"` + long(size-8, "x") + `"}`)
	}
	for _, tc := range []struct {
		name   string
		change func(*InvoiceRequest)
		fields []string // fields at fault; none for a valid request
	}{
		{"top-up", func(r *InvoiceRequest) { r.Amount, r.HasAmount = decimal.Zero, false }, nil},
		{"currency in lower case", func(r *InvoiceRequest) { r.Currency = "chf" }, nil},
		{"unknown currency", func(r *InvoiceRequest) { r.Currency = "DOGE" }, []string{"currency"}},
		{"amount zero", func(r *InvoiceRequest) { r.Amount = decimal.Zero }, []string{"amount"}},
		{"amount negative", func(r *InvoiceRequest) { r.Amount = decimalOf("-1") }, []string{"amount"}},
		{"cents in EUR", func(r *InvoiceRequest) { r.Amount = decimalOf("0.01") }, nil},
		{"trailing zeros", func(r *InvoiceRequest) { r.Amount = decimalOf("12.5000") }, nil},
		{"tenths of a cent", func(r *InvoiceRequest) { r.Amount = decimalOf("12.505") }, []string{"amount"}},
		{"yen fractions", func(r *InvoiceRequest) { r.Currency, r.Amount = JPY, decimalOf("100.5") }, []string{"amount"}},
		{"whole yen", func(r *InvoiceRequest) { r.Currency, r.Amount = JPY, decimalOf("100.0") }, nil},
		{"fractions of a satoshi", func(r *InvoiceRequest) { r.Currency, r.Amount = SATS, decimalOf("1.5") }, []string{"amount"}},
		{"btc with 8 decimals", func(r *InvoiceRequest) { r.Currency, r.Amount = BTC, decimalOf("0.00000001") }, nil},
		{"btc with 9 decimals", func(r *InvoiceRequest) { r.Currency, r.Amount = BTC, decimalOf("0.000000001") }, []string{"amount"}},
		{"wallet message of 255 characters", func(r *InvoiceRequest) { r.WalletMessage = long(255, "a") }, nil},
		{"wallet message of 256 characters", func(r *InvoiceRequest) { r.WalletMessage = long(256, "a") }, []string{"walletMessage"}},
		// Characters, not bytes: 255 of "é" are 510 bytes.
		{"wallet message of 255 two-byte characters", func(r *InvoiceRequest) { r.WalletMessage = long(255, "é") }, nil},
		{"wallet message of 255 emoji", func(r *InvoiceRequest) { r.WalletMessage = long(255, "⚡") }, nil},
		{"wallet message of 256 two-byte characters", func(r *InvoiceRequest) { r.WalletMessage = long(256, "é") }, []string{"walletMessage"}},
		{"e-mail", func(r *InvoiceRequest) { r.BuyerEmail = "buyer@example.com" }, nil},
		{"e-mail without @", func(r *InvoiceRequest) { r.BuyerEmail = "buyer.example.com" }, []string{"buyerEmail"}},
		{"e-mail without domain", func(r *InvoiceRequest) { r.BuyerEmail = "buyer@" }, []string{"buyerEmail"}},
		{"e-mail with spaces", func(r *InvoiceRequest) { r.BuyerEmail = "bu yer@example.com" }, []string{"buyerEmail"}},
		{"e-mail too long", func(r *InvoiceRequest) { r.BuyerEmail = long(250, "a") + "@example.com" }, []string{"buyerEmail"}},
		{"https redirect", func(r *InvoiceRequest) { r.RedirectURL = "https://shop.example/thanks?order=1" }, nil},
		{"http redirect", func(r *InvoiceRequest) { r.RedirectURL = "http://localhost:8080/thanks" }, nil},
		{"javascript redirect", func(r *InvoiceRequest) { r.RedirectURL = "javascript:alert(1)" }, []string{"redirectUrl"}},
		{"ftp redirect", func(r *InvoiceRequest) { r.RedirectURL = "ftp://shop.example/" }, []string{"redirectUrl"}},
		{"relative redirect", func(r *InvoiceRequest) { r.RedirectURL = "/thanks" }, []string{"redirectUrl"}},
		{"scheme-relative redirect", func(r *InvoiceRequest) { r.RedirectURL = "//shop.example/thanks" }, []string{"redirectUrl"}},
		{"redirect without host", func(r *InvoiceRequest) { r.RedirectURL = "https:///thanks" }, []string{"redirectUrl"}},
		{"redirect too long", func(r *InvoiceRequest) { r.RedirectURL = "https://shop.example/" + long(MaxURL, "a") }, []string{"redirectUrl"}},
		{"order id of 255", func(r *InvoiceRequest) { r.OrderID = long(255, "1") }, nil},
		{"order id of 256", func(r *InvoiceRequest) { r.OrderID = long(256, "1") }, []string{"orderId"}},
		{"referral code of 256", func(r *InvoiceRequest) { r.ReferralCode = long(256, "r") }, []string{"referralCode"}},
		{"metadata object", func(r *InvoiceRequest) { r.Metadata = json.RawMessage(`{"orderId":"1","items":[1,2]}`) }, nil},
		{"metadata array", func(r *InvoiceRequest) { r.Metadata = json.RawMessage(`[1,2]`) }, []string{"metadata"}},
		{"metadata string", func(r *InvoiceRequest) { r.Metadata = json.RawMessage(`"x"`) }, []string{"metadata"}},
		{"metadata number", func(r *InvoiceRequest) { r.Metadata = json.RawMessage(`12`) }, []string{"metadata"}},
		{"metadata broken", func(r *InvoiceRequest) { r.Metadata = json.RawMessage(`{"a":`) }, []string{"metadata"}},
		{"metadata of 16 KiB", func(r *InvoiceRequest) { r.Metadata = bigObject(16 << 10) }, nil},
		{"metadata over 16 KiB", func(r *InvoiceRequest) { r.Metadata = bigObject(16<<10 + 1) }, []string{"metadata"}},
		{"everything wrong", func(r *InvoiceRequest) {
			r.Currency, r.Amount, r.WalletMessage, r.BuyerEmail, r.RedirectURL, r.Metadata =
				"XXX", decimalOf("-5"), long(300, "m"), "nobody", "mailto:x@y", json.RawMessage(`[]`)
		}, []string{"currency", "amount", "walletMessage", "buyerEmail", "redirectUrl", "metadata"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := valid()
			tc.change(&r)
			checkFields(t, r.Validate(), tc.fields)
		})
	}
	if n := len(bigObject(16 << 10)); n != MaxMetadataBytes || !json.Valid(bigObject(16<<10)) {
		t.Fatalf("test metadata is %d bytes", n)
	}
}

// checkFields checks that err lists exactly the fields named, in order,
// or is nil when none are.
func checkFields(t *testing.T, err error, fields []string) {
	t.Helper()
	if len(fields) == 0 {
		if err != nil {
			t.Fatalf("Validate = %v, want nil", err)
		}
		return
	}
	e, ok := err.(*Error)
	if !ok || e.Code != Invalid {
		t.Fatalf("Validate = %v, want an Invalid *Error", err)
	}
	var got []string
	for _, f := range e.Fields {
		got = append(got, f.Field)
		if f.Message == "" {
			t.Errorf("field %s has no message", f.Field)
		}
	}
	if len(got) != len(fields) {
		t.Fatalf("Validate names %v, want %v", got, fields)
	}
	for i := range got {
		if got[i] != fields[i] {
			t.Fatalf("Validate names %v, want %v", got, fields)
		}
	}
}

// TestNewInvoiceBounds checks the upper bounds of an invoice's amount
// (every bitcoin, then the store's maximum) and that on-chain is left
// out, with a reason, below the store's on-chain minimum.
func TestNewInvoiceBounds(t *testing.T) {
	terms := InvoiceTerms{RequestRate: decimalOf("87000"), StoreRate: decimalOf("87000"), Now: scriptEpoch, Expiry: time.Minute}
	create := func(store Store, amount string, c Currency, methods ...PaymentMethod) (Invoice, error) {
		t.Helper()
		req := InvoiceRequest{HasAmount: amount != "", Currency: c, EnabledMethods: methods}
		if req.HasAmount {
			req.Amount = decimalOf(amount)
		}
		if err := req.Validate(); err != nil {
			return Invoice{}, err
		}
		inv, _, err := NewInvoice("inv1", &store, &req, terms)
		return inv, err
	}
	store := scriptStore()
	for _, tc := range []struct {
		name     string
		store    func(*Store)
		amount   string
		currency Currency
		methods  []PaymentMethod
		field    string // an Invalid error on this field
		onchain  bool   // on-chain offered
	}{
		{"a hundred billion euros is more than every bitcoin", nil, "100000000000000", EUR, nil, "amount", false},
		{"a hundred billion euros is more than the default maximum", nil, "100000000000", EUR, nil, "amount", false},
		{"the default maximum", nil, "10", BTC, nil, "", true},
		{"above the default maximum", nil, "10.00000001", BTC, nil, "amount", false},
		{"a store's own maximum", func(s *Store) { s.MaxInvoiceAmount = 50_000 }, "50001", SATS, nil, "amount", false},
		{"up to a store's own maximum", func(s *Store) { s.MaxInvoiceAmount = 50_000 }, "50000", SATS, nil, "", true},
		{"below the default on-chain minimum", nil, "999", SATS, nil, "", false},
		{"at the default on-chain minimum", nil, "1000", SATS, nil, "", true},
		{"below a store's on-chain minimum", func(s *Store) { s.OnchainMinAmount = 5000 }, "4999", SATS, nil, "", false},
		{"on-chain only, below the minimum", nil, "500", SATS, []PaymentMethod{MethodOnchain}, "amount", false},
		{"a top-up invoice keeps on-chain", nil, "", EUR, nil, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := store
			if tc.store != nil {
				tc.store(&st)
			}
			inv, err := create(st, tc.amount, tc.currency, tc.methods...)
			if tc.field != "" {
				checkFields(t, err, []string{tc.field})
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if inv.Accepts(MethodOnchain) != tc.onchain {
				t.Fatalf("on-chain offered = %v, want %v (methods %v)", inv.Accepts(MethodOnchain), tc.onchain, inv.EnabledMethods)
			}
			if !inv.Accepts(MethodLightning) {
				t.Fatalf("Lightning left out: %v", inv.EnabledMethods)
			}
			if tc.onchain != (inv.OnchainUnavailableReason == "") {
				t.Fatalf("onchainUnavailableReason = %q with on-chain offered %v", inv.OnchainUnavailableReason, tc.onchain)
			}
		})
	}
}

// TestInvoicePaidInCurrency checks the receipt's figure: what was paid in
// the currency the invoice was priced in, not the store's.
func TestInvoicePaidInCurrency(t *testing.T) {
	// A$1,234.56 at A$90,000 a bitcoin: 1,371,734 sats (rounded up); the
	// store counts in euros at €50,000.
	inv := Invoice{Amount: 1_371_734, InvoiceAmount: decimalOf("1234.56"), Currency: Currency("AUD"),
		StoreCurrency: EUR, ExchangeRate: decimalOf("50000"), RequestRate: decimalOf("90000")}
	inv.Payments = []Payment{{ID: "a", Amount: 1_371_734}}
	if got := inv.PaidInCurrency(); !got.Equal(decimalOf("1234.56")) {
		t.Errorf("paid in full: PaidInCurrency = %s, want 1234.56", got)
	}
	if got := inv.FiatTotalPaid(); !got.Equal(decimalOf("685.87")) {
		t.Errorf("FiatTotalPaid = %s, want the store's 685.87", got)
	}
	// Overpaid: the sats at the rate that priced the invoice.
	inv.Payments = append(inv.Payments, Payment{ID: "b", Amount: 100_000})
	if got := inv.PaidInCurrency(); !got.Equal(decimalOf("1324.56")) { // 1,471,734 × 90,000 / 10⁸ = 1324.5606
		t.Errorf("overpaid: PaidInCurrency = %s, want 1324.56", got)
	}
	// Priced in sats: the sats.
	inv = Invoice{Amount: 2000, InvoiceAmount: decimalOf("2000"), Currency: SATS, StoreCurrency: EUR, ExchangeRate: decimalOf("50000"),
		Payments: []Payment{{ID: "a", Amount: 2500}}}
	if got := inv.PaidInCurrency(); !got.Equal(decimalOf("2500")) {
		t.Errorf("sats: PaidInCurrency = %s, want 2500", got)
	}
}

// TestInvoiceOwnTerms: a request may set its invoice's confirmations and
// expiry within their bounds, over the store's and the service's; out of
// bounds they are named fields; unset, the defaults hold.
func TestInvoiceOwnTerms(t *testing.T) {
	confs := func(n int32) *int32 { return &n }
	for _, tc := range []struct {
		name   string
		req    InvoiceRequest
		fields []string
	}{
		{"zero confirmations", InvoiceRequest{ConfirmationsRequired: confs(0)}, nil},
		{"the most confirmations", InvoiceRequest{ConfirmationsRequired: confs(MaxConfirmationsRequired)}, nil},
		{"negative confirmations", InvoiceRequest{ConfirmationsRequired: confs(-1)}, []string{"confirmationsRequired"}},
		{"too many confirmations", InvoiceRequest{ConfirmationsRequired: confs(MaxConfirmationsRequired + 1)}, []string{"confirmationsRequired"}},
		{"shortest expiry", InvoiceRequest{Expiry: MinInvoiceExpiry}, nil},
		{"longest expiry", InvoiceRequest{Expiry: MaxInvoiceExpiry}, nil},
		{"negative expiry", InvoiceRequest{Expiry: -time.Minute}, []string{"expiry"}},
		{"too short an expiry", InvoiceRequest{Expiry: MinInvoiceExpiry - time.Millisecond}, []string{"expiry"}},
		{"too long an expiry", InvoiceRequest{Expiry: MaxInvoiceExpiry + time.Second}, []string{"expiry"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.req
			checkFields(t, r.Validate(), tc.fields)
		})
	}

	store := scriptStore()
	store.ConfirmationsRequired = 3
	now := time.Date(2025, 11, 21, 10, 0, 0, 0, time.UTC)
	terms := InvoiceTerms{RequestRate: decimalOf("87000"), StoreRate: decimalOf("87000"), Now: now, Expiry: 15 * time.Minute, Monitoring: time.Hour}
	req := InvoiceRequest{Amount: decimalOf("10"), HasAmount: true, Currency: EUR}
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	inv, _, err := NewInvoice("inv1", &store, &req, terms)
	if err != nil {
		t.Fatal(err)
	}
	if inv.ConfirmationsRequired != 3 || !inv.ExpiresAt.Equal(now.Add(15*time.Minute)) {
		t.Errorf("defaults: %d confirmations, expires %s; want the store's 3 and the service's 15 minutes", inv.ConfirmationsRequired, inv.ExpiresAt)
	}
	req.ConfirmationsRequired, req.Expiry = confs(0), 90*time.Second
	inv, effects, err := NewInvoice("inv2", &store, &req, terms)
	if err != nil {
		t.Fatal(err)
	}
	if want := now.Add(90 * time.Second); inv.ConfirmationsRequired != 0 || !inv.ExpiresAt.Equal(want) ||
		!inv.MonitorUntil.Equal(want.Add(time.Hour)) || !slices.Contains(effects, Effect(ArmTimer{At: want})) {
		t.Errorf("own terms: %d confirmations, expires %s, monitored until %s, effects %v", inv.ConfirmationsRequired, inv.ExpiresAt, inv.MonitorUntil, effects)
	}
}

// TestRedirectAutomaticallyDefault: a request that does not say whether
// to redirect automatically takes the store's default; one that says
// keeps its answer.
func TestRedirectAutomaticallyDefault(t *testing.T) {
	store := scriptStore()
	store.DefaultRedirectAutomatically = true
	terms := InvoiceTerms{RequestRate: decimalOf("87000"), StoreRate: decimalOf("87000"), Now: scriptEpoch, Expiry: time.Minute}
	no := false
	for _, tc := range []struct {
		name  string
		asked *bool
		def   bool
		want  bool
	}{
		{"unsaid, store redirects", nil, true, true},
		{"unsaid, store does not", nil, false, false},
		{"said no, store redirects", &no, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store.DefaultRedirectAutomatically = tc.def
			req := InvoiceRequest{Amount: decimalOf("10"), HasAmount: true, Currency: EUR, RedirectAutomatically: tc.asked}
			if err := req.Validate(); err != nil {
				t.Fatal(err)
			}
			inv, _, err := NewInvoice("inv1", &store, &req, terms)
			if err != nil || inv.RedirectAutomatically != tc.want {
				t.Errorf("redirectAutomatically %v, %v; want %v", inv.RedirectAutomatically, err, tc.want)
			}
		})
	}
}
