package kassa

import (
	"reflect"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// differentValue returns a value of type t that differs from t's zero
// value, for the field kinds the domain's documents use.
func differentValue(t *testing.T, typ reflect.Type) reflect.Value {
	t.Helper()
	switch typ {
	case reflect.TypeFor[decimal.Decimal]():
		return reflect.ValueOf(decimal.NewFromInt(7))
	case reflect.TypeFor[time.Time]():
		return reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	}
	v := reflect.New(typ).Elem()
	switch typ.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Pointer:
		v.Set(reflect.New(typ.Elem()))
		v.Elem().Set(differentValue(t, typ.Elem()))
	case reflect.Slice:
		v.Set(reflect.Append(reflect.MakeSlice(typ, 0, 1), differentValue(t, typ.Elem())))
	case reflect.Struct:
		for i := range typ.NumField() {
			v.Field(i).Set(differentValue(t, typ.Field(i).Type))
		}
	default:
		t.Fatalf("no different value for a field of type %s: teach differentValue", typ)
	}
	return v
}

// checkEqualComparesEveryField checks that equal, the explicit equality
// of struct type T, tells apart two values that differ in any one field
// (or in any one field of an element of a slice field), and holds for a
// value and its copy. A field added to T and not compared fails it.
func checkEqualComparesEveryField[T any](t *testing.T, equal func(a, b *T) bool) {
	t.Helper()
	typ := reflect.TypeFor[T]()
	var zero T
	if !equal(&zero, &zero) {
		t.Errorf("%s: the zero value is not Equal to itself", typ)
	}
	full := differentValue(t, typ).Interface().(T)
	same := differentValue(t, typ).Interface().(T)
	if !equal(&full, &same) {
		t.Errorf("%s: two values with the same fields are not Equal", typ)
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		var a T
		reflect.ValueOf(&a).Elem().Field(i).Set(differentValue(t, f.Type))
		if equal(&a, &zero) || equal(&zero, &a) {
			t.Errorf("%s.Equal ignores field %s", typ, f.Name)
		}
		// A difference inside one element of a slice of structs.
		if f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct && f.Type.Elem() != reflect.TypeFor[decimal.Decimal]() {
			elem := f.Type.Elem()
			for j := range elem.NumField() {
				b := differentValue(t, typ).Interface().(T)
				reflect.ValueOf(&b).Elem().Field(i).Index(0).Field(j).Set(reflect.Zero(elem.Field(j).Type))
				if equal(&b, &full) {
					t.Errorf("%s.Equal ignores field %s.%s", typ, f.Name, elem.Field(j).Name)
				}
			}
		}
	}
}

func TestStoreEqualComparesEveryField(t *testing.T) {
	checkEqualComparesEveryField(t, func(a, b *Store) bool { return a.Equal(b) })
}

func TestAPIKeyEqualComparesEveryField(t *testing.T) {
	checkEqualComparesEveryField(t, func(a, b *APIKey) bool { return a.Equal(*b) })
}

func TestPayeeEqualComparesEveryField(t *testing.T) {
	checkEqualComparesEveryField(t, func(a, b *Payee) bool { return a.Equal(*b) })
}

// TestStoreEqualIsNumericForDecimals: decimals compare by value, as
// their JSON did ("1.50" and "1.5" are one fee); a forward fee of 0 is
// not an absent one.
func TestStoreEqualIsNumericForDecimals(t *testing.T) {
	a := Store{PercentFee: decimal.RequireFromString("1.50")}
	b := Store{PercentFee: decimal.RequireFromString("1.5")}
	if !a.Equal(&b) {
		t.Error("1.50 and 1.5 percent differ")
	}
	zero := decimal.Zero
	b.PercentFee, b.ForwardFeePercent = a.PercentFee, &zero
	if a.Equal(&b) {
		t.Error("a forward fee of 0 percent equals none")
	}
}
