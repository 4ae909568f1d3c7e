package format

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kassapay/kassa/protos"
)

// fillProto sets every field of m (recursively, one element per list)
// to a value that is not the zero value.
func fillProto(t *testing.T, m protoreflect.Message) {
	t.Helper()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		if f.ContainingOneof() != nil && !f.ContainingOneof().IsSynthetic() {
			continue // the caller chooses the kind
		}
		if f.IsList() {
			l := m.Mutable(f).List()
			if f.Kind() == protoreflect.MessageKind {
				e := l.NewElement()
				fillProto(t, e.Message())
				l.Append(e)
			} else {
				l.Append(scalar(t, f))
			}
			continue
		}
		if f.IsMap() {
			t.Fatalf("%s: a map field (its encoding is not deterministic across languages)", f.FullName())
		}
		if f.Kind() == protoreflect.MessageKind {
			fillProto(t, m.Mutable(f).Message())
			continue
		}
		m.Set(f, scalar(t, f))
	}
}

func scalar(t *testing.T, f protoreflect.FieldDescriptor) protoreflect.Value {
	switch f.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(-7)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(-1234567890123)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(7)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(1234567890123)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(string(f.Name()))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(`{"_v":1}`))
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(1)
	}
	t.Fatalf("%s: cannot fill a %s", f.FullName(), f.Kind())
	return protoreflect.Value{}
}

// TestEventsGolden: the journal's events (protos.InvoiceEvent and
// protos.StoreEvent, one of each kind, every field set) encode byte for
// byte as testdata/events.golden says. Field numbers and types are on
// disk: a change fails here until the golden file is written again on
// purpose (go test -update), and a kind added gets its line.
func TestEventsGolden(t *testing.T) {
	var lines []string
	for _, ev := range []proto.Message{&protos.InvoiceEvent{}, &protos.StoreEvent{}} {
		d := ev.ProtoReflect().Descriptor()
		oneofs := d.Oneofs()
		for i := range oneofs.Len() {
			o := oneofs.Get(i)
			for j := range o.Fields().Len() {
				f := o.Fields().Get(j)
				m := ev.ProtoReflect().New()
				fillProto(t, m)
				m.Set(f, m.NewField(f))
				fillProto(t, m.Mutable(f).Message())
				data, err := proto.MarshalOptions{Deterministic: true}.Marshal(m.Interface())
				if err != nil {
					t.Fatal(err)
				}
				lines = append(lines, fmt.Sprintf("%s/%s %s", d.Name(), f.Message().Name(), hex.EncodeToString(data)))
			}
		}
	}
	sort.Strings(lines)
	got := []byte(strings.Join(lines, "\n") + "\n")
	path := filepath.Join("testdata", "events.golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the journal's event encoding changed (go test -update writes %s, on purpose only):\n got\n%s\nwant\n%s", path, got, want)
	}
}
