package actors

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/persistence/postgres"
)

// TestExpelledNodeCreatesNothing: a node stalled past its etcd lease; the
// node that saw it leave expelled it from the membership fence before
// taking its stores over. Woken, the stalled node still runs the
// store's actor and is asked for a new invoice (a new stream, which the
// journal's sequence check cannot fence): its commit is refused, it
// answers 503, and no invoice exists; the same for a top-up, a webhook,
// an API key and a pay link. The new owner creates as before. Before,
// only writes to existing streams were refused, and the stalled node
// created an invoice for a request already answered 503.
func TestExpelledNodeCreatesNothing(t *testing.T) {
	clock := kassatest.NewTestClock(time.Now())
	pgA, open := openPG(t, clock)
	pgB := open()
	stale := newHarnessWith(t, openMem(t), clock, func(c *Config) { c.Journal, c.Reader = pgA, pgA })
	owner := newHarnessWith(t, openMem(t), clock, func(c *Config) { c.Journal, c.Reader = pgB, pgB })
	for _, h := range []*harness{stale, owner} {
		if err := h.sys.Cluster.joinFence(h.sys.Runtime.cfg.Journal.(interface{ Members() postgres.Members }).Members()); err != nil {
			t.Fatal(err)
		}
	}
	st := stale.createStore("0", "0")
	ctx := context.Background()
	r := &kassa.InvoiceRequest{Amount: decimal.NewFromInt(5000), HasAmount: true, Currency: kassa.SATS}
	if _, err := stale.sys.Service.CreateInvoice(ctx, st.ID, r); err != nil {
		t.Fatalf("a member's create: %v", err)
	}
	if err := owner.sys.Cluster.fence.Expel(ctx, stale.sys.Cluster.MemberID()); err != nil {
		t.Fatal(err)
	}
	calls := createCalls()
	for _, c := range calls {
		before := c.count(t, pgB, st.ID)
		rep := stale.sys.Cluster.serveCall(c.call(t, st.ID, "req_stale_"+c.method))
		if rep.Code != kassa.Unavailable {
			t.Errorf("the expelled node's %s answered %q %s, want unavailable", c.method, rep.Code, rep.Message)
		}
		if n := c.count(t, pgB, st.ID); n != before {
			t.Errorf("the expelled node's %s made one (%d, was %d)", c.method, n, before)
		}
		// The new owner creates (the positive control).
		if rep := owner.sys.Cluster.serveCall(c.call(t, st.ID, "req_owner_"+c.method)); rep.Code != "" {
			t.Errorf("the owner's %s: %s %s", c.method, rep.Code, rep.Message)
		}
		if n := c.count(t, pgB, st.ID); n != before+1 {
			t.Errorf("the owner's %s: %d, want %d", c.method, n, before+1)
		}
	}
}

// TestExpelledAnswersAtOnce: once a node knows it lost its membership
// (Expelled), its store actors are gone at once and every call about a
// store answers 503, before any commit is tried.
func TestExpelledAnswersAtOnce(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Now()))
	st := h.createStore("0", "0")
	if !runsStore(h, st.ID) {
		t.Fatal("the store's actor is not running (the control)")
	}
	h.sys.Cluster.Expelled()
	if runsStore(h, st.ID) {
		t.Error("the store's actor still runs after Expelled")
	}
	_, err := h.sys.Service.CreateInvoice(context.Background(), st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(5000), HasAmount: true, Currency: kassa.SATS})
	if kassa.ErrorCode(err) != kassa.Unavailable {
		t.Fatalf("a create after Expelled: %v, want unavailable", err)
	}
	if n := createCalls()[0].count(t, h.db, st.ID); n != 0 {
		t.Errorf("%d invoices after Expelled, want 0", n)
	}
}

// TestSuspendAndResume: a node that lost contact with etcd stops serving
// as owner (Suspend): its store actors stop, a create answers 503 and
// makes nothing, health says why; once etcd answers (Resume) it creates
// again. Expelled is for good: Resume does not undo it.
func TestSuspendAndResume(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Now()))
	st := h.createStore("0", "0")
	r := &kassa.InvoiceRequest{Amount: decimal.NewFromInt(5000), HasAmount: true, Currency: kassa.SATS}
	ctx := context.Background()
	if !h.sys.Cluster.Suspend() {
		t.Fatal("Suspend of a serving node said it was halted already")
	}
	if ok, why := h.sys.Cluster.Serving(); ok || why == "" {
		t.Errorf("Serving after Suspend = %v %q", ok, why)
	}
	if runsStore(h, st.ID) {
		t.Error("the store's actor still runs after Suspend")
	}
	if _, err := h.sys.Service.CreateInvoice(ctx, st.ID, r); kassa.ErrorCode(err) != kassa.Unavailable {
		t.Fatalf("a create while suspended: %v, want unavailable", err)
	}
	if n := createCalls()[0].count(t, h.db, st.ID); n != 0 {
		t.Fatalf("%d invoices made while suspended", n)
	}
	if !h.sys.Cluster.Resume() {
		t.Fatal("Resume of a suspended node said it was not suspended")
	}
	if _, err := h.sys.Service.CreateInvoice(ctx, st.ID, r); err != nil {
		t.Fatalf("a create after Resume: %v", err)
	}
	h.sys.Cluster.Expelled()
	if h.sys.Cluster.Resume() {
		t.Error("Resume undid Expelled")
	}
	if _, err := h.sys.Service.CreateInvoice(ctx, st.ID, r); kassa.ErrorCode(err) != kassa.Unavailable {
		t.Fatalf("a create after Expelled and Resume: %v, want unavailable", err)
	}
}
