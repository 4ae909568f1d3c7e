package persistence

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// invoiceIDs lists the ids of a store's invoices in q.
func invoiceIDs(t *testing.T, h *harness, store string) func(kassa.ListQuery, func(string) error) (string, error) {
	return func(q kassa.ListQuery, fn func(string) error) (string, error) {
		return h.db.Invoices(t.Context(), store, q, func(inv *kassa.Invoice) error {
			if inv.StoreID != store {
				t.Errorf("invoice %s of store %s listed for %s", inv.ID, inv.StoreID, store)
			}
			return fn(inv.ID)
		})
	}
}

func testInvoices(t *testing.T, h *harness) {
	// 95 invoices of s1 700 ms apart, so that seconds hold one or two, and
	// two more created in the same millisecond; neighbours s and s10 have
	// invoices of their own.
	type entry struct {
		id      string
		created time.Time
	}
	var want []entry
	commit(t, h.db, func(b kassa.Batch) {
		for i := range 95 {
			inv := kassatest.NewInvoice(fmt.Sprintf("inv_%03d", i), "s1", t0.Add(time.Duration(i)*700*time.Millisecond))
			b.PutInvoice(inv, nil, 1)
			want = append(want, entry{inv.ID, inv.CreatedAt})
			b.PutInvoice(kassatest.NewInvoice(fmt.Sprintf("inv_s_%03d", i), "s", inv.CreatedAt), nil, 1)
			b.PutInvoice(kassatest.NewInvoice(fmt.Sprintf("inv_s10_%03d", i), "s10", inv.CreatedAt), nil, 1)
		}
		for _, id := range []string{"inv_twin_b", "inv_twin_a"} {
			inv := kassatest.NewInvoice(id, "s1", t0.Add(10*time.Second+time.Nanosecond))
			b.PutInvoice(inv, nil, 1)
			want = append(want, entry{inv.ID, inv.CreatedAt})
		}
	})
	slices.SortFunc(want, func(a, b entry) int {
		if c := b.created.Compare(a.created); c != 0 {
			return c
		}
		return strings.Compare(b.id, a.id)
	})
	var wantIDs []string
	for _, e := range want {
		wantIDs = append(wantIDs, e.id)
	}

	for _, limit := range []int{0, 1, 10, 48, 96, 97, 98} {
		got, n := pages(t, kassa.ListQuery{Limit: limit}, invoiceIDs(t, h, "s1"))
		if !slices.Equal(got, wantIDs) {
			t.Errorf("limit %d: got\n%v\nwant\n%v", limit, got, wantIDs)
		}
		if limit > 0 {
			if wantPages := (len(wantIDs) + limit - 1) / limit; n != wantPages {
				t.Errorf("limit %d: %d pages, want %d", limit, n, wantPages)
			}
		}
	}
	for _, store := range []string{"s", "s10"} {
		if got, _ := pages(t, kassa.ListQuery{Limit: 40}, invoiceIDs(t, h, store)); len(got) != 95 {
			t.Errorf("store %s lists %d invoices, want 95", store, len(got))
		}
	}
	if got, _ := pages(t, kassa.ListQuery{}, invoiceIDs(t, h, "s2")); len(got) != 0 {
		t.Errorf("store without invoices lists %v", got)
	}

	// An invoice written after a page was read appears on later reads
	// only if it sorts after the cursor: older pages stay stable.
	var first []string
	next, err := invoiceIDs(t, h, "s1")(kassa.ListQuery{Limit: 10}, func(id string) error { first = append(first, id); return nil })
	if err != nil {
		t.Fatal(err)
	}
	commit(t, h.db, func(b kassa.Batch) { b.PutInvoice(kassatest.NewInvoice("inv_newest", "s1", t0.Add(time.Hour)), nil, 1) })
	rest, _ := pages(t, kassa.ListQuery{Limit: 10, Cursor: next}, invoiceIDs(t, h, "s1"))
	if !slices.Equal(append(first, rest...), wantIDs) {
		t.Errorf("pages across a write: got %v, want %v", append(first, rest...), wantIDs)
	}

	stop := errors.New("stop")
	calls := 0
	_, err = h.db.Invoices(t.Context(), "s1", kassa.ListQuery{}, func(*kassa.Invoice) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("Invoices with failing fn: %v after %d calls", err, calls)
	}
}

