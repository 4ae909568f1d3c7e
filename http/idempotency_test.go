package http

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kassapay/kassa"
)

func TestIdempotencyReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := header{"Idempotency-Key", "order-1001-attempt"}
	first := e.do("POST", "/api/v1/stores/store_a/invoices", `{"amount": 12.5}`, key)
	expectStatus(t, first, 200)

	again := e.do("POST", "/api/v1/stores/store_a/invoices", `{"amount": 12.5}`, key)
	expectStatus(t, again, 200)
	if again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Error("the second request with the key did not replay the first response")
	}
	if again.Header().Get("Content-Type") != first.Header().Get("Content-Type") {
		t.Errorf("replayed Content-Type %q", again.Header().Get("Content-Type"))
	}
	if n := len(e.invoiceIDs("store_a")); n != 1 {
		t.Errorf("%d invoices created, want 1", n)
	}

	// Another key, or no key, acts again.
	expectStatus(t, e.do("POST", "/api/v1/stores/store_a/invoices", `{"amount": 12.5}`, header{"Idempotency-Key", "other"}), 200)
	expectStatus(t, e.do("POST", "/api/v1/stores/store_a/invoices", `{"amount": 12.5}`), 200)
	if n := len(e.invoiceIDs("store_a")); n != 3 {
		t.Errorf("%d invoices created, want 3", n)
	}

	// The same key in another store is another key.
	w := e.do("POST", "/api/v1/stores/store_b/invoices", `{"amount": 12.5}`, key, asB)
	expectStatus(t, w, 200)
	if w.Header().Get("Idempotent-Replayed") != "" || decode[createdInvoice](t, w).StoreID != "store_b" {
		t.Error("a key of store A was replayed to store B")
	}

	// The same key with another body is a conflict.
	expectError(t, e.do("POST", "/api/v1/stores/store_a/invoices", `{"amount": 13}`, key), 409, kassa.Conflict, "different request")
	// ... and so is the same key on another endpoint.
	expectError(t, e.do("POST", "/api/v1/stores/store_a/payment-requests", `{"amount": 12.5}`, key), 409, kassa.Conflict)

	// After 24 hours the key is forgotten.
	e.advanceTo(e.clock.Now().Add(IdempotencyTTL + time.Second))
	w = e.do("POST", "/api/v1/stores/store_a/invoices", `{"amount": 12.5}`, key)
	expectStatus(t, w, 200)
	if w.Header().Get("Idempotent-Replayed") != "" {
		t.Error("replayed after the TTL")
	}
}

func TestIdempotencyStoresOnlySuccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := header{"Idempotency-Key", "k1"}
	expectError(t, e.do("POST", "/api/v1/stores/store_a/payment-requests", `{"title": "no amount"}`, key), 400, kassa.Invalid)
	// The corrected request with the same key acts, then replays.
	first := e.do("POST", "/api/v1/stores/store_a/payment-requests", `{"title": "T", "amount": 1}`, key)
	expectStatus(t, first, 200)
	again := e.do("POST", "/api/v1/stores/store_a/payment-requests", `{"title": "T", "amount": 1}`, key)
	if again.Header().Get("Idempotent-Replayed") != "true" || again.Body.String() != first.Body.String() {
		t.Errorf("not replayed: %s", again.Body.String())
	}

	e.invoices.err = kassa.Errorf(kassa.Unavailable, "no exchange rate for EUR")
	key2 := header{"Idempotency-Key", "k2"}
	expectError(t, e.do("POST", "/api/v1/stores/store_a/invoices", `{"amount": 1}`, key2), 503, kassa.Unavailable)
	expectError(t, e.do("POST", "/api/v1/stores/store_a/invoices", `{"amount": 1}`, key2, header{"Content-Type", "text/plain"}), 415, kassa.UnsupportedMedia)
	e.invoices.err = nil
	w := e.do("POST", "/api/v1/stores/store_a/invoices", `{"amount": 1}`, key2)
	expectStatus(t, w, 200)
	if w.Header().Get("Idempotent-Replayed") != "" {
		t.Error("a failure was stored and replayed")
	}
}

