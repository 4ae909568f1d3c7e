package actors

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/kassapay/kassa"
)

// The domain documents as the cluster calls carry them: a document of
// protos/storecall.proto (StoreDoc, InvoiceRequestDoc, …) mirrors a Go
// domain type field by field, by name, and toDoc and fromDoc convert
// between them by reflection, with no converter per type. A Go field
// matches the proto field of the same name, compared in lower case
// without underscores ("TxID" is txid, "APIKeys" api_keys); a field in
// kassa.Sats, kassa.MSat or time.Duration may carry its unit as a
// suffix (_sat, _msat, _nanos). Every field of either side must match
// one of the other: a field added to one and not the other panics on
// the first conversion, and TestWireDocumentsRoundTrip fails.
//
// Values: a decimal travels as its exact string (a pointer to one as an
// optional string), a time as a timestamp (absent for the zero time), a
// json.RawMessage as its bytes (none for an empty or null one), named
// strings and integers as their base kind, structs as messages, slices
// and maps as repeated and map fields, a pointer to a scalar as an
// optional field. A value the Go type cannot hold (a decimal that does
// not parse, an integer out of range, an invalid time) is an error. An
// empty list decodes as an empty list, not nil, where the Go field's
// JSON always shows it (a json tag without omitempty).

var (
	decimalType = reflect.TypeOf(decimal.Decimal{})
	timeType    = reflect.TypeOf(time.Time{})
	rawType     = reflect.TypeOf(json.RawMessage(nil))
	unitSuffix  = map[reflect.Type]string{
		reflect.TypeOf(kassa.Sats(0)):    "sat",
		reflect.TypeOf(kassa.MSat(0)):    "msat",
		reflect.TypeOf(time.Duration(0)): "nanos",
	}
)

// toDoc is v as its document D; nil for nil.
func toDoc[D proto.Message, T any](v *T) D {
	var d D
	if v == nil {
		return d
	}
	m := d.ProtoReflect().Type().New()
	writeDoc(reflect.ValueOf(v).Elem(), m)
	return m.Interface().(D)
}

// fromDoc is the document d as its Go type; nil for nil.
func fromDoc[T any, D proto.Message](d D) (*T, error) {
	m := d.ProtoReflect()
	if !m.IsValid() {
		return nil, nil
	}
	v := new(T)
	if err := readDoc(m, reflect.ValueOf(v).Elem()); err != nil {
		return nil, err
	}
	return v, nil
}

// docField is a Go field and the proto field it travels in.
type docField struct {
	index int
	fd    protoreflect.FieldDescriptor
	// list: an empty list decodes as an empty list.
	list bool
}

var docFields sync.Map // docKey → []docField

type docKey struct {
	t reflect.Type
	d protoreflect.FullName
}

func normName(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }

// fieldsOf matches the fields of Go type t with those of document md.
func fieldsOf(t reflect.Type, md protoreflect.MessageDescriptor) []docField {
	key := docKey{t, md.FullName()}
	if fs, ok := docFields.Load(key); ok {
		return fs.([]docField)
	}
	byName := map[string]protoreflect.FieldDescriptor{}
	for i := 0; i < md.Fields().Len(); i++ {
		fd := md.Fields().Get(i)
		byName[normName(string(fd.Name()))] = fd
	}
	var fs []docField
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		n := normName(sf.Name)
		fd, ok := byName[n]
		if u := unitSuffix[sf.Type]; !ok && u != "" {
			n += u
			fd, ok = byName[n]
		}
		if !ok || !sf.IsExported() {
			panic(fmt.Sprintf("wire: %s.%s has no field in %s", t, sf.Name, md.FullName()))
		}
		delete(byName, n)
		tag := sf.Tag.Get("json")
		fs = append(fs, docField{index: i, fd: fd, list: tag != "" && tag != "-" && !strings.Contains(tag, ",omit")})
	}
	for _, fd := range byName {
		panic(fmt.Sprintf("wire: %s has no field for %s", t, fd.FullName()))
	}
	docFields.Store(key, fs)
	return fs
}

func writeDoc(v reflect.Value, m protoreflect.Message) {
	for _, f := range fieldsOf(v.Type(), m.Descriptor()) {
		fv := v.Field(f.index)
		switch {
		case f.fd.IsMap():
			if fv.Len() == 0 {
				continue
			}
			mm := m.Mutable(f.fd).Map()
			iter := fv.MapRange()
			for iter.Next() {
				mm.Set(scalarOut(iter.Key(), f.fd.MapKey()).MapKey(), scalarOut(iter.Value(), f.fd.MapValue()))
			}
		case f.fd.IsList() && fv.Type() != rawType:
			if fv.Len() == 0 {
				continue
			}
			l := m.Mutable(f.fd).List()
			for i := 0; i < fv.Len(); i++ {
				l.Append(valueOut(fv.Index(i), f.fd, l.NewElement))
			}
		default:
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue
				}
				fv = fv.Elem()
			}
			switch {
			case fv.Type() == timeType:
				if !fv.Interface().(time.Time).IsZero() {
					m.Set(f.fd, valueOut(fv, f.fd, nil))
				}
			case f.fd.Message() != nil:
				writeDoc(fv, m.Mutable(f.fd).Message())
			default:
				// proto3 does not carry a scalar's zero value.
				if val := scalarOut(fv, f.fd); f.fd.HasPresence() || !val.Equal(f.fd.Default()) {
					m.Set(f.fd, val)
				}
			}
		}
	}
}

