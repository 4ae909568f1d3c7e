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
// Invalid (malformed, saying where, or every field of the wrong type at
// once), TooLarge or UnsupportedMedia.
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	fields, err := decodeBody(w, r, dst)
	if err != nil {
		return err
	}
	return fieldsError(fields, nil)
}

// decodeBody is decodeJSON that goes on past fields of the wrong type:
// dst gets every field that decodes and fields lists the others, so that
// the caller can report them together with its own validation. err is a
// failure of the whole body: malformed, too large, not JSON.
func decodeBody(w http.ResponseWriter, r *http.Request, dst any) (fields []kassa.FieldError, err error) {
	body, err := readBody(w, r)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	if err := checkJSONContentType(r); err != nil {
		return nil, err
	}
	return unmarshalFields(body, dst)
}

// fieldsError reports the fields of the wrong type that decodeBody found
// together with the field errors of validation (a later error of a
// field already reported is left out). Without fields it is validation.
func fieldsError(fields []kassa.FieldError, validation error) error {
	switch {
	case len(fields) == 0:
		return validation
	case len(fields) == 1 && validation == nil:
		return &kassa.Error{Code: kassa.Invalid, Message: "field " + fields[0].Field + " " + fields[0].Message, Fields: fields}
	}
	return kassa.InvalidFields(mergeFields(fields, validation))
}

// unmarshalBody decodes body into dst and words decoding errors for the
// caller: the first field of the wrong type only.
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
		return invalidType(typ.Field, typ)
	}
	return kassa.Errorf(kassa.Invalid, "malformed JSON: %v", err)
}

// invalidType is the error of field, whose value has the wrong type.
func invalidType(field string, typ *json.UnmarshalTypeError) *kassa.Error {
	return &kassa.Error{
		Code:    kassa.Invalid,
		Message: fmt.Sprintf("field %s must be %s, not %s", field, jsonKind(typ.Type), typ.Value),
		Fields:  []kassa.FieldError{{Field: field, Message: fmt.Sprintf("must be %s, not %s", jsonKind(typ.Type), typ.Value)}},
	}
}

// unmarshalFields decodes body into dst, a pointer to a struct, and
// returns the fields of the wrong type, each of them, where json.Unmarshal
// stops reporting at the first (it does fill the other fields). A whole
// body that does not decode is err.
func unmarshalFields(body []byte, dst any) (fields []kassa.FieldError, err error) {
	err = unmarshalBody(body, dst)
	var coded *kassa.Error
	if err == nil || !errors.As(err, &coded) || len(coded.Fields) == 0 {
		return nil, err
	}
	// A field had the wrong type: decode each field alone to find them
	// all. The body is a JSON object, or there would be no field error.
	var raw map[string]json.RawMessage
	if json.Unmarshal(body, &raw) != nil {
		return coded.Fields, nil
	}
	t := reflect.TypeOf(dst).Elem()
	if t.Kind() != reflect.Struct {
		return coded.Fields, nil
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		// encoding/json matches keys without regard to case; the last
		// matching key wins.
		var value json.RawMessage
		for key, v := range raw {
			if strings.EqualFold(key, name) {
				value = v
			}
		}
		if value == nil {
			continue
		}
		err := json.Unmarshal(value, reflect.New(f.Type).Interface())
		var typ *json.UnmarshalTypeError
		var fieldErr *kassa.Error
		switch {
		case err == nil:
		case errors.As(err, &typ):
			path := name
			if typ.Field != "" {
				path += "." + typ.Field
			}
			fields = append(fields, invalidType(path, typ).Fields...)
		case errors.As(err, &fieldErr) && len(fieldErr.Fields) > 0:
			fields = append(fields, fieldErr.Fields...)
		default:
			fields = append(fields, kassa.FieldError{Field: name, Message: kassa.ErrorMessage(err)})
		}
	}
	if len(fields) == 0 {
		return coded.Fields, nil
	}
	return fields, nil
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