// TestIdempotencyAfterLostReply: the create went through but its answer
// was lost (the node that ran it died; the client got a 503). The retry
// with the same Idempotency-Key answers the invoice the first made, not
// a second one; the key with another body is still refused. Before, the
// key was remembered only for successful answers, and the retry made a
// second invoice.
func TestIdempotencyAfterLostReply(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := header{"Idempotency-Key", "order-77"}
	e.invoices.lostReply = kassa.Errorf(kassa.Unavailable, "the node that runs this store did not answer: try again")
	expectError(t, e.do("POST", "/api/v1/stores/store_a/invoices", `{"amount": 12.5, "orderId": "77"}`, key), 503, kassa.Unavailable)
	e.invoices.lostReply = nil
	created := e.invoiceIDs("store_a")
	if len(created) != 1 {
		t.Fatalf("the create whose reply was lost made %d invoices, want 1", len(created))
	}
	w := e.do("POST", "/api/v1/stores/store_a/invoices", `{"amount": 12.5, "orderId": "77"}`, key)
	expectStatus(t, w, 200)
	if got := decode[createdInvoice](t, w).ID; got != created[0] {
		t.Errorf("the retry answered invoice %s, the first attempt made %s", got, created[0])
	}
	if n := len(e.invoiceIDs("store_a")); n != 1 {
		t.Errorf("%d invoices after the retry, want 1", n)
	}
	expectError(t, e.do("POST", "/api/v1/stores/store_a/invoices", `{"amount": 13, "orderId": "77"}`, key), 409, kassa.Conflict)
}

func TestIdempotencyKeyErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name, key string
		status    int
	}{
		{"longest key", strings.Repeat("k", 255), 200},
		{"too long", strings.Repeat("k", 256), 400},
		{"control character", "a\tb", 400},
		{"non-ASCII", "schlüssel", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/api/v1/stores/store_a/invoices", strings.NewReader(`{"amount": 1}`))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("X-Api-Key", keyA)
			r.Header["Idempotency-Key"] = []string{tt.key}
			w := httptest.NewRecorder()
			e.h.ServeHTTP(w, r)
			if tt.status != 200 {
				body := expectError(t, w, tt.status, kassa.Invalid)
				if len(body.Errors) != 1 || body.Errors[0].Field != "Idempotency-Key" {
					t.Errorf("errors %+v", body.Errors)
				}
				return
			}
			expectStatus(t, w, tt.status)
		})
	}
	// The body limit holds before anything is stored: the key is then
	// free for another request, which is not a replay nor a conflict.
	expectError(t, e.do("POST", "/api/v1/stores/store_a/invoices", `{"metadata": {"x": "`+strings.Repeat("a", MaxBodyBytes)+`"}}`,
		header{"Idempotency-Key", "big"}), 413, kassa.TooLarge)
	w := e.do("POST", "/api/v1/stores/store_a/invoices", `{"amount": 2}`, header{"Idempotency-Key", "big"})
	expectStatus(t, w, 200)
	if w.Header().Get("Idempotent-Replayed") != "" {
		t.Error("a request refused for its size was stored")
	}
}

func TestIdempotencyConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 32
	var start, done sync.WaitGroup
	start.Add(1)
	bodies := make([]string, n)
	codes := make([]int, n)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			r := httptest.NewRequest("POST", "/api/v1/stores/store_a/invoices", strings.NewReader(`{"amount": 7}`))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("X-Api-Key", keyA)
			r.Header.Set("Idempotency-Key", "same-for-all")
			w := httptest.NewRecorder()
			start.Wait()
			e.h.ServeHTTP(w, r)
			bodies[i], codes[i] = w.Body.String(), w.Code
		}()
	}
	start.Done()
	done.Wait()
	if got := len(e.invoiceIDs("store_a")); got != 1 {
		t.Errorf("%d invoices created by %d concurrent requests with one key, want 1", got, n)
	}
	for i := range n {
		if codes[i] != http.StatusOK || bodies[i] != bodies[0] {
			t.Fatalf("request %d answered %d %s, not the first response", i, codes[i], bodies[i])
		}
	}
}

func TestKeyedMutexForgetsKeys(t *testing.T) {
	t.Parallel()
	var k keyedMutex
	unlock := k.lock("a")
	unlock2 := make(chan func(), 1)
	go func() { unlock2 <- k.lock("a") }()
	// The positive control: the second caller has joined the key's lock
	// (users is 2), so it is now waiting for it, or about to.
	for {
		k.mu.Lock()
		users := k.locks["a"].users
		k.mu.Unlock()
		if users == 2 {
			break
		}
		runtime.Gosched()
	}
	select {
	case <-unlock2:
		t.Fatal("the second lock of a key did not wait for the first")
	default:
	}
	if other := k.lock("b"); other == nil {
		t.Fatal("another key waited")
	} else {
		other()
	}
	unlock()
	(<-unlock2)()
	if len(k.locks) != 0 {
		t.Errorf("%d keys left after every unlock", len(k.locks))
	}
}

