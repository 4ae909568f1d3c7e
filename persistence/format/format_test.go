package format

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kassapay/kassa"
)

var update = flag.Bool("update", false, "write the golden files of the current formats")

// fill sets every exported field of the value v points to, recursively,
// to a value that is not the zero value (one element per slice or map),
// so that every member of a document is in its golden file and a field
// added, renamed or retyped changes the file.
func fill(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	if v.Type() == reflect.TypeFor[json.RawMessage]() {
		v.SetBytes([]byte(`{"k":"v"}`))
		return
	}
	if v.CanAddr() {
		if u, ok := v.Addr().Interface().(json.Unmarshaler); ok {
			for _, lit := range []string{`"2026-01-02T03:04:05.123456789Z"`, `"1.25"`, `{"k":"v"}`} {
				if u.UnmarshalJSON([]byte(lit)) == nil {
					if _, err := json.Marshal(v.Interface()); err == nil && !v.IsZero() {
						return
					}
				}
				v.SetZero()
			}
		}
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(strings.ToLower(path[strings.LastIndex(path, ".")+1:]))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		t.Fatalf("%s is a float: amounts are integers or decimals", path)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), path)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(t, s.Index(0), path+"[]")
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, path+"{key}")
		fill(t, e, path+"{}")
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fill(t, v.Field(i), path+"."+f.Name)
			}
		}
	case reflect.Interface:
		v.Set(reflect.ValueOf("any"))
	default:
		t.Fatalf("%s: cannot fill a %s", path, v.Kind())
	}
}

// documents are a sample of every persisted kind, every field set.
func documents(t *testing.T) map[string]any {
	t.Helper()
	docs := map[string]any{}
	for typ, k := range kinds {
		v := reflect.New(typ)
		fill(t, v.Elem(), typ.Name())
		docs[fileName(k)] = v.Interface()
	}
	return docs
}

func fileName(k Kind) string { return strings.ReplaceAll(k.Name, " ", "-") }

