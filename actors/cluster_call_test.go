package actors

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/protos"
)

// createInvoiceCall is a forwarded CreateInvoice call for store as the
// forwarding node sends it, with request id id.
func createInvoiceCall(t *testing.T, store, id string) *protos.StoreCall {
	t.Helper()
	data, err := json.Marshal(callArgs{StoreID: store, Invoice: &kassa.InvoiceRequest{
		Amount: decimal.NewFromInt(5000), HasAmount: true, Currency: kassa.SATS,
	}})
	if err != nil {
		t.Fatal(err)
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(data, &args); err != nil {
		t.Fatal(err)
	}
	args["requestId"], _ = json.Marshal(id)
	data, _ = json.Marshal(args)
	return &protos.StoreCall{Method: "CreateInvoice", StoreId: store, Args: data}
}

func storeInvoices(t *testing.T, h *harness, store string) []string {
	t.Helper()
	var ids []string
	if _, err := h.db.Invoices(context.Background(), store, kassa.ListQuery{}, func(inv *kassa.Invoice) error {
		ids = append(ids, inv.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestForwardedCallDeliveredTwice: protoactor-go retries a cluster
// request that timed out, so the store's node can get one forwarded
// CreateInvoice twice: after the first answered, or while it still
// runs. Each repeat of the request id is answered with the first call's
// reply, and one invoice is created; another request id creates another.
// Before, each delivery of the call created an invoice, one of them
// never acknowledged.
func TestForwardedCallDeliveredTwice(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Now()))
	st := h.createStore("0", "0")

	first := h.sys.serveCall(createInvoiceCall(t, st.ID, "req_1"))
	again := h.sys.serveCall(createInvoiceCall(t, st.ID, "req_1"))
	if first.Code != "" || string(again.Value) != string(first.Value) {
		t.Fatalf("the repeated call answered %s %s, the first %s %s; want the first's reply", again.Code, again.Value, first.Code, first.Value)
	}
	if ids := storeInvoices(t, h, st.ID); len(ids) != 1 {
		t.Fatalf("one call delivered twice created invoices %v, want one", ids)
	}

	// Both deliveries at once: the second waits for the first.
	var wg sync.WaitGroup
	replies := make([]*protos.StoreCallReply, 2)
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = h.sys.serveCall(createInvoiceCall(t, st.ID, "req_2"))
		}()
	}
	wg.Wait()
	if replies[0].Code != "" || string(replies[0].Value) != string(replies[1].Value) {
		t.Fatalf("concurrent deliveries answered %s %s and %s %s; want one reply", replies[0].Code, replies[0].Value, replies[1].Code, replies[1].Value)
	}
	if ids := storeInvoices(t, h, st.ID); len(ids) != 2 {
		t.Fatalf("two requests, each delivered twice, created invoices %v, want two", ids)
	}
}

// TestCallMemoForgets: a request id's reply is kept for callMemoTTL;
// after that a repeat runs again, and the memo does not grow.
func TestCallMemoForgets(t *testing.T) {
	var m callMemo
	runs := 0
	call := func() *protos.StoreCallReply { runs++; return &protos.StoreCallReply{} }
	t0 := time.Now()
	m.once(t.Context(), "a", t0, call)
	m.once(t.Context(), "a", t0.Add(callMemoTTL-time.Second), call)
	if runs != 1 {
		t.Fatalf("ran %d times within the TTL, want once", runs)
	}
	m.once(t.Context(), "b", t0.Add(callMemoTTL), call)
	m.once(t.Context(), "a", t0.Add(callMemoTTL), call)
	if runs != 3 || len(m.entries) != 2 || len(m.order) != 2 {
		t.Fatalf("after the TTL: %d runs, %d entries, %d in order; want 3, 2, 2", runs, len(m.entries), len(m.order))
	}
}
