// Package format is the on-disk format of the documents Kassa persists
// as JSON (store and invoice snapshots, ledger lines, pay links,
// webhooks, deliveries, forwards, queued transfers, request records,
// history lines), in Pebble and in PostgreSQL alike.
//
// Each document carries its kind's format version as its first member,
// {"_v":1,...}, and the rest is the JSON of the domain struct. A reader
// refuses a version newer than it knows with a *VersionError, so that an
// older binary never misreads what a newer one wrote; documents written
// before versions existed have none and read as version 0, which has the
// layout of version 1. The golden files under testdata/ pin each kind's
// bytes: a change of the format fails TestGolden until the golden file
// is written again on purpose (go test -update) and, when old documents
// no longer read as they did, the kind's version is raised. The journal's
// events are protobuf (package protos), whose field numbers are their
// format; testdata/events.golden pins the encoding of every event kind
// the same way.
package format

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	"github.com/kassapay/kassa"
)

// Kind is one kind of persisted document and its current format version.
type Kind struct {
	Name    string
	Version int
}

// The persisted kinds. Raise a kind's Version when its documents change
// in a way an older binary would misread (a field renamed, its meaning
// or unit changed); adding a field that older binaries may ignore needs
// only the golden file. Store is 2 since API keys carry permissions: a
// binary of format 1 would read a restricted key as unrestricted.
var (
	Store          = Kind{"store", 2}
	Invoice        = Kind{"invoice", 1}
	Transaction    = Kind{"transaction", 1}
	PaymentRequest = Kind{"payment request", 1}
	Webhook        = Kind{"webhook", 1}
	Delivery       = Kind{"delivery", 1}
	Forward        = Kind{"forward", 1}
	QueuedTransfer = Kind{"queued transfer", 1}
	Request        = Kind{"request record", 1}
	PullPayment    = Kind{"pull payment", 1}
	Payout         = Kind{"payout", 1}
	HistoryLine    = Kind{"history line", 1}
)

// kinds maps each persisted Go type to its kind.
var kinds = map[reflect.Type]Kind{
	reflect.TypeFor[kassa.Store]():          Store,
	reflect.TypeFor[kassa.Invoice]():        Invoice,
	reflect.TypeFor[kassa.Transaction]():    Transaction,
	reflect.TypeFor[kassa.PaymentRequest](): PaymentRequest,
	reflect.TypeFor[kassa.Webhook]():        Webhook,
	reflect.TypeFor[kassa.Delivery]():       Delivery,
	reflect.TypeFor[kassa.Forward]():        Forward,
	reflect.TypeFor[kassa.QueuedTransfer](): QueuedTransfer,
	reflect.TypeFor[kassa.RequestRecord]():  Request,
	reflect.TypeFor[kassa.PullPayment]():    PullPayment,
	reflect.TypeFor[kassa.Payout]():         Payout,
	reflect.TypeFor[kassa.HistoryLine]():    HistoryLine,
}

// KindOf returns the kind of v (a document or a pointer to one).
func KindOf(v any) (Kind, error) {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	k, ok := kinds[t]
	if !ok {
		return Kind{}, fmt.Errorf("format: %v is no persisted document kind", t)
	}
	return k, nil
}

// versionKey opens every versioned document.
const versionKey = `{"_v":`

// Append appends the document v, with its kind's version, to dst.
func Append(dst []byte, v any) ([]byte, error) {
	k, err := KindOf(v)
	if err != nil {
		return dst, err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	if len(data) < 2 || data[0] != '{' {
		return dst, fmt.Errorf("format: %s is not a JSON object", k.Name)
	}
	dst = append(dst, versionKey...)
	dst = strconv.AppendInt(dst, int64(k.Version), 10)
	if len(data) > 2 {
		dst = append(dst, ',')
	}
	return append(dst, data[1:]...), nil
}

// Marshal returns the document v with its kind's version.
func Marshal(v any) ([]byte, error) { return Append(nil, v) }

// Unmarshal decodes the document data into v after checking its
// version: none (written before versions) or one up to its kind's.
func Unmarshal(data []byte, v any) error {
	k, err := KindOf(v)
	if err != nil {
		return err
	}
	if ver, ok := Version(data); ok && ver > k.Version {
		return &VersionError{Kind: k, Found: ver}
	}
	return json.Unmarshal(data, v)
}

// Version returns the format version data declares, and false when it
// declares none (a document written before versions existed).
func Version(data []byte) (int, bool) {
	if len(data) < len(versionKey) || string(data[:len(versionKey)]) != versionKey {
		return 0, false
	}
	rest := data[len(versionKey):]
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	v, err := strconv.Atoi(string(rest[:n]))
	if err != nil {
		// A version that is no number is no version this binary knows.
		return int(^uint(0) >> 1), true
	}
	return v, true
}

// VersionError is a document written in a newer format than this binary
// reads: a newer Kassa wrote it, and this one must not guess.
type VersionError struct {
	Kind  Kind
	Found int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%s document has format version %d, newer than this binary's %d: it was written by a newer Kassa; run that version",
		e.Kind.Name, e.Found, e.Kind.Version)
}