func testInvoicesDateFilter(t *testing.T, h *harness) {
	offsets := map[string]time.Duration{
		"inv_0":    0,
		"inv_1500": 1500 * time.Millisecond,
		"inv_2999": 2999 * time.Millisecond,
		"inv_3000": 3000 * time.Millisecond,
		"inv_3001": 3001 * time.Millisecond,
		"inv_4000": 4000 * time.Millisecond,
	}
	commit(t, h.db, func(b kassa.Batch) {
		for id, d := range offsets {
			b.PutInvoice(kassatest.NewInvoice(id, "s1", t0.Add(d)), nil, 1)
		}
	})
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	cet := time.FixedZone("CET", 3600)
	for _, c := range []struct {
		name     string
		from, to time.Time
		want     []string
	}{
		{"all", time.Time{}, time.Time{}, []string{"inv_4000", "inv_3001", "inv_3000", "inv_2999", "inv_1500", "inv_0"}},
		{"from and to within their seconds", at(1700 * time.Millisecond), at(3000*time.Millisecond + 500*time.Microsecond), []string{"inv_3001", "inv_3000", "inv_2999", "inv_1500"}},
		{"from in another zone", at(1700 * time.Millisecond).In(cet), at(3500 * time.Millisecond).In(cet), []string{"inv_3001", "inv_3000", "inv_2999", "inv_1500"}},
		{"from only", at(3 * time.Second), time.Time{}, []string{"inv_4000", "inv_3001", "inv_3000"}},
		{"to only", time.Time{}, at(500 * time.Millisecond), []string{"inv_0"}},
		{"one second", at(3500 * time.Millisecond), at(3500 * time.Millisecond), []string{"inv_3001", "inv_3000"}},
		{"exact bounds", at(2 * time.Second), at(4 * time.Second), []string{"inv_4000", "inv_3001", "inv_3000", "inv_2999"}},
		{"from after to", at(4 * time.Second), at(2 * time.Second), nil},
		{"before everything", at(-time.Hour), at(-time.Second), nil},
		{"after everything", at(5 * time.Second), time.Time{}, nil},
	} {
		for _, limit := range []int{0, 1, 3} {
			got, _ := pages(t, kassa.ListQuery{From: c.from, To: c.to, Limit: limit}, invoiceIDs(t, h, "s1"))
			if !slices.Equal(got, c.want) {
				t.Errorf("%s, limit %d: got %v, want %v", c.name, limit, got, c.want)
			}
		}
	}
}

func testInvoicesBadCursor(t *testing.T, h *harness) {
	commit(t, h.db, func(b kassa.Batch) { b.PutInvoice(kassatest.NewInvoice("inv_1", "s1", t0), nil, 1) })
	for _, cursor := range []string{"not base64!", base64.RawURLEncoding.EncodeToString([]byte("short")), "YWJj=="} {
		q := kassa.ListQuery{Cursor: cursor}
		_, err := h.db.Invoices(t.Context(), "s1", q, func(*kassa.Invoice) error { return nil })
		wantCode(t, "Invoices with cursor "+cursor, err, kassa.Invalid)
		_, err = h.db.Transactions(t.Context(), "s1", q, func(*kassa.Transaction) error { return nil })
		wantCode(t, "Transactions with cursor "+cursor, err, kassa.Invalid)
		_, err = h.db.Deliveries(t.Context(), "wh_1", q, func(*kassa.Delivery) error { return nil })
		wantCode(t, "Deliveries with cursor "+cursor, err, kassa.Invalid)
	}
}