// valueOut is the proto value of one Go value of field fd (an element
// of it for a list); newMsg makes a message for a struct.
func valueOut(v reflect.Value, fd protoreflect.FieldDescriptor, newMsg func() protoreflect.Value) protoreflect.Value {
	if v.Type() == timeType {
		return protoreflect.ValueOfMessage(timestamppb.New(v.Interface().(time.Time)).ProtoReflect())
	}
	if v.Kind() == reflect.Struct && v.Type() != decimalType {
		msg := newMsg()
		writeDoc(v, msg.Message())
		return msg
	}
	return scalarOut(v, fd)
}

func scalarOut(v reflect.Value, fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch {
	case v.Type() == decimalType:
		return protoreflect.ValueOfString(v.Interface().(decimal.Decimal).String())
	case v.Type() == rawType:
		return protoreflect.ValueOfBytes(v.Bytes())
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(v.String())
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(v.Bool())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(intOf(v)))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(intOf(v))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(uintOf(v)))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uintOf(v))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes(v.Bytes())
	}
	panic(fmt.Sprintf("wire: no proto %s for a %s", fd.Kind(), v.Type()))
}

func intOf(v reflect.Value) int64 {
	if v.CanInt() {
		return v.Int()
	}
	return int64(v.Uint())
}

func uintOf(v reflect.Value) uint64 {
	if v.CanUint() {
		return v.Uint()
	}
	return uint64(v.Int())
}

func readDoc(m protoreflect.Message, v reflect.Value) error {
	for _, f := range fieldsOf(v.Type(), m.Descriptor()) {
		fv := v.Field(f.index)
		name := string(f.fd.Name())
		switch {
		case f.fd.IsMap():
			mm := m.Get(f.fd).Map()
			if mm.Len() == 0 {
				continue
			}
			out := reflect.MakeMapWithSize(fv.Type(), mm.Len())
			var err error
			mm.Range(func(k protoreflect.MapKey, e protoreflect.Value) bool {
				kv, ev := reflect.New(fv.Type().Key()).Elem(), reflect.New(fv.Type().Elem()).Elem()
				if err = scalarIn(k.Value(), kv, name); err == nil {
					err = scalarIn(e, ev, name)
				}
				out.SetMapIndex(kv, ev)
				return err == nil
			})
			if err != nil {
				return err
			}
			fv.Set(out)
		case f.fd.IsList() && fv.Type() != rawType:
			l := m.Get(f.fd).List()
			if l.Len() == 0 && !f.list {
				continue
			}
			out := reflect.MakeSlice(fv.Type(), l.Len(), l.Len())
			for i := 0; i < l.Len(); i++ {
				if err := valueIn(l.Get(i), out.Index(i), name); err != nil {
					return err
				}
			}
			fv.Set(out)
		default:
			if !m.Has(f.fd) {
				if fv.Type() == decimalType {
					return fmt.Errorf("decode %s: no decimal", name) // a zero one travels as "0"
				}
				continue
			}
			if fv.Kind() == reflect.Pointer {
				fv.Set(reflect.New(fv.Type().Elem()))
				fv = fv.Elem()
			}
			if err := valueIn(m.Get(f.fd), fv, name); err != nil {
				return err
			}
		}
	}
	return nil
}

func valueIn(pv protoreflect.Value, v reflect.Value, name string) error {
	if v.Type() == timeType {
		ts := pv.Message().Interface().(*timestamppb.Timestamp)
		if err := ts.CheckValid(); err != nil {
			return fmt.Errorf("decode %s: %v", name, err)
		}
		v.Set(reflect.ValueOf(ts.AsTime()))
		return nil
	}
	if v.Kind() == reflect.Struct && v.Type() != decimalType {
		return readDoc(pv.Message(), v)
	}
	return scalarIn(pv, v, name)
}

func scalarIn(pv protoreflect.Value, v reflect.Value, name string) error {
	switch {
	case v.Type() == decimalType:
		d, err := decimal.NewFromString(pv.String())
		if err != nil {
			return fmt.Errorf("decode %s: %v", name, err)
		}
		v.Set(reflect.ValueOf(d))
		return nil
	case v.Type() == rawType:
		if b := pv.Bytes(); len(b) > 0 && string(b) != "null" {
			v.SetBytes(b)
		}
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(pv.String())
	case reflect.Bool:
		v.SetBool(pv.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var n int64
		switch x := pv.Interface().(type) {
		case int32:
			n = int64(x)
		case int64:
			n = x
		default:
			u := pv.Uint()
			if int64(u) < 0 {
				return fmt.Errorf("decode %s: out of range", name)
			}
			n = int64(u)
		}
		if v.OverflowInt(n) {
			return fmt.Errorf("decode %s: out of range", name)
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		var n uint64
		switch x := pv.Interface().(type) {
		case uint32:
			n = uint64(x)
		case uint64:
			n = x
		default:
			i := pv.Int()
			if i < 0 {
				return fmt.Errorf("decode %s: out of range", name)
			}
			n = uint64(i)
		}
		if v.OverflowUint(n) {
			return fmt.Errorf("decode %s: out of range", name)
		}
		v.SetUint(n)
	case reflect.Slice:
		v.SetBytes(pv.Bytes())
	default:
		return fmt.Errorf("decode %s: no %s", name, v.Type())
	}
	return nil
}
