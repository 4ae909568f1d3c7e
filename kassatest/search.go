package kassatest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/kassapay/kassa"
)

// search returns the ids SearchInvoices finds and the next cursor.
func search(t *testing.T, s Storage, store string, q kassa.SearchQuery) (ids []string, next string) {
	t.Helper()
	next, err := s.Reader.SearchInvoices(t.Context(), store, q, func(inv *kassa.Invoice) error {
		if inv.StoreID != store {
			t.Errorf("SearchInvoices(%s, %+v) gave %s of store %s", store, q, inv.ID, inv.StoreID)
		}
		ids = append(ids, inv.ID)
		return nil
	})
	if err != nil {
		t.Fatalf("SearchInvoices(%s, %+v): %v", store, q, err)
	}
	return ids, next
}

func wantSearch(t *testing.T, s Storage, store string, q kassa.SearchQuery, want ...string) {
	t.Helper()
	if ids, _ := search(t, s, store, q); !slices.Equal(ids, want) {
		t.Errorf("SearchInvoices(%s, %+v) = %v, want %v", store, q, ids, want)
	}
}

// readerSearchFolded: order ids, e-mails and ids are found by a prefix
// in any case, or whole, within the store only, each invoice once.
func readerSearchFolded(t *testing.T, s Storage) {
	ord := NewInvoice("inv_ord", "s1", Epoch)
	ord.OrderID, ord.BuyerEmail = "ord-INR-1003", "Buyer@Example.COM"
	meta := NewInvoice("inv_meta", "s1", Epoch.Add(time.Minute))
	meta.Metadata = json.RawMessage(`{"orderId":1004}`)
	umlaut := NewInvoice("inv_umlaut", "s1", Epoch.Add(2*time.Minute))
	umlaut.BuyerEmail = "MÜLLER@example.de"
	kelvin := NewInvoice("inv_kelvin", "s1", Epoch.Add(3*time.Minute))
	kelvin.OrderID = "\u212a-1" // Kelvin sign: folds with k
	other := NewInvoice("inv_other", "s2", Epoch.Add(time.Hour))
	other.OrderID, other.BuyerEmail = "ORD-INR-1003", "buyer@example.com"
	Commit(t, s.Journal, func(b kassa.Batch) {
		for _, inv := range []*kassa.Invoice{ord, meta, umlaut, kelvin, other} {
			b.PutInvoice(inv, nil, 1)
		}
	})
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "ORD-", In: kassa.SearchOrderID}, "inv_ord")
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "ord-inr-1003", In: kassa.SearchOrderID, Exact: true}, "inv_ord")
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "ORD-INR-100", In: kassa.SearchOrderID, Exact: true})
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "buyer@EXAMPLE", In: kassa.SearchEmail}, "inv_ord")
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "buyer", In: kassa.SearchOrderID})
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "1004", In: kassa.SearchOrderID, Exact: true}, "inv_meta")
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "müller@", In: kassa.SearchEmail}, "inv_umlaut")
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "K-", In: kassa.SearchOrderID}, "inv_kelvin")
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "INV_U", In: kassa.SearchID}, "inv_umlaut")
	// Every field at once: newest first, each invoice once.
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "inv_"}, "inv_kelvin", "inv_umlaut", "inv_meta", "inv_ord")
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "b"}, "inv_ord")
	// Another store's invoices are never found.
	wantSearch(t, s, "s2", kassa.SearchQuery{Text: "ord-inr-1003", Exact: true}, "inv_other")
	wantSearch(t, s, "s2", kassa.SearchQuery{Text: "inv_"}, "inv_other")
	wantSearch(t, s, "s3", kassa.SearchQuery{Text: "inv_"})

	_, err := s.Reader.SearchInvoices(t.Context(), "s1", kassa.SearchQuery{}, func(*kassa.Invoice) error { return nil })
	wantCode(t, "SearchInvoices without text", err, kassa.Invalid)
	_, err = s.Reader.SearchInvoices(t.Context(), "s1", kassa.SearchQuery{Text: "x", ListQuery: kassa.ListQuery{Cursor: "not a cursor!"}},
		func(*kassa.Invoice) error { return nil })
	wantCode(t, "SearchInvoices with a bad cursor", err, kassa.Invalid)
}

