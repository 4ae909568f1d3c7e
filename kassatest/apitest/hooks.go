package apitest

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// Handler returns h with every exchange under the documented prefixes
// checked against the document; a mismatch fails t. A response that the
// handler aborts (a panic, such as http.ErrAbortHandler) is not checked.
func Handler(t testing.TB, h http.Handler) http.Handler { return coinsnap.Handler(t, h) }

// Handler returns h with every exchange under d's prefixes checked
// against d; a mismatch fails t.
func (d *Document) Handler(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	if _, err := d.load(); err != nil {
		t.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.described(r.URL.Path) {
			h.ServeHTTP(w, r)
			return
		}
		body, readErr := readAll(r.Body)
		r.Body = replay(body, readErr)
		orig := r.Clone(r.Context())
		tw := &teeWriter{ResponseWriter: w}
		h.ServeHTTP(tw, r)
		status := tw.status
		if status == 0 {
			status = http.StatusOK
		}
		x := Exchange{Request: orig, RequestBody: body, Status: status, Header: w.Header().Clone(), Body: tw.body.Bytes()}
		report(t, x, d.Check(x))
	})
}

// Do sends req with c, checks the exchange against the document (a
// mismatch fails t) and returns the response, whose body can be read as
// usual.
func Do(t testing.TB, c *http.Client, req *http.Request) (*http.Response, error) {
	t.Helper()
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := readAll(req.Body)
		if err != nil {
			return nil, err
		}
		body = b
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	res, err := c.Do(req)
	if err != nil {
		return res, err
	}
	data, readErr := readAll(res.Body)
	res.Body = replay(data, readErr)
	if readErr != nil {
		return res, nil // a cut-off body is the caller's to see; nothing whole to check
	}
	x := Exchange{Request: req, RequestBody: body, Status: res.StatusCode, Header: res.Header, Body: data}
	if problems := Check(x); len(problems) > 0 {
		t.Helper()
		report(t, x, problems)
	}
	return res, nil
}

func readAll(r io.ReadCloser) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	defer r.Close()
	return io.ReadAll(r)
}

// replay is a body that yields b and then err (io.EOF when nil).
func replay(b []byte, err error) io.ReadCloser {
	if err == nil {
		return io.NopCloser(bytes.NewReader(b))
	}
	return io.NopCloser(io.MultiReader(bytes.NewReader(b), errReader{err}))
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// teeWriter passes the response through and keeps a copy of its status
// and body.
type teeWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (t *teeWriter) WriteHeader(code int) {
	if t.status == 0 {
		t.status = code
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *teeWriter) Write(b []byte) (int, error) {
	if t.status == 0 {
		t.status = http.StatusOK
	}
	t.body.Write(b)
	return t.ResponseWriter.Write(b)
}

// Flush passes on flushes of streamed lists.
func (t *teeWriter) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		if t.status == 0 {
			t.status = http.StatusOK
		}
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (t *teeWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }
