package kassa

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func TestPaymentRequestInputValidate(t *testing.T) {
	valid := func() PaymentRequestInput {
		return PaymentRequestInput{Amount: decimalOf("25"), HasAmount: true, Title: "Workshop ticket"}
	}
	for _, tc := range []struct {
		name   string
		change func(*PaymentRequestInput)
		fields []string
	}{
		{"valid", func(*PaymentRequestInput) {}, nil},
		{"amount missing", func(in *PaymentRequestInput) { in.Amount, in.HasAmount = decimal.Zero, false }, []string{"amount"}},
		{"amount zero", func(in *PaymentRequestInput) { in.Amount = decimal.Zero }, []string{"amount"}},
		{"amount negative", func(in *PaymentRequestInput) { in.Amount = decimalOf("-0.01") }, []string{"amount"}},
		{"amount tiny", func(in *PaymentRequestInput) { in.Amount = decimalOf("0.01") }, nil},
		{"title missing", func(in *PaymentRequestInput) { in.Title = "" }, []string{"title"}},
		{"title of 255 characters", func(in *PaymentRequestInput) { in.Title = strings.Repeat("ü", 255) }, nil},
		{"title of 256 characters", func(in *PaymentRequestInput) { in.Title = strings.Repeat("t", 256) }, []string{"title"}},
		{"amount and title missing", func(in *PaymentRequestInput) { in.HasAmount, in.Title = false, "" }, []string{"amount", "title"}},
		{"currency", func(in *PaymentRequestInput) { in.Currency = "gbp" }, nil},
		{"unknown currency", func(in *PaymentRequestInput) { in.Currency = "ABC" }, []string{"currency"}},
		{"discount", func(in *PaymentRequestInput) { in.Discount = decimalOf("99.99") }, nil},
		{"discount of 100", func(in *PaymentRequestInput) { in.Discount = decimalOf("100") }, []string{"discount"}},
		{"negative discount", func(in *PaymentRequestInput) { in.Discount = decimalOf("-1") }, []string{"discount"}},
		{"description of 4096", func(in *PaymentRequestInput) { in.Description = strings.Repeat("d", 4096) }, nil},
		{"description of 4097", func(in *PaymentRequestInput) { in.Description = strings.Repeat("d", 4097) }, []string{"description"}},
		{"internal note of 4097", func(in *PaymentRequestInput) { in.InternalNote = strings.Repeat("n", 4097) }, []string{"internalNote"}},
		{"order id of 256", func(in *PaymentRequestInput) { in.OrderID = strings.Repeat("1", 256) }, []string{"orderId"}},
		{"redirect", func(in *PaymentRequestInput) { in.RedirectURL = "https://shop.example/" }, nil},
		{"bad redirect", func(in *PaymentRequestInput) { in.RedirectURL = "data:text/html,hi" }, []string{"redirectUrl"}},
		{"customer e-mail too long", func(in *PaymentRequestInput) { in.CustomerEmail = strings.Repeat("c", 256) }, []string{"customerEmail"}},
		{"customer e-mail", func(in *PaymentRequestInput) { in.CustomerEmail = "ann@example.com" }, nil},
		{"customer e-mail invalid", func(in *PaymentRequestInput) { in.CustomerEmail = "not an address" }, []string{"customerEmail"}},
		{"more decimals than EUR has", func(in *PaymentRequestInput) { in.Amount, in.Currency = decimalOf("12.345"), EUR }, []string{"amount"}},
		{"trailing zeros are fine", func(in *PaymentRequestInput) { in.Amount, in.Currency = decimalOf("12.340"), EUR }, nil},
		{"decimals of JPY", func(in *PaymentRequestInput) { in.Amount, in.Currency = decimalOf("100.5"), JPY }, []string{"amount"}},
		{"fractions of a satoshi", func(in *PaymentRequestInput) { in.Amount, in.Currency = decimalOf("0.000000001"), BTC }, []string{"amount"}},
		{"more than every bitcoin", func(in *PaymentRequestInput) { in.Amount, in.Currency = decimalOf("21000000.00000001"), BTC }, []string{"amount"}},
		{"every bitcoin", func(in *PaymentRequestInput) { in.Amount, in.Currency = decimalOf("21000000"), BTC }, nil},
		{"expiry in the year 9999", func(in *PaymentRequestInput) { in.ExpiryDate = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC) }, nil},
		{"expiry beyond 9999", func(in *PaymentRequestInput) { in.ExpiryDate = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, []string{"expiryDate"}},
		{"all wrong", func(in *PaymentRequestInput) {
			*in = PaymentRequestInput{Amount: decimalOf("-1"), HasAmount: true, Currency: "X", Discount: decimalOf("150"), RedirectURL: "x",
				CustomerEmail: "x", ExpiryDate: time.Date(20000, 1, 1, 0, 0, 0, 0, time.UTC)}
		}, []string{"amount", "title", "currency", "discount", "redirectUrl", "customerEmail", "expiryDate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := valid()
			tc.change(&in)
			checkFields(t, in.Validate(), tc.fields)
		})
	}

	// docs/api.md, Errors: the body lists each field with a message;
	// the error's own message names the first and counts the others.
	in := PaymentRequestInput{}
	err := in.Validate()
	e, ok := err.(*Error)
	if !ok || len(e.Fields) != 2 {
		t.Fatalf("Validate of nothing = %v", err)
	}
	if e.Fields[0] != (FieldError{"amount", "is required"}) || e.Fields[1] != (FieldError{"title", "is required"}) {
		t.Errorf("fields = %+v", e.Fields)
	}
	if e.Message != "amount: is required (and 1 more)" {
		t.Errorf("message = %q", e.Message)
	}

	in = PaymentRequestInput{Amount: decimalOf("1"), HasAmount: true, Title: "x", Currency: " jpy"}
	if err := in.Validate(); err != nil || in.Currency != JPY {
		t.Errorf("currency %q, %v; want JPY", in.Currency, err)
	}
}

