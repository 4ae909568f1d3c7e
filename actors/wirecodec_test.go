package actors

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/protos"
)

// fill sets every field of the struct v points to, nested ones
// included, to a value that is not its zero value: a field added to a
// domain type and forgotten by a converter then fails the round trip.
func fill(t *testing.T, v any) {
	t.Helper()
	n := 0
	fillValue(t, reflect.ValueOf(v).Elem(), &n)
}

func fillValue(t *testing.T, v reflect.Value, n *int) {
	*n++
	switch {
	case v.Type() == decimalType:
		v.Set(reflect.ValueOf(decimal.RequireFromString(fmt.Sprintf("%d.25", *n))))
		return
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(time.Unix(1_700_000_000+int64(*n), 123_456_789).UTC()))
		return
	case v.Type() == rawType:
		v.Set(reflect.ValueOf(json.RawMessage(fmt.Sprintf(`{"n":%d}`, *n))))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillValue(t, v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fillValue(t, v.Index(0), n)
		fillValue(t, v.Index(1), n)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillValue(t, k, n)
		fillValue(t, e, n)
		v.SetMapIndex(k, e)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if !v.Type().Field(i).IsExported() {
				t.Fatalf("%s.%s: an unexported field the converters cannot carry", v.Type(), v.Type().Field(i).Name)
			}
			fillValue(t, v.Field(i), n)
		}
	default:
		t.Fatalf("fill: no value for a %s", v.Type())
	}
}

// sameDoc reports where a and b differ: decimals and times by value,
// everything else by reflect.DeepEqual, field by field.
func sameDoc(a, b reflect.Value, path string) string {
	switch {
	case a.Type() == decimalType:
		if !a.Interface().(decimal.Decimal).Equal(b.Interface().(decimal.Decimal)) {
			return fmt.Sprintf("%s: %v, want %v", path, b, a)
		}
		return ""
	case a.Type() == timeType:
		if !a.Interface().(time.Time).Equal(b.Interface().(time.Time)) {
			return fmt.Sprintf("%s: %v, want %v", path, b, a)
		}
		return ""
	}
	switch a.Kind() {
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if d := sameDoc(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
		return ""
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Sprintf("%s: %v, want %v", path, b, a)
			}
			return ""
		}
		return sameDoc(a.Elem(), b.Elem(), path)
	case reflect.Slice:
		if a.Len() != b.Len() || a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: %v, want %v", path, b, a)
		}
		for i := 0; i < a.Len(); i++ {
			if d := sameDoc(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(a.Interface(), b.Interface()) {
		return fmt.Sprintf("%s: %v, want %v", path, b, a)
	}
	return ""
}

// allSet fails unless every field of m, and of the messages in it, is
// set: a field added to a mirror and not written by its converter.
func allSet(t *testing.T, m protoreflect.Message) {
	t.Helper()
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		if !m.Has(f) {
			t.Errorf("%s.%s is not set", m.Descriptor().Name(), f.Name())
			continue
		}
		switch {
		case f.IsList() && f.Message() != nil:
			for j := 0; j < m.Get(f).List().Len(); j++ {
				allSet(t, m.Get(f).List().Get(j).Message())
			}
		case f.Message() != nil && !f.IsMap() && f.Message().FullName() != "google.protobuf.Timestamp":
			allSet(t, m.Get(f).Message())
		}
	}
}

// roundTrip encodes in, sends it through the protobuf wire format and
// decodes it.
func roundTrip[T any, D proto.Message](t *testing.T, in *T, out func(*T) D, back func(D) (*T, error)) *T {
	t.Helper()
	d := out(in)
	data, err := proto.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	got := d.ProtoReflect().New().Interface().(D)
	if err := proto.Unmarshal(data, got); err != nil {
		t.Fatal(err)
	}
	res, err := back(got)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return res
}

func checkRoundTrip[T any, D proto.Message](t *testing.T, out func(*T) D, back func(D) (*T, error)) {
	t.Helper()
	in := new(T)
	fill(t, in)
	allSet(t, out(in).ProtoReflect())
	got := roundTrip(t, in, out, back)
	if d := sameDoc(reflect.ValueOf(in).Elem(), reflect.ValueOf(got).Elem(), reflect.TypeOf(in).Elem().Name()); d != "" {
		t.Errorf("after the round trip %s", d)
	}
}

