package http

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// contentTypeJSON is the Content-Type of every JSON response.
const contentTypeJSON = "application/json; charset=utf-8"

// writeJSON answers v as JSON with status, and its Content-Length.
func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := jsonBuffers.Get().(*bytes.Buffer)
	defer putJSONBuffer(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only an unencodable value gets here: a bug, not input.
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"code":"internal","message":"internal error"}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", contentTypeJSON)
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// jsonBuffers are writeJSON's buffers, kept between responses: an
// invoice with its two QR codes is several kilobytes, which a new buffer
// grew to by doubling for every response. The ResponseWriters copy what
// they are given (net/http's, and teeWriter into its own buffer).
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledJSON is the largest buffer kept for another response; a
// larger one (a long list) is left to the collector.
const maxPooledJSON = 64 << 10

func putJSONBuffer(buf *bytes.Buffer) {
	if buf.Cap() > maxPooledJSON {
		return
	}
	buf.Reset()
	jsonBuffers.Put(buf)
}

// message is the body of operations that answer with a message only.
type message struct {
	Message string `json:"message"`
}

// number renders a decimal as a JSON number exactly as decimal.String
// spells it, never through float64.
func number(d decimal.Decimal) json.Number { return json.Number(d.String()) }

// unixSeconds renders a time as Unix seconds; the zero time is 0.
func unixSeconds(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// rfc3339 renders a time as an RFC 3339 string in UTC; the zero time is
// the empty string.
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// listQuery reads the optional startDate, endDate, limit and cursor
// query parameters of a list. A date-only endDate includes that whole
// day.
func listQuery(r *http.Request) (kassa.ListQuery, error) {
	var q kassa.ListQuery
	var fields []kassa.FieldError
	values := r.URL.Query()
	if v := values.Get("startDate"); v != "" {
		t, err := kassa.ParseDate(v)
		if err != nil {
			fields = append(fields, kassa.FieldError{Field: "startDate", Message: kassa.ErrorMessage(err)})
		}
		q.From = t
	}
	if v := values.Get("endDate"); v != "" {
		t, err := kassa.ParseDate(v)
		if err != nil {
			fields = append(fields, kassa.FieldError{Field: "endDate", Message: kassa.ErrorMessage(err)})
		} else if isDateOnly(v) {
			t = t.Add(24*time.Hour - time.Nanosecond)
		}
		q.To = t
	}
	if !q.From.IsZero() && !q.To.IsZero() && q.To.Before(q.From) {
		fields = append(fields, kassa.FieldError{Field: "endDate", Message: "is before startDate"})
	}
	if v := values.Get("limit"); v != "" {
		n, _, err := queryInt(r, "limit", 1, maxPageSize)
		if err != nil {
			fields = append(fields, kassa.FieldError{Field: "limit", Message: "must be a whole number from 1 to 1000"})
		}
		q.Limit = n
	}
	q.Cursor = values.Get("cursor")
	if len(q.Cursor) > 512 {
		fields = append(fields, kassa.FieldError{Field: "cursor", Message: "is not a cursor of this API"})
	}
	if len(fields) > 0 {
		return kassa.ListQuery{}, kassa.InvalidFields(fields)
	}
	return q, nil
}

// maxPageSize is the largest limit a list takes.
const maxPageSize = 1000

// isDateOnly reports whether s is an ISO 8601 calendar date, YYYY-MM-DD.
func isDateOnly(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	for i, c := range []byte(s) {
		if i != 4 && i != 7 && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// listWriter writes a JSON array either streamed, item by item as a
// Reader calls back, or buffered, when a page limit is set and the
// Next-Cursor header must precede the body.
type listWriter struct {
	w        http.ResponseWriter
	buffered bool
	started  bool
	buf      bytes.Buffer
	enc      *json.Encoder
}

func newListWriter(w http.ResponseWriter, buffered bool) *listWriter {
	l := &listWriter{w: w, buffered: buffered}
	if buffered {
		l.enc = json.NewEncoder(&l.buf)
	} else {
		l.enc = json.NewEncoder(w)
	}
	l.enc.SetEscapeHTML(false)
	return l
}

// add writes one item. A streamed list sends its header and opening
// bracket with the first item.
func (l *listWriter) add(v any) error {
	sep := byte(',')
	if !l.started {
		l.started = true
		sep = '['
		if !l.buffered {
			l.w.Header().Set("Content-Type", contentTypeJSON)
			l.w.WriteHeader(http.StatusOK)
		}
	}
	if l.buffered {
		l.buf.WriteByte(sep)
	} else if _, err := l.w.Write([]byte{sep}); err != nil {
		return err
	}
	return l.enc.Encode(v)
}

// finish ends the list. When the Reader failed, a list that has not begun
// answers the error; a streamed list that has begun is cut off by
// aborting the response, so that the client sees a broken body rather
// than a short list.
func (s *server) finishList(l *listWriter, r *http.Request, next string, err error) {
	if err != nil {
		if l.started && !l.buffered {
			if r.Context().Err() != nil {
				s.log.InfoContext(r.Context(), "list abandoned by the client", "err", err)
			} else {
				s.log.ErrorContext(r.Context(), "list failed after it began", "err", err)
			}
			panic(http.ErrAbortHandler)
		}
		s.writeError(l.w, r, err)
		return
	}
	if !l.started {
		l.started = true
		if l.buffered {
			l.buf.WriteByte('[')
		} else {
			l.w.Header().Set("Content-Type", contentTypeJSON)
			l.w.WriteHeader(http.StatusOK)
			_, _ = l.w.Write([]byte{'['})
		}
	}
	if l.buffered {
		l.buf.WriteString("]\n")
		if next != "" {
			l.w.Header().Set("Next-Cursor", next)
		}
		l.w.Header().Set("Content-Type", contentTypeJSON)
		l.w.WriteHeader(http.StatusOK)
		_, _ = l.w.Write(l.buf.Bytes())
		return
	}
	_, _ = l.w.Write([]byte("]\n"))
}