func testInvoiceLookups(t *testing.T, h *harness) {
	ctx := t.Context()
	inv := kassatest.NewInvoice("inv_1", "s1", t0)
	inv.OnchainAddress, inv.PaymentHash = "bc1qfirst", "hash_first"
	commit(t, h.db, func(b kassa.Batch) { b.PutInvoice(inv, nil, 1) })
	lightningOnly := kassatest.NewInvoice("inv_2", "s1", t0)
	lightningOnly.PaymentHash = "hash_second"
	commit(t, h.db, func(b kassa.Batch) { b.PutInvoice(lightningOnly, nil, 1) })

	// Later versions never rewrite the lookups.
	next := *inv
	next.OnchainAddress, next.PaymentHash = "bc1qlater", "hash_later"
	next.Status = kassa.InvoiceProcessing
	commit(t, h.db, func(b kassa.Batch) { b.PutInvoice(&next, inv, 2) })

	for addr, want := range map[string]string{"bc1qfirst": "inv_1", "bc1qlater": "", "": ""} {
		id, err := h.db.InvoiceIDByAddress(ctx, addr)
		if want == "" {
			wantCode(t, "InvoiceIDByAddress("+addr+")", err, kassa.NotFound)
		} else if id != want || err != nil {
			t.Errorf("InvoiceIDByAddress(%s) = %q, %v; want %s", addr, id, err, want)
		}
	}
	for hash, want := range map[string]string{"hash_first": "inv_1", "hash_second": "inv_2", "hash_later": "", "hash": ""} {
		id, err := h.db.InvoiceIDByPaymentHash(ctx, hash)
		if want == "" {
			wantCode(t, "InvoiceIDByPaymentHash("+hash+")", err, kassa.NotFound)
		} else if id != want || err != nil {
			t.Errorf("InvoiceIDByPaymentHash(%s) = %q, %v; want %s", hash, id, err, want)
		}
	}
	// The update kept one entry in the store's list.
	if got, _ := pages(t, kassa.ListQuery{}, invoiceIDs(t, h, "s1")); !slices.Equal(got, []string{"inv_2", "inv_1"}) {
		t.Errorf("Invoices = %v, want [inv_2 inv_1]", got)
	}
}

type deadline struct {
	id string
	at time.Time
}