// readerSearchTermChanges: a write that changes an invoice's order id or
// e-mail leaves no entry of the old one.
func readerSearchTermChanges(t *testing.T, s Storage) {
	inv := NewInvoice("inv_1", "s1", Epoch)
	inv.OrderID, inv.BuyerEmail = "A-1", "old@example.com"
	Commit(t, s.Journal, func(b kassa.Batch) { b.PutInvoice(inv, nil, 1) })
	changed := *inv
	changed.OrderID, changed.BuyerEmail, changed.Status = "B-2", "", kassa.InvoiceExpired
	Commit(t, s.Journal, func(b kassa.Batch) { b.PutInvoice(&changed, inv, 2) })
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "a-1"})
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "old@"})
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "b-2", Exact: true}, "inv_1")
	// A write that changes no term keeps them.
	settled := changed
	settled.Status = kassa.InvoiceSettled
	Commit(t, s.Journal, func(b kassa.Batch) { b.PutInvoice(&settled, &changed, 3) })
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "B-2", In: kassa.SearchOrderID}, "inv_1")
	if ids, _ := search(t, s, "s1", kassa.SearchQuery{Text: "inv_1", Exact: true}); len(ids) != 1 {
		t.Errorf("search by id after updates = %v", ids)
	}
	inv2, err := s.Reader.Invoice(t.Context(), "inv_1")
	if err != nil || inv2.Status != kassa.InvoiceSettled {
		t.Errorf("invoice after updates = %v, %v", inv2, err)
	}
}

// readerSearchPages: a search pages with a cursor, within dates, newest
// first, through matches of many terms.
func readerSearchPages(t *testing.T, s Storage) {
	var want []string
	Commit(t, s.Journal, func(b kassa.Batch) {
		for i := range 7 {
			inv := NewInvoice("inv_"+string(rune('a'+i)), "s1", Epoch.Add(time.Duration(i)*time.Hour))
			inv.OrderID = "ORD-" + string(rune('g'-i)) // terms in the opposite order of time
			b.PutInvoice(inv, nil, 1)
			want = append([]string{inv.ID}, want...)
			miss := NewInvoice("inv_miss"+string(rune('a'+i)), "s1", Epoch.Add(time.Duration(i)*time.Hour+time.Minute))
			miss.OrderID = "other-" + string(rune('a'+i))
			b.PutInvoice(miss, nil, 1)
		}
		same := NewInvoice("inv_same", "s1", Epoch.Add(30*time.Minute))
		same.OrderID = "dup"
		b.PutInvoice(same, nil, 1)
		same2 := NewInvoice("inv_same2", "s1", Epoch.Add(90*time.Minute))
		same2.OrderID = "DUP"
		b.PutInvoice(same2, nil, 1)
	})
	for _, limit := range []int{1, 2, 3, 7} {
		var paged []string
		q := kassa.SearchQuery{Text: "ord-", In: kassa.SearchOrderID, ListQuery: kassa.ListQuery{Limit: limit}}
		for range 10 {
			ids, next := search(t, s, "s1", q)
			if len(ids) > limit {
				t.Fatalf("page of limit %d = %v", limit, ids)
			}
			paged = append(paged, ids...)
			if next == "" {
				break
			}
			q.Cursor = next
		}
		if !slices.Equal(paged, want) {
			t.Errorf("pages of %d = %v, want %v", limit, paged, want)
		}
	}
	q := kassa.SearchQuery{Text: "dup", Exact: true, ListQuery: kassa.ListQuery{Limit: 1}}
	ids, next := search(t, s, "s1", q)
	q.Cursor = next
	ids2, next2 := search(t, s, "s1", q)
	if !slices.Equal(ids, []string{"inv_same2"}) || !slices.Equal(ids2, []string{"inv_same"}) || next2 != "" {
		t.Errorf("exact pages of 1 = %v then %v (next %q)", ids, ids2, next2)
	}
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "ord-", ListQuery: kassa.ListQuery{From: Epoch.Add(time.Hour), To: Epoch.Add(3 * time.Hour)}},
		"inv_d", "inv_c", "inv_b")
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "dup", Exact: true, ListQuery: kassa.ListQuery{From: Epoch.Add(time.Hour)}}, "inv_same2")
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "dup", Exact: true, ListQuery: kassa.ListQuery{To: Epoch.Add(time.Hour)}}, "inv_same")
}

// readerSearchSameWrite: the index is written by the invoice's own
// batch: nothing is found before it commits, everything after.
func readerSearchSameWrite(t *testing.T, s Storage) {
	inv := NewInvoice("inv_1", "s1", Epoch)
	inv.OrderID = "A-1"
	b := s.Journal.NewBatch()
	b.PutInvoice(inv, nil, 1)
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "a-1"})
	if err := s.Journal.Commit(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	wantSearch(t, s, "s1", kassa.SearchQuery{Text: "a-1"}, "inv_1")
}
