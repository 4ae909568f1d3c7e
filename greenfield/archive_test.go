package greenfield_test

import (
	"net/http"
	"slices"
	"testing"
)

// TestArchiveInvoice: DELETE …/invoices/{id} archives the invoice as
// BTCPay does: it leaves the list unless includeArchived=true, is still
// read by id with archived true, and still settles; archiving again is
// 200; another store's invoice is 404.
func TestArchiveInvoice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	invoices := base + "/api/v1/stores/store_a/invoices"
	kept := decode[invoiceData](t, e.do("POST", invoices, createBody))
	archived := decode[invoiceData](t, e.do("POST", invoices, createBody))

	expectStatus(t, e.do("DELETE", invoices+"/"+archived.ID, ""), http.StatusOK)
	list := func(query string) map[string]bool {
		t.Helper()
		w := e.do("GET", invoices+query, "")
		expectStatus(t, w, http.StatusOK)
		out := map[string]bool{}
		for _, inv := range decode[[]invoiceData](t, w) {
			out[inv.ID] = inv.Archived != nil && *inv.Archived
		}
		return out
	}
	if got := list(""); len(got) != 1 || got[kept.ID] {
		t.Errorf("list: %v, want only %s, not archived", got, kept.ID)
	}
	if got := list("?includeArchived=false"); len(got) != 1 {
		t.Errorf("includeArchived=false: %v", got)
	}
	if got := list("?includeArchived=true"); len(got) != 2 || got[kept.ID] || !got[archived.ID] {
		t.Errorf("includeArchived=true: %v, want both, %s archived", got, archived.ID)
	}
	expectValidation(t, e.do("GET", invoices+"?includeArchived=maybe", ""), "includeArchived")

	w := e.do("GET", invoices+"/"+archived.ID, "")
	expectStatus(t, w, http.StatusOK)
	if got := decode[invoiceData](t, w); got.Archived == nil || !*got.Archived || got.Status != "New" {
		t.Errorf("archived invoice: archived %v, status %s", got.Archived, got.Status)
	}
	stored, err := e.db.Invoice(t.Context(), archived.ID)
	if err != nil || !stored.Archived {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	expectStatus(t, e.do("DELETE", invoices+"/"+archived.ID, ""), http.StatusOK)

	// Still paid like any other.
	e.payOnchain(archived.ID, "ab02ab02ab02ab02ab02ab02ab02ab02ab02ab02ab02ab02ab02ab02ab02ab02", stored.Amount, 1)
	if got := decode[invoiceData](t, e.do("GET", invoices+"/"+archived.ID, "")); got.Status != "Settled" || !*got.Archived {
		t.Errorf("after its payment: %s, archived %v", got.Status, *got.Archived)
	}

	other := decode[invoiceData](t, e.do("POST", base+"/api/v1/stores/store_b/invoices", `{"amount":"1.00"}`, keyB))
	expectAPIError(t, e.do("DELETE", invoices+"/"+other.ID, ""), http.StatusNotFound, "invoice-not-found")
	if s, _ := e.db.Invoice(t.Context(), other.ID); s.Archived {
		t.Error("another store's invoice was archived")
	}
	if got := list("?includeArchived=true&status=Settled"); !slices.Equal(keys(got), []string{archived.ID}) {
		t.Errorf("settled, archived included: %v", got)
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