func openInvoices(t *testing.T, h *harness) []deadline {
	t.Helper()
	var out []deadline
	err := h.db.OpenInvoices(t.Context(), func(id, storeID string, at time.Time) error {
		if storeID == "" {
			t.Errorf("open invoice %s has no store id in the index", id)
		}
		out = append(out, deadline{id, at})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func checkOpen(t *testing.T, h *harness, step string, want ...deadline) {
	t.Helper()
	got := openInvoices(t, h)
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i].id == want[i].id && got[i].at.Equal(want[i].at)
	}
	if !ok {
		t.Errorf("%s: open invoices\n got %v\nwant %v", step, got, want)
	}
}

func testOpenInvoices(t *testing.T, h *harness) {
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	a := kassatest.NewInvoice("inv_a", "s1", t0) // New: expires at 15m
	b := kassatest.NewInvoice("inv_b", "s1", t0)
	b.ExpiresAt = at(5 * time.Minute)
	settled := kassatest.NewInvoice("inv_settled", "s1", t0)
	settled.Status = kassa.InvoiceSettled
	processing := kassatest.NewInvoice("inv_processing", "s1", t0)
	processing.Status, processing.MonitorUntil = kassa.InvoiceProcessing, at(time.Hour)
	done := kassatest.NewInvoice("inv_done", "s1", t0)
	done.Status, done.MonitoringDone = kassa.InvoiceExpired, true
	invalid := kassatest.NewInvoice("inv_invalid", "s1", t0)
	invalid.Status = kassa.InvoiceInvalid
	commit(t, h.db, func(batch kassa.Batch) {
		for _, inv := range []*kassa.Invoice{a, b, settled, processing, done, invalid} {
			batch.PutInvoice(inv, nil, 1)
		}
	})
	checkOpen(t, h, "created", deadline{"inv_b", at(5 * time.Minute)}, deadline{"inv_a", at(15 * time.Minute)}, deadline{"inv_processing", at(time.Hour)})

	update := func(prev *kassa.Invoice, change func(*kassa.Invoice)) *kassa.Invoice {
		t.Helper()
		next := *prev
		change(&next)
		commit(t, h.db, func(batch kassa.Batch) { batch.PutInvoice(&next, prev, 2) })
		return &next
	}

	// A payment that leaves the deadline as it was keeps one entry.
	a = update(a, func(inv *kassa.Invoice) {
		inv.Payments = []kassa.Payment{{ID: "p", Amount: 1, ReceivedAt: at(time.Minute)}}
	})
	checkOpen(t, h, "partial payment", deadline{"inv_b", at(5 * time.Minute)}, deadline{"inv_a", at(15 * time.Minute)}, deadline{"inv_processing", at(time.Hour)})

	// New → Processing waits for the monitoring deadline instead.
	a = update(a, func(inv *kassa.Invoice) {
		inv.Status, inv.MonitorUntil = kassa.InvoiceProcessing, at(2*time.Hour)
	})
	checkOpen(t, h, "a processing", deadline{"inv_b", at(5 * time.Minute)}, deadline{"inv_processing", at(time.Hour)}, deadline{"inv_a", at(2 * time.Hour)})

	// New → Expired keeps watching the address until MonitorUntil.
	b = update(b, func(inv *kassa.Invoice) {
		inv.Status, inv.MonitorUntil = kassa.InvoiceExpired, at(30*time.Minute)
	})
	checkOpen(t, h, "b expired", deadline{"inv_b", at(30 * time.Minute)}, deadline{"inv_processing", at(time.Hour)}, deadline{"inv_a", at(2 * time.Hour)})

	// Deadlines within one millisecond of each other share a key.
	b = update(b, func(inv *kassa.Invoice) { inv.MonitorUntil = inv.MonitorUntil.Add(time.Microsecond) })
	checkOpen(t, h, "b moved by a microsecond", deadline{"inv_b", at(30 * time.Minute)}, deadline{"inv_processing", at(time.Hour)}, deadline{"inv_a", at(2 * time.Hour)})

	// Settling, monitoring done and invalid leave the index.
	update(processing, func(inv *kassa.Invoice) { inv.Status = kassa.InvoiceSettled })
	update(b, func(inv *kassa.Invoice) { inv.MonitoringDone = true })
	checkOpen(t, h, "settled and done", deadline{"inv_a", at(2 * time.Hour)})
	update(a, func(inv *kassa.Invoice) { inv.Status = kassa.InvoiceInvalid })
	checkOpen(t, h, "invalid")

	h.reopen()
	checkOpen(t, h, "after reopen")

	stop := errors.New("stop")
	commit(t, h.db, func(batch kassa.Batch) {
		batch.PutInvoice(kassatest.NewInvoice("inv_c", "s1", t0), nil, 1)
		batch.PutInvoice(kassatest.NewInvoice("inv_d", "s1", t0), nil, 1)
	})
	calls := 0
	if err := h.db.OpenInvoices(t.Context(), func(string, string, time.Time) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("OpenInvoices with failing fn: %v after %d calls", err, calls)
	}
}

func testStores(t *testing.T, h *harness) {
	ctx := t.Context()
	s1 := kassatest.NewStore("s1", "key_one", "key_two")
	s10 := kassatest.NewStore("s10", "key_ten")
	s := kassatest.NewStore("s")
	commit(t, h.db, func(b kassa.Batch) {
		b.PutStore(s1, 1)
		b.PutStore(s10, 1)
	})
	commit(t, h.db, func(b kassa.Batch) { b.PutStore(s, 1) })
	for key, want := range map[string]string{"key_one": "s1", "key_two": "s1", "key_ten": "s10"} {
		st, err := h.db.StoreByAPIKey(ctx, key)
		if err != nil || st.ID != want {
			t.Errorf("StoreByAPIKey(%s) = %v, %v; want %s", key, st, err, want)
		}
	}
	for _, key := range []string{"key_", "key_one ", "", "s1"} {
		_, err := h.db.StoreByAPIKey(ctx, key)
		wantCode(t, "StoreByAPIKey("+key+")", err, kassa.NotFound)
	}

	// A new key works and the store's new state is what every read sees.
	s1v2 := *s1
	s1v2.Name = "Renamed"
	s1v2.APIKeys = append(slices.Clone(s1.APIKeys), kassa.APIKey{ID: "key_2", Key: "key_three", CreatedAt: t0})
	commit(t, h.db, func(b kassa.Batch) { b.PutStore(&s1v2, 2) })
	st, err := h.db.StoreByAPIKey(ctx, "key_three")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "store by new key", st, &s1v2)

	var got []*kassa.Store
	if err := h.db.Stores(ctx, func(st *kassa.Store) error { got = append(got, st); return nil }); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "Stores", got, []*kassa.Store{s, &s1v2, s10})

	stop := errors.New("stop")
	calls := 0
	if err := h.db.Stores(ctx, func(*kassa.Store) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("Stores with failing fn: %v after %d calls", err, calls)
	}
}