// crashKV is the environment's store whose values written without the
// disk (CacheValue) are lost, as a crash loses them; it counts the
// writes of each kind.
type crashKV struct {
	kassa.KeyValue
	mu            sync.Mutex
	cached, saved int
}

func (k *crashKV) PutValue(ctx context.Context, key string, value []byte, expires time.Time) error {
	k.mu.Lock()
	k.saved++
	k.mu.Unlock()
	return k.KeyValue.PutValue(ctx, key, value, expires)
}

func (k *crashKV) CacheValue(ctx context.Context, key string, value []byte, expires time.Time) error {
	k.mu.Lock()
	k.cached++
	k.mu.Unlock()
	return nil
}

func (k *crashKV) counts() (cached, saved int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cached, k.saved
}

// TestIdempotencyCacheLostInACrash: the answer to a keyed invoice or
// payment-request create is kept without waiting for the disk, since
// the create's own commit records the key; when a crash lost it, a retry
// answers what the first attempt created, and the key still refuses
// another body. A webhook create records nothing of its own, so its
// answer is written to disk.
func TestIdempotencyCacheLostInACrash(t *testing.T) {
	t.Parallel()
	kv := &crashKV{}
	e := newEnv(t, withDeps(func(d *Deps) { kv.KeyValue = d.KV; d.KV = kv }))
	key := header{"Idempotency-Key", "order-78"}
	w := e.do("POST", "/api/v1/stores/store_a/invoices", `{"amount": 12.5, "orderId": "78"}`, key)
	expectStatus(t, w, 200)
	first := decode[createdInvoice](t, w).ID
	if cached, saved := kv.counts(); cached != 1 || saved != 0 {
		t.Fatalf("an invoice create kept its answer %d times without the disk and %d times on it, want 1 and 0", cached, saved)
	}
	w = e.do("POST", "/api/v1/stores/store_a/invoices", `{"amount": 12.5, "orderId": "78"}`, key)
	expectStatus(t, w, 200)
	if got := decode[createdInvoice](t, w).ID; got != first {
		t.Errorf("the retry answered invoice %s, the first attempt made %s", got, first)
	}
	if n := len(e.invoiceIDs("store_a")); n != 1 {
		t.Errorf("%d invoices after the retry, want 1", n)
	}
	expectError(t, e.do("POST", "/api/v1/stores/store_a/invoices", `{"amount": 13, "orderId": "78"}`, key), 409, kassa.Conflict)

	pr := header{"Idempotency-Key", "link-1"}
	w = e.do("POST", "/api/v1/stores/store_a/payment-requests", `{"amount": "5", "currency": "EUR", "title": "Tea"}`, pr)
	expectStatus(t, w, 200)
	link := decode[struct{ ID string }](t, w).ID
	w = e.do("POST", "/api/v1/stores/store_a/payment-requests", `{"amount": "5", "currency": "EUR", "title": "Tea"}`, pr)
	expectStatus(t, w, 200)
	if got := decode[struct{ ID string }](t, w).ID; got != link {
		t.Errorf("the retried payment request answered %s, the first attempt made %s", got, link)
	}

	w = e.do("POST", "/api/v1/stores/store_a/webhooks", `{"url": "https://shop.example.com/hook"}`, header{"Idempotency-Key", "hook-1"})
	expectStatus(t, w, 200)
	// Each create and each retry (the cache was lost) kept its answer.
	if cached, saved := kv.counts(); cached != 4 || saved != 1 {
		t.Errorf("after the webhook create: %d answers kept without the disk and %d on it, want 4 and 1", cached, saved)
	}
}

// TestRequestRecordsOutliveReplays: a replayed answer always has the
// request record behind it: the record is kept at least as long as the
// Idempotency-Key's answer.
func TestRequestRecordsOutliveReplays(t *testing.T) {
	if kassa.RequestWindow < IdempotencyTTL {
		t.Fatalf("request records are kept %v, Idempotency-Key answers %v", kassa.RequestWindow, IdempotencyTTL)
	}
}