// TestWireDocumentsRoundTrip: every document a cluster call carries,
// with every field set, comes back as it went, and its mirror has every
// field set.
func TestWireDocumentsRoundTrip(t *testing.T) {
	t.Run("Store", func(t *testing.T) {
		checkRoundTrip(t, toDoc[*protos.StoreDoc, kassa.Store], fromDoc[kassa.Store, *protos.StoreDoc])
	})
	t.Run("APIKey", func(t *testing.T) {
		checkRoundTrip(t, toDoc[*protos.APIKeyDoc, kassa.APIKey], func(d *protos.APIKeyDoc) (*kassa.APIKey, error) {
			return apiKeyResult.get(&protos.StoreCallReply{Value: &protos.StoreCallReply_ApiKey{ApiKey: d}})
		})
	})
	t.Run("StoreUpdate", func(t *testing.T) {
		checkRoundTrip(t, toDoc[*protos.StoreUpdateDoc, kassa.StoreUpdate], fromDoc[kassa.StoreUpdate, *protos.StoreUpdateDoc])
	})
	t.Run("InvoiceRequest", func(t *testing.T) {
		checkRoundTrip(t, toDoc[*protos.InvoiceRequestDoc, kassa.InvoiceRequest], fromDoc[kassa.InvoiceRequest, *protos.InvoiceRequestDoc])
	})
	t.Run("Invoice", func(t *testing.T) {
		checkRoundTrip(t, toDoc[*protos.InvoiceDoc, kassa.Invoice], fromDoc[kassa.Invoice, *protos.InvoiceDoc])
	})
	t.Run("PaymentRequestInput", func(t *testing.T) {
		checkRoundTrip(t, toDoc[*protos.PaymentRequestInputDoc, kassa.PaymentRequestInput], fromDoc[kassa.PaymentRequestInput, *protos.PaymentRequestInputDoc])
	})
	t.Run("PaymentRequest", func(t *testing.T) {
		checkRoundTrip(t, toDoc[*protos.PaymentRequestDoc, kassa.PaymentRequest], fromDoc[kassa.PaymentRequest, *protos.PaymentRequestDoc])
	})
	t.Run("WebhookInput", func(t *testing.T) {
		checkRoundTrip(t, toDoc[*protos.WebhookInputDoc, kassa.WebhookInput], fromDoc[kassa.WebhookInput, *protos.WebhookInputDoc])
	})
	t.Run("Webhook", func(t *testing.T) {
		checkRoundTrip(t, toDoc[*protos.WebhookDoc, kassa.Webhook], fromDoc[kassa.Webhook, *protos.WebhookDoc])
	})
	t.Run("Delivery", func(t *testing.T) {
		checkRoundTrip(t, toDoc[*protos.DeliveryDoc, kassa.Delivery], fromDoc[kassa.Delivery, *protos.DeliveryDoc])
	})
	t.Run("Transaction", func(t *testing.T) {
		checkRoundTrip(t, toDoc[*protos.TransactionDoc, kassa.Transaction], fromDoc[kassa.Transaction, *protos.TransactionDoc])
	})
	t.Run("RefundCommand", func(t *testing.T) {
		checkRoundTrip(t, toDoc[*protos.RefundCommandDoc, kassa.RefundCommand], fromDoc[kassa.RefundCommand, *protos.RefundCommandDoc])
	})
	t.Run("RefundChange", func(t *testing.T) {
		checkRoundTrip(t, toDoc[*protos.RefundChangeDoc, kassa.RefundChange], func(d *protos.RefundChangeDoc) (*kassa.RefundChange, error) {
			return refundChangeResult.get(&protos.StoreCallReply{Value: &protos.StoreCallReply_RefundChange{RefundChange: d}})
		})
	})
}

// TestWireDocumentsKeepTheirJSON: documents as the core makes them, with
// empty lists, zero times and zero decimals, have the same JSON after
// the round trip, as when the calls carried their JSON: an empty list
// stays a list, not null.
func TestWireDocumentsKeepTheirJSON(t *testing.T) {
	now := time.Now().UTC()
	st := kassa.NewStore("st1", kassa.StoreSettings{Name: "Shop", Currency: kassa.EUR}, now)
	st.APIKeys = []kassa.APIKey{}
	w := kassa.NewWebhook("wh1", "st1", &kassa.WebhookInput{URL: "https://shop.example/hook"}, now)
	w.Events = []kassa.EventType{}
	inv := &kassa.Invoice{ID: "inv1", StoreID: "st1", EnabledMethods: []kassa.PaymentMethod{}, CreatedAt: now}
	sameJSON := func(t *testing.T, want, got any) {
		t.Helper()
		a, _ := json.Marshal(want)
		b, _ := json.Marshal(got)
		if string(a) != string(b) {
			t.Errorf("after the round trip\n%s\nwant\n%s", b, a)
		}
	}
	sameJSON(t, st, roundTrip(t, st, toDoc[*protos.StoreDoc, kassa.Store], fromDoc[kassa.Store, *protos.StoreDoc]))
	sameJSON(t, w, roundTrip(t, w, toDoc[*protos.WebhookDoc, kassa.Webhook], fromDoc[kassa.Webhook, *protos.WebhookDoc]))
	sameJSON(t, inv, roundTrip(t, inv, toDoc[*protos.InvoiceDoc, kassa.Invoice], fromDoc[kassa.Invoice, *protos.InvoiceDoc]))
	tx := &kassa.Transaction{ID: 1, StoreID: "st1", CreatedAt: now}
	sameJSON(t, tx, roundTrip(t, tx, toDoc[*protos.TransactionDoc, kassa.Transaction], fromDoc[kassa.Transaction, *protos.TransactionDoc]))
	d := &kassa.Delivery{ID: "d1", Payload: json.RawMessage(`{"a":1}`), CreatedAt: now}
	sameJSON(t, d, roundTrip(t, d, toDoc[*protos.DeliveryDoc, kassa.Delivery], fromDoc[kassa.Delivery, *protos.DeliveryDoc]))
}

// TestWireRefusesWhatTheTypeCannotHold: a decimal that does not parse
// or a status out of range is an error, not a zero value.
func TestWireRefusesWhatTheTypeCannotHold(t *testing.T) {
	for name, d := range map[string]*protos.InvoiceDoc{
		"a bad decimal":      {PercentFee: "1e", Tolerance: "0", InvoiceAmount: "0", ExchangeRate: "0", RequestRate: "0"},
		"a status too large": {Status: 256, PercentFee: "0", Tolerance: "0", InvoiceAmount: "0", ExchangeRate: "0", RequestRate: "0"},
	} {
		if _, err := fromDoc[kassa.Invoice](d); err == nil {
			t.Errorf("an invoice with %s decoded", name)
		}
	}
	if _, err := fromDoc[kassa.Invoice](&protos.InvoiceDoc{PercentFee: "0", Tolerance: "0", InvoiceAmount: "0", ExchangeRate: "0", RequestRate: "0"}); err != nil {
		t.Errorf("a valid invoice (the positive control): %v", err)
	}
}