func testPaymentRequests(t *testing.T, h *harness) {
	ctx := t.Context()
	pr := func(id, store string, created time.Time) *kassa.PaymentRequest {
		return &kassa.PaymentRequest{ID: id, StoreID: store, Title: "Pay " + id, Currency: kassa.EUR, ExpiryDate: created.Add(kassa.DefaultPaymentRequestExpiry), CreatedAt: created, UpdatedAt: created}
	}
	var want []*kassa.PaymentRequest
	commit(t, h.db, func(b kassa.Batch) {
		for i := range 5 {
			p := pr(fmt.Sprintf("pr_%d", i), "s1", t0.Add(time.Duration(i)*time.Minute))
			b.PutPaymentRequest(p)
			want = append(want, p)
			b.PutPaymentRequest(pr(fmt.Sprintf("pr_s10_%d", i), "s10", p.CreatedAt))
		}
	})
	slices.Reverse(want)
	list := func() []*kassa.PaymentRequest {
		t.Helper()
		var got []*kassa.PaymentRequest
		if err := h.db.PaymentRequests(ctx, "s1", func(p *kassa.PaymentRequest) error { got = append(got, p); return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	sameJSON(t, "PaymentRequests", list(), want)
	got, err := h.db.PaymentRequest(ctx, "pr_2")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "PaymentRequest", got, want[2])

	// The invoice actor marks a pay link paid without its document; a
	// later rewrite of the document by the store actor keeps the mark.
	commit(t, h.db, func(b kassa.Batch) { b.MarkPaymentRequestPaid("pr_2", "inv_paid") })
	updated := *want[2]
	updated.Title = "Renamed"
	commit(t, h.db, func(b kassa.Batch) { b.PutPaymentRequest(&updated) })
	got, err = h.db.PaymentRequest(ctx, "pr_2")
	if err != nil || got.PaidInvoiceID != "inv_paid" || got.Title != "Renamed" {
		t.Errorf("PaymentRequest after payment = %+v, %v", got, err)
	}
	if got.Status(t0) != kassa.PaymentRequestCompleted {
		t.Errorf("status %s, want %s", got.Status(t0), kassa.PaymentRequestCompleted)
	}
	listed := list()
	if len(listed) != 5 {
		t.Fatalf("PaymentRequests lists %d after update, want 5", len(listed))
	}
	for _, p := range listed {
		if paid := p.ID == "pr_2"; paid != (p.PaidInvoiceID == "inv_paid") {
			t.Errorf("listed %s with PaidInvoiceID %q", p.ID, p.PaidInvoiceID)
		}
	}
	if other, _ := h.db.PaymentRequest(ctx, "pr_s10_2"); other == nil || other.PaidInvoiceID != "" {
		t.Errorf("neighbour pay link = %+v", other)
	}

	stop := errors.New("stop")
	calls := 0
	if err := h.db.PaymentRequests(ctx, "s1", func(*kassa.PaymentRequest) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("PaymentRequests with failing fn: %v after %d calls", err, calls)
	}
}
