package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// MaxBodyBytes is the largest request body the API reads.
const MaxBodyBytes = 1 << 20

// readBody reads the whole request body, at most MaxBodyBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, kassa.Errorf(kassa.TooLarge, "request body is larger than %d bytes", MaxBodyBytes)
		}
		return nil, kassa.Errorf(kassa.Invalid, "reading the request body: %v", err)
	}
	return b, nil
}

// checkJSONContentType accepts application/json with no charset or with
// charset utf-8.
func checkJSONContentType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || mt != "application/json" {
		return kassa.Errorf(kassa.UnsupportedMedia, "request body must be JSON with Content-Type application/json")
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return kassa.Errorf(kassa.UnsupportedMedia, "request body must be UTF-8 JSON, not charset %s", cs)
	}
	return nil
}

// decodeJSON reads the request body into dst. An empty body or a JSON
// null leaves dst as it is; unknown fields are ignored. Errors are
// Invalid (malformed, saying where), TooLarge or UnsupportedMedia.
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := checkJSONContentType(r); err != nil {
		return err
	}
	return unmarshalBody(body, dst)
}

// unmarshalBody decodes body into dst and words decoding errors for the
// caller.
func unmarshalBody(body []byte, dst any) error {
	err := json.Unmarshal(body, dst)
	if err == nil {
		return nil
	}
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
		coded  *kassa.Error
	)
	switch {
	case errors.As(err, &coded):
		return coded
	case errors.As(err, &syntax):
		line, col := position(body, syntax.Offset)
		return kassa.Errorf(kassa.Invalid, "malformed JSON at line %d, column %d: %s", line, col, syntax.Error())
	case errors.As(err, &typ):
		if typ.Field == "" {
			return kassa.Errorf(kassa.Invalid, "request body must be a JSON object, not %s", typ.Value)
		}
		return &kassa.Error{
			Code:    kassa.Invalid,
			Message: fmt.Sprintf("field %s must be %s, not %s", typ.Field, jsonKind(typ.Type), typ.Value),
			Fields:  []kassa.FieldError{{Field: typ.Field, Message: fmt.Sprintf("must be %s, not %s", jsonKind(typ.Type), typ.Value)}},
		}
	}
	return kassa.Errorf(kassa.Invalid, "malformed JSON: %v", err)
}

// position returns the 1-based line and column of the byte that a JSON
// syntax error reports: the one before offset, where decoding stopped.
func position(body []byte, offset int64) (line, col int) {
	offset = min(max(offset-1, 0), int64(len(body)))
	before := body[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// jsonKind names the JSON type that a Go type is decoded from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a " + t.Kind().String()
}

// absent reports whether a raw JSON field was left out or given as null.
func absent(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// flexString is a string field that also takes a JSON number, as shop
// plugins send order ids either way.
type flexString string

// UnmarshalJSON reads a string or a number.
func (f *flexString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*f = flexString(s)
		return nil
	case len(b) > 0 && (b[0] == '-' || b[0] >= '0' && b[0] <= '9'):
		*f = flexString(b)
		return nil
	}
	return &json.UnmarshalTypeError{Value: jsonValueKind(b), Type: reflect.TypeFor[string]()}
}

// stringList is a list of strings given as a JSON array or as one
// comma-separated string.
type stringList []string

// UnmarshalJSON reads an array of strings or a comma-separated string.
func (l *stringList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*l = nil
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				*l = append(*l, part)
			}
		}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	*l = list
	return nil
}

// jsonValueKind names the kind of a raw JSON value as json errors do.
func jsonValueKind(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	case '"':
		return "string"
	}
	return "number"
}

// parseDecimalField reads an optional decimal field (a number or a
// decimal string). ok is false when the field is absent.
func parseDecimalField(raw json.RawMessage) (d decimal.Decimal, ok bool, err error) {
	if absent(raw) {
		return decimal.Zero, false, nil
	}
	d, err = kassa.ParseAmount(raw)
	if err != nil {
		return decimal.Zero, true, err
	}
	return d, true, nil
}

// parseSatsField reads an optional whole number of satoshis given as a
// number or a digit string.
func parseSatsField(raw json.RawMessage) (kassa.Sats, bool, error) {
	d, ok, err := parseDecimalField(raw)
	if !ok || err != nil {
		return 0, ok, err
	}
	if !d.IsInteger() {
		return 0, true, kassa.Errorf(kassa.Invalid, "must be a whole number of satoshis")
	}
	if d.GreaterThan(decimal.NewFromInt(int64(kassa.MaxSats))) || d.LessThan(decimal.NewFromInt(-int64(kassa.MaxSats))) {
		return 0, true, kassa.Errorf(kassa.Invalid, "is more than 21 million bitcoin")
	}
	return kassa.Sats(d.IntPart()), true, nil
}

// queryInt reads an optional integer query parameter within [min, max].
func queryInt(r *http.Request, name string, min, max int) (int, bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		return 0, true, invalidField(name, fmt.Sprintf("must be a whole number from %d to %d", min, max))
	}
	return n, true, nil
}

// invalidField returns an Invalid error for one field.
func invalidField(field, message string) error {
	return kassa.InvalidFields([]kassa.FieldError{{Field: field, Message: message}})
}
