package actors

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/proto"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/protos"
)

// createInvoiceCall is a forwarded CreateInvoice call for store as the
// forwarding node sends it, with request id id.
func createInvoiceCall(t *testing.T, store, id string) *protos.StoreCall {
	t.Helper()
	return &protos.StoreCall{StoreId: store, RequestId: id, Call: &protos.StoreCall_CreateInvoice{CreateInvoice: &protos.CreateInvoiceCall{
		Invoice: toDoc[*protos.InvoiceRequestDoc](&kassa.InvoiceRequest{Amount: decimal.NewFromInt(5000), HasAmount: true, Currency: kassa.SATS}),
	}}}
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

	first := h.sys.Cluster.serveCall(createInvoiceCall(t, st.ID, "req_1"))
	again := h.sys.Cluster.serveCall(createInvoiceCall(t, st.ID, "req_1"))
	if first.Code != "" || !proto.Equal(again, first) {
		t.Fatalf("the repeated call answered %v, the first %v; want the first's reply", again, first)
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
			replies[i] = h.sys.Cluster.serveCall(createInvoiceCall(t, st.ID, "req_2"))
		}()
	}
	wg.Wait()
	if replies[0].Code != "" || !proto.Equal(replies[0], replies[1]) {
		t.Fatalf("concurrent deliveries answered %v and %v; want one reply", replies[0], replies[1])
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

// TestRoutedCallRunHereKeepsItsBudget: a call this node sent to a node
// that left, and now runs itself (sendCall), runs within what is left of
// the call's budget, not a new one: a budget already spent answers that
// the request timed out and reaches no actor; a call another node
// routed here (no budget of its sender's) gets this node's request
// timeout and runs.
func TestRoutedCallRunHereKeepsItsBudget(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Now()))
	st := h.createStore("0", "0")
	spent, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if rep := h.sys.Cluster.serve(spent, forwardedTopUp(st.ID, 100, "spent")); rep.Code != kassa.Unavailable {
		t.Fatalf("a call whose budget is spent answered %v, want %s", rep, kassa.Unavailable)
	}
	if rep := h.sys.Cluster.serveCall(forwardedTopUp(st.ID, 100, "routed")); rep.Code != "" || rep.GetTransaction() == nil {
		t.Fatalf("a routed call answered %v, want its top-up", rep)
	}
	balance, err := h.db.Balance(context.Background(), st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if balance != 100 {
		t.Errorf("balance %d after one top-up of 100 and one whose budget was spent", balance)
	}
}