func TestParseDate(t *testing.T) {
	utc := func(y int, m time.Month, d, h, min, s, ns int) time.Time {
		return time.Date(y, m, d, h, min, s, ns, time.UTC)
	}
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2025-11-21", utc(2025, 11, 21, 0, 0, 0, 0)},
		{"2025-11-21T09:30:00Z", utc(2025, 11, 21, 9, 30, 0, 0)},
		{"2025-11-21T09:30:00.250Z", utc(2025, 11, 21, 9, 30, 0, 250_000_000)},
		{"2025-11-21T10:30:00+01:00", utc(2025, 11, 21, 9, 30, 0, 0)},
		{"2025-11-21T04:30:00-05:00", utc(2025, 11, 21, 9, 30, 0, 0)},
		{"2025-11-21T10:30:00+0100", utc(2025, 11, 21, 9, 30, 0, 0)},
		{"2025-11-21T09:30:00", utc(2025, 11, 21, 9, 30, 0, 0)},
		{"2025-11-21T09:30", utc(2025, 11, 21, 9, 30, 0, 0)},
		{"1763717400", utc(2025, 11, 21, 9, 30, 0, 0)},
		{"0", time.Unix(0, 0).UTC()},
		{"999999999999", time.Unix(999_999_999_999, 0).UTC()},
	} {
		got, err := ParseDate(tc.in)
		if err != nil || !got.Equal(tc.want) || got.Location() != time.UTC {
			t.Errorf("ParseDate(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{
		"", " ", "yesterday", "21.11.2025", "2025/11/21", "2025-13-01", "2025-02-30",
		"2025-11-21T25:00:00Z", "-1", "1.5", "1e9", "0x10",
		"1763717400000", // milliseconds: 13 digits, not taken for seconds
		"2025-11-21 09:30:00", "２０２５",
	} {
		if got, err := ParseDate(in); ErrorCode(err) != Invalid {
			t.Errorf("ParseDate(%q) = %s, %v; want Invalid", in, got, err)
		}
	}
}

func TestPaymentRequestStatus(t *testing.T) {
	expiry := scriptEpoch.Add(DefaultPaymentRequestExpiry)
	p := PaymentRequest{ExpiryDate: expiry}
	for _, tc := range []struct {
		name string
		p    PaymentRequest
		now  time.Time
		want string
	}{
		{"before expiry", p, expiry.Add(-time.Nanosecond), PaymentRequestPending},
		{"at expiry", p, expiry, PaymentRequestExpired},
		{"after expiry", p, expiry.Add(time.Hour), PaymentRequestExpired},
		{"paid", PaymentRequest{ExpiryDate: expiry, PaidInvoiceID: "inv1"}, expiry.Add(time.Hour), PaymentRequestCompleted},
		{"archived", PaymentRequest{ExpiryDate: expiry, PaidInvoiceID: "inv1", Archived: true}, scriptEpoch, PaymentRequestArchived},
	} {
		if got := tc.p.Status(tc.now); got != tc.want {
			t.Errorf("%s: Status = %s, want %s", tc.name, got, tc.want)
		}
	}
	if PaymentRequestExpired != "Expired" || PaymentRequestType != "Fixed" {
		t.Error("pay link names changed")
	}
	if DefaultPaymentRequestExpiry != 30*24*time.Hour {
		t.Errorf("DefaultPaymentRequestExpiry = %s, want 30 days (docs/api.md, Limits)", DefaultPaymentRequestExpiry)
	}
}

// TestPaymentRequestUpdate is the one test of what a create and an update
// (PUT) change on a pay link; every adapter goes through Update.
func TestPaymentRequestUpdate(t *testing.T) {
	now := scriptEpoch
	later := now.Add(time.Hour)
	store := &Store{ID: "store1", Currency: EUR}
	full := func() PaymentRequestInput {
		return PaymentRequestInput{
			Amount: decimalOf("25"), HasAmount: true, Title: "Workshop", Currency: CHF, OrderID: "o-1",
			Description: "Two days", RedirectURL: "https://shop.example/thanks", CustomerEmail: "ann@example.com",
			Discount: decimalOf("5"), InternalNote: "VIP", ExpiryDate: now.Add(48 * time.Hour),
		}
	}
	created, err := NewPaymentRequest("pr1", store, &PaymentRequestInput{Amount: decimalOf("10"), HasAmount: true, Title: "T"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if created.Currency != EUR || !created.ExpiryDate.Equal(now.Add(DefaultPaymentRequestExpiry)) || created.StoreID != "store1" ||
		!created.CreatedAt.Equal(now) || !created.UpdatedAt.Equal(now) {
		t.Fatalf("defaults: %+v", created)
	}

	for _, tc := range []struct {
		name   string
		input  func() PaymentRequestInput
		want   func(p *PaymentRequest)
		fields []string // an Invalid error naming these fields
	}{
		{"every field is set", full, func(p *PaymentRequest) {
			p.Amount, p.Title, p.Currency, p.OrderID = decimalOf("25"), "Workshop", CHF, "o-1"
			p.Description, p.RedirectURL, p.CustomerEmail = "Two days", "https://shop.example/thanks", "ann@example.com"
			p.Discount, p.InternalNote, p.ExpiryDate = decimalOf("5"), "VIP", now.Add(48*time.Hour)
		}, nil},
		{"fields not sent are cleared, currency and expiry kept", func() PaymentRequestInput {
			return PaymentRequestInput{Amount: decimalOf("30"), HasAmount: true, Title: "Workshop II"}
		}, func(p *PaymentRequest) {
			p.Amount, p.Title = decimalOf("30"), "Workshop II"
			p.OrderID, p.Description, p.RedirectURL, p.CustomerEmail, p.InternalNote = "", "", "", "", ""
			p.Discount = decimal.Decimal{}
		}, nil},
		{"amount checked against the kept currency", func() PaymentRequestInput {
			return PaymentRequestInput{Amount: decimalOf("100.5"), HasAmount: true, Title: "Yen"}
		}, nil, []string{"amount"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Every case starts from a pay link with every field set, in JPY.
			p, err := NewPaymentRequest("pr1", store, &PaymentRequestInput{
				Amount: decimalOf("2500"), HasAmount: true, Title: "Old", Currency: JPY, OrderID: "old", Description: "old",
				RedirectURL: "https://old.example/", CustomerEmail: "old@example.com", Discount: decimalOf("1"), InternalNote: "old",
				ExpiryDate: now.Add(24 * time.Hour),
			}, now)
			if err != nil {
				t.Fatal(err)
			}
			before := *p
			in := tc.input()
			if err := in.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			err = p.Update(&in, later)
			if tc.fields != nil {
				checkFields(t, err, tc.fields)
				if !reflect.DeepEqual(*p, before) {
					t.Fatalf("a refused update changed the pay link:\n%+v\n%+v", *p, before)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := before
			tc.want(&want)
			want.UpdatedAt = later
			if !reflect.DeepEqual(*p, want) {
				t.Fatalf("after update:\n got %+v\nwant %+v", *p, want)
			}
		})
	}

	archived := *created
	archived.Archived = true
	in := full()
	if err := archived.Update(&in, later); ErrorCode(err) != Conflict {
		t.Fatalf("update of an archived pay link: %v", err)
	}
}

// TestPaymentRequestReadOnlyOncePaid (issue 22): a paid pay link cannot
// change (it showed the new amount beside "Paid"), and an expiry in the
// past is refused at creation and on update.
func TestPaymentRequestReadOnlyOncePaid(t *testing.T) {
	now := scriptEpoch
	store := &Store{ID: "store1", Currency: EUR}
	in := &PaymentRequestInput{Amount: decimalOf("14.16"), HasAmount: true, Title: "T"}
	p, err := NewPaymentRequest("pr1", store, in, now)
	if err != nil {
		t.Fatal(err)
	}
	p.PaidInvoiceID = "inv_1"
	before := *p
	err = p.Update(&PaymentRequestInput{Amount: decimalOf("29.80"), HasAmount: true, Title: "T"}, now.Add(time.Minute))
	if ErrorCode(err) != Conflict || !errors.Is(err, ErrPaymentRequestPaid) {
		t.Fatalf("update of a paid pay link: %v, want %v", err, ErrPaymentRequestPaid)
	}
	if !p.Amount.Equal(before.Amount) || !p.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("a refused update changed the pay link: %+v", p)
	}

	for _, at := range []time.Time{now.Add(-time.Second), now} {
		past := &PaymentRequestInput{Amount: decimalOf("1"), HasAmount: true, Title: "T", ExpiryDate: at}
		if _, err := NewPaymentRequest("pr2", store, past, now); !hasFields(err, "expiryDate") {
			t.Errorf("create with expiry %s at %s: %v, want an Invalid expiryDate", at, now, err)
		}
		q, _ := NewPaymentRequest("pr3", store, in, now)
		if err := q.Update(past, now); !hasFields(err, "expiryDate") {
			t.Errorf("update with expiry %s at %s: %v, want an Invalid expiryDate", at, now, err)
		}
	}
	// With other mistakes, every field at once.
	bad := &PaymentRequestInput{HasAmount: false, Title: "T", ExpiryDate: now.Add(-time.Hour)}
	if _, err := NewPaymentRequest("pr4", store, bad, now); !hasFields(err, "amount", "expiryDate") {
		t.Errorf("create with two mistakes: %v", err)
	}
	if _, err := NewPaymentRequest("pr5", store, &PaymentRequestInput{Amount: decimalOf("1"), HasAmount: true, Title: "T", ExpiryDate: now.Add(time.Hour)}, now); err != nil {
		t.Errorf("an expiry in the future: %v", err)
	}
}

// hasFields reports whether err is an Invalid error naming exactly fields.
func hasFields(err error, fields ...string) bool {
	var e *Error
	if !errors.As(err, &e) || e.Code != Invalid || len(e.Fields) != len(fields) {
		return false
	}
	for i, f := range e.Fields {
		if f.Field != fields[i] {
			return false
		}
	}
	return true
}

// TestValidateAtRefusesAPastExpiry: ValidateAt is Validate plus the rule
// that a given expiry lies after now (a pay link that expired as it was
// saved could never be paid); the API reports both kinds of field at
// once.
func TestValidateAtRefusesAPastExpiry(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ok := PaymentRequestInput{Title: "Coffee", Amount: decimal.NewFromInt(5), HasAmount: true}
	if err := ok.ValidateAt(now); err != nil {
		t.Errorf("no expiry: %v", err)
	}
	ok.ExpiryDate = now.Add(time.Hour)
	if err := ok.ValidateAt(now); err != nil {
		t.Errorf("an expiry ahead: %v", err)
	}
	past := ok
	past.ExpiryDate = now
	var e *Error
	if err := past.ValidateAt(now); !errors.As(err, &e) || len(e.Fields) != 1 || e.Fields[0] != (FieldError{"expiryDate", "must be in the future"}) {
		t.Errorf("an expiry of now: %v, want expiryDate must be in the future", err)
	}
	past.Title = ""
	if err := past.ValidateAt(now); !errors.As(err, &e) || len(e.Fields) != 2 || e.Fields[1].Field != "expiryDate" {
		t.Errorf("no title and a past expiry: %v, want both fields", err)
	}
}