// TestGolden: every kind's document is, byte for byte, its golden file
// testdata/<kind>.v<version>.json, and the golden file reads back to
// the same document. A failure means the on-disk format changed: if on
// purpose, write the files again with go test -update (and raise the
// kind's Version when older binaries would misread the new documents).
func TestGolden(t *testing.T) {
	for name, doc := range documents(t) {
		k, _ := KindOf(doc)
		path := filepath.Join("testdata", fmt.Sprintf("%s.v%d.json", name, k.Version))
		got, err := Marshal(doc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if *update {
			if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (a new kind? write its golden file with -update)", name, err)
		}
		want = bytes.TrimSuffix(want, []byte("\n"))
		if !bytes.Equal(got, want) {
			t.Errorf("the %s format changed (go test -update writes the golden file, on purpose only):\n got %s\nwant %s", name, got, want)
			continue
		}
		back := reflect.New(reflect.TypeOf(doc).Elem())
		if err := Unmarshal(want, back.Interface()); err != nil {
			t.Fatalf("%s: read the golden file: %v", name, err)
		}
		again, _ := Marshal(back.Interface())
		if !bytes.Equal(again, want) {
			t.Errorf("%s does not read back to itself:\n got %s\nwant %s", name, again, want)
		}
	}
}

// bornVersioned are the kinds first written with a format version: no
// unversioned document of theirs exists.
var bornVersioned = map[Kind]bool{PullPayment: true, Payout: true, HistoryLine: true}

// TestUnversionedDocumentsLoad: the documents as Kassa wrote them before
// format versions (testdata/v0/, written once from that code and never
// updated) still read, with every member they hold read as it was.
func TestUnversionedDocumentsLoad(t *testing.T) {
	for typ, k := range kinds {
		if bornVersioned[k] {
			continue
		}
		name := fileName(k)
		old, err := os.ReadFile(filepath.Join("testdata", "v0", name+".json"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, ok := Version(old); ok {
			t.Fatalf("%s: the unversioned fixture declares a version", name)
		}
		v := reflect.New(typ)
		if err := Unmarshal(old, v.Interface()); err != nil {
			t.Fatalf("%s: the unversioned document does not read: %v", name, err)
		}
		now, err := Marshal(v.Interface())
		if err != nil {
			t.Fatal(err)
		}
		var was, is any
		if err := json.Unmarshal(old, &was); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(now, &is); err != nil {
			t.Fatal(err)
		}
		if path, ok := contains(is, was, name); !ok {
			t.Errorf("%s: the unversioned document lost or changed %s when read:\n old %s\n now %s", name, path, old, now)
		}
	}
}

// contains reports whether every member of want is in got with the
// same value (got may have more members), and else the first path that
// differs.
func contains(got, want any, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path, false
		}
		for k, wv := range w {
			if p, ok := contains(g[k], wv, path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path, false
		}
		for i := range w {
			if p, ok := contains(g[i], w[i], fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	}
	return path, reflect.DeepEqual(got, want)
}

// TestNewerVersionRefused: a document of a newer format is refused with
// a VersionError that says so; its own version and older ones read.
func TestNewerVersionRefused(t *testing.T) {
	for _, tc := range []struct {
		doc     string
		refused bool
	}{
		{`{"_v":3,"id":"s1"}`, true},
		{`{"_v":2,"id":"s1"}`, false},
		{`{"_v":10}`, true},
		{`{"_v":x,"id":"s1"}`, true},
		{`{"_v":1,"id":"s1"}`, false},
		{`{"_v":0,"id":"s1"}`, false},
		{`{"id":"s1"}`, false},
	} {
		var st kassa.Store
		err := Unmarshal([]byte(tc.doc), &st)
		var verr *VersionError
		if tc.refused != errors.As(err, &verr) {
			t.Fatalf("%s: %v", tc.doc, err)
		}
		if tc.refused && !strings.Contains(err.Error(), "newer") {
			t.Fatalf("%s: error %q does not say the document is newer", tc.doc, err)
		}
		if !tc.refused && (err != nil || st.ID != "s1") {
			t.Fatalf("%s: %+v, %v", tc.doc, st, err)
		}
	}
	if _, err := Marshal(struct{ A int }{1}); err == nil {
		t.Fatal("a type that is no persisted kind was encoded")
	}
}

// TestStoredKeysKeepTheirAccess: a store written before keys carried
// permissions (format 1, and unversioned) reads with every key holding
// kassa.DefaultKeyPermissions, what every key could do then; a key
// written with permissions reads back with exactly those.
func TestStoredKeysKeepTheirAccess(t *testing.T) {
	for _, path := range []string{filepath.Join("testdata", "store.v1.json"), filepath.Join("testdata", "v0", "store.json")} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var st kassa.Store
		if err := Unmarshal(data, &st); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(st.APIKeys) == 0 {
			t.Fatalf("%s: no keys", path)
		}
		for _, k := range st.APIKeys {
			if !slices.Equal(k.Granted(), kassa.DefaultKeyPermissions) {
				t.Errorf("%s: key %s holds %v, want the defaults %v", path, k.ID, k.Granted(), kassa.DefaultKeyPermissions)
			}
		}
	}
	scoped := kassa.Store{ID: "store_a", APIKeys: []kassa.APIKey{{ID: "key_1", Key: "k", Permissions: kassa.Permissions{kassa.PermCreateInvoice}}}}
	data, err := Marshal(&scoped)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := Version(data); v < 2 {
		t.Errorf("a store whose keys carry permissions is written as format %d: a binary of format 1 would read its keys as unrestricted", v)
	}
	var back kassa.Store
	if err := Unmarshal(data, &back); err != nil || !slices.Equal(back.APIKeys[0].Granted(), kassa.Permissions{kassa.PermCreateInvoice}) {
		t.Errorf("read back: %+v, %v", back.APIKeys, err)
	}
}

// TestPullPaymentsBeforeAutoApproveLoad: a pull payment stored before
// pull payments carried autoApproveClaims
// (testdata/older/pull-payment.v1-before-autoapprove.json, the golden
// file of that format, never updated) still reads, every member as it
// was, as one whose claims wait for the merchant; and one that does
// not approve its claims is written as then, so that an older binary
// reads the same document.
func TestPullPaymentsBeforeAutoApproveLoad(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("testdata", "older", "pull-payment.v1-before-autoapprove.json"))
	if err != nil {
		t.Fatal(err)
	}
	old = bytes.TrimSuffix(old, []byte("\n"))
	var pp kassa.PullPayment
	if err := Unmarshal(old, &pp); err != nil {
		t.Fatalf("the older pull payment does not read: %v", err)
	}
	if pp.AutoApproveClaims || pp.ID != "id" || !pp.Archived || pp.Amount.String() != "1.25" {
		t.Fatalf("read %+v", pp)
	}
	again, err := Marshal(&pp)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, old) {
		t.Errorf("written again:\n got %s\nwant %s", again, old)
	}
}
