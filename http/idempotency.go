package http

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/kassapay/kassa"
)

// IdempotencyTTL is how long the first response to an Idempotency-Key is
// answered again.
const IdempotencyTTL = 24 * time.Hour

// maxIdempotencyKey is the longest Idempotency-Key header accepted.
const maxIdempotencyKey = 255

// idemRecord is the stored first response to an Idempotency-Key.
type idemRecord struct {
	// Fingerprint is a hash of the method, path and body of the request,
	// so that a key reused for another request is refused.
	Fingerprint string `json:"fingerprint"`
	Status      int    `json:"status"`
	ContentType string `json:"contentType"`
	Body        []byte `json:"body"`
}

// idempotent replays the first successful response (status and body) to
// a POST with the same Idempotency-Key and store for IdempotencyTTL.
// Concurrent requests with one key run one at a time, so only the first
// one acts. Failures are not stored, because a failed create changed
// nothing: a retry with the same key and a corrected body acts (as
// Stripe does for requests that fail validation).
func (s *server) idempotent(next http.Handler) http.Handler { return s.idempotency(next, false) }

// idempotentCreate is idempotent for the creates whose own commit records
// the key (invoices and payment requests: kassa.Request). Their stored
// response is a cache, written without waiting for the disk when the
// store can (kassa.ValueCache): lost in a crash, a retry is answered
// from the request record with what the first attempt created, as on
// another node. The response then shows the resource as it is now.
func (s *server) idempotentCreate(next http.Handler) http.Handler { return s.idempotency(next, true) }

func (s *server) idempotency(next http.Handler, recorded bool) http.Handler {
	var put func(ctx context.Context, key string, value []byte, expires time.Time) error
	if s.KV != nil {
		put = s.KV.PutValue
		if c, ok := s.KV.(kassa.ValueCache); ok && recorded {
			put = c.CacheValue
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if key == "" || s.KV == nil {
			next.ServeHTTP(w, r)
			return
		}
		if !validIdempotencyKey(key) {
			s.writeError(w, r, invalidField("Idempotency-Key", "must be 1 to 255 visible ASCII characters"))
			return
		}
		body, err := readBody(w, r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sum := sha256.New()
		sum.Write([]byte(r.Method + " " + r.URL.Path + "\n"))
		sum.Write(body)
		fingerprint := hex.EncodeToString(sum.Sum(nil))

		kvKey := "idem/" + callerFrom(r.Context()).store.ID + "/" + key
		unlock := s.idemLocks.lock(kvKey)
		defer unlock()

		raw, found, err := s.KV.GetValue(r.Context(), kvKey)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if found {
			var rec idemRecord
			if err := json.Unmarshal(raw, &rec); err != nil {
				s.writeError(w, r, err)
				return
			}
			if rec.Fingerprint != fingerprint {
				s.writeError(w, r, kassa.Errorf(kassa.Conflict, "Idempotency-Key was already used for a different request"))
				return
			}
			if rec.ContentType != "" {
				w.Header().Set("Content-Type", rec.ContentType)
			}
			w.Header().Set("Idempotent-Replayed", "true")
			w.WriteHeader(rec.Status)
			_, _ = w.Write(rec.Body)
			return
		}

		// The create records the key in its own commit: a retry after
		// a failure whose create went through (a 503 from a node lost
		// in the middle), here or on another node, answers what it
		// created (kassa.Request).
		r = r.WithContext(kassa.WithRequest(r.Context(), kassa.Request{ID: kassa.IdempotencyRequestID(key), Fingerprint: fingerprint}))
		tee := &teeWriter{ResponseWriter: w}
		next.ServeHTTP(tee, r)
		status := tee.status
		if status == 0 {
			status = http.StatusOK
		}
		if status < 200 || status > 299 {
			return
		}
		rec, _ := json.Marshal(idemRecord{
			Fingerprint: fingerprint,
			Status:      status,
			ContentType: w.Header().Get("Content-Type"),
			Body:        tee.body.Bytes(),
		})
		if err := put(r.Context(), kvKey, rec, s.now().Add(IdempotencyTTL)); err != nil {
			// The response has gone out; a retry will act again.
			s.log.ErrorContext(r.Context(), "storing idempotency record", "err", err)
		}
	})
}

// validIdempotencyKey accepts 1 to 255 visible ASCII characters.
func validIdempotencyKey(key string) bool {
	if len(key) == 0 || len(key) > maxIdempotencyKey {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

// teeWriter passes a response through and keeps a copy of it.
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

// Unwrap lets http.ResponseController reach the underlying writer.
func (t *teeWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// keyedMutex is a set of mutexes by key, each existing only while in use.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	mu    sync.Mutex
	users int
}

// lock locks key and returns its unlock function.
func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedLock{}
	}
	l, ok := k.locks[key]
	if !ok {
		l = &keyedLock{}
		k.locks[key] = l
	}
	l.users++
	k.mu.Unlock()

	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
