package actors

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/protos"
)

// TestCreateWritesTheInvoiceOnce: the created event holds no copy of the
// invoice document (the snapshot of the same batch does), and an invoice
// loaded after a restart is the one created (issue 23).
func TestCreateWritesTheInvoiceOnce(t *testing.T) {
	dir := t.TempDir()
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db := openDir(t, dir)
	h := newHarness(t, db, clock)
	h.createStore("0", "0")
	inv := h.invoice("1000", kassa.SATS)
	ctx := context.Background()
	var events [][]byte
	err := db.Events(ctx, kassa.Stream{Kind: kassa.KindInvoice, ID: inv.ID}, 0, func(_ uint64, data []byte) error {
		events = append(events, data)
		return nil
	})
	if err != nil || len(events) != 1 {
		t.Fatalf("journal of a new invoice: %d events, %v; want 1", len(events), err)
	}
	var ev protos.InvoiceEvent
	if err := proto.Unmarshal(events[0], &ev); err != nil {
		t.Fatal(err)
	}
	if c := ev.GetCreated(); c == nil || len(c.Invoice) != 0 || len(events[0]) > 100 {
		t.Fatalf("created event (%d bytes) = %v; want a created event without the invoice document", len(events[0]), &ev)
	}
	snap, seq, err := db.InvoiceSnapshot(ctx, inv.ID)
	if err != nil || seq != 1 {
		t.Fatalf("snapshot: seq %d, %v; want 1", seq, err)
	}
	sameInvoice(t, "snapshot", snap, inv)

	db2 := reopen(t, h, db, dir)
	defer db2.Close()
	h2 := newHarness(t, db2, clock)
	h2.pay(inv, 1000, 1, "aa")
	got := h2.get(inv.ID)
	if got.Status != kassa.InvoiceSettled || got.OrderID != inv.OrderID || got.OnchainAddress != inv.OnchainAddress || !got.CreatedAt.Equal(inv.CreatedAt) {
		t.Fatalf("invoice after a restart and a payment: %+v", got)
	}
}

// journalV1 is testdata/journal-v1.json: a store and two invoices as
// Kassa wrote them before issue 23, each invoice's created event holding
// the invoice document. One invoice is New; the other has a payment of
// 10,000 of its 40,000 sat in the mempool.
type journalV1 struct {
	Events []struct {
		Kind string `json:"kind"`
		ID   string `json:"id"`
		Seq  uint64 `json:"seq"`
		Data []byte `json:"data"`
	} `json:"events"`
	Stores []struct {
		Seq uint64      `json:"seq"`
		Doc kassa.Store `json:"doc"`
	} `json:"stores"`
	Invoices []struct {
		Seq uint64        `json:"seq"`
		Doc kassa.Invoice `json:"doc"`
	} `json:"invoices"`
}

// journalV1At is the time the fixture was written at, on a test clock.
var journalV1At = time.Date(2026, 1, 1, 0, 2, 0, 0, time.UTC)

// writeJournalV1 writes the fixture into j. With behind, the invoice
// snapshots say they include no event, so that loading replays each
// journal from its created event.
func writeJournalV1(t *testing.T, j kassa.Journal, behind bool) *journalV1 {
	t.Helper()
	data, err := os.ReadFile("testdata/journal-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var f journalV1
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	b := j.NewBatch()
	for _, e := range f.Events {
		b.AppendEvent(kassa.Stream{Kind: e.Kind, ID: e.ID}, e.Seq, e.Data)
	}
	for _, s := range f.Stores {
		b.PutStore(&s.Doc, s.Seq)
	}
	for _, s := range f.Invoices {
		seq := s.Seq
		if behind {
			seq = 0
		}
		b.PutInvoice(&s.Doc, nil, seq)
	}
	if err := j.Commit(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	return &f
}

// settleJournalV1 pays both invoices of the fixture in full through sys
// and returns them as reader has them then.
func settleJournalV1(t *testing.T, sys *System, reader kassa.Reader, f *journalV1) []*kassa.Invoice {
	t.Helper()
	ctx := context.Background()
	open, paying := f.Invoices[0].Doc, f.Invoices[1].Doc
	for _, ev := range []kassa.ChainEvent{
		{Address: open.OnchainAddress, Payment: kassa.Payment{ID: "bb:0", TxID: "bb", Amount: open.Amount, Destination: open.OnchainAddress, Confirmations: 1}},
		{Address: paying.OnchainAddress, Payment: kassa.Payment{ID: "aa:0", TxID: "aa", Amount: 10_000, Destination: paying.OnchainAddress, Confirmations: 1}},
		{Address: paying.OnchainAddress, Payment: kassa.Payment{ID: "cc:0", TxID: "cc", Amount: paying.Amount - 10_000, Destination: paying.OnchainAddress, Confirmations: 1}},
	} {
		if err := sys.Service.HandleChainEvent(ctx, ev); err != nil {
			t.Fatalf("chain event %s: %v", ev.Payment.ID, err)
		}
	}
	var out []*kassa.Invoice
	for _, id := range []string{open.ID, paying.ID} {
		inv, err := reader.Invoice(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if inv.Status != kassa.InvoiceSettled || len(inv.Payments) == 0 {
			t.Fatalf("invoice %s of the old journal after its payments: %s, %d payments", id, inv.Status, len(inv.Payments))
		}
		out = append(out, inv)
	}
	if n := len(out[1].Payments); n != 2 {
		t.Fatalf("the partly paid invoice of the old journal has %d payments after the second, want 2", n)
	}
	for _, st := range sys.Runtime.ActorStats() {
		if st.Restarts != 0 {
			t.Fatalf("%d %s actors restarted after a panic", st.Restarts, st.Kind)
		}
	}
	return out
}

// TestJournalV1Loads: invoices journaled before issue 23 (created events
// holding the document) load on Pebble and PostgreSQL, from their
// snapshots and, with the snapshots behind, by replaying the old
// created events; either way the same payments give the same invoices.
func TestJournalV1Loads(t *testing.T) {
	run := func(t *testing.T, j kassa.Journal, reader kassa.Reader, behind bool) []*kassa.Invoice {
		clock := kassatest.NewTestClock(journalV1At)
		f := writeJournalV1(t, j, behind)
		h := newHarnessWith(t, openMem(t), clock, func(c *Config) { c.Journal, c.Reader = j, reader })
		return settleJournalV1(t, h.sys, reader, f)
	}
	mem := openMem(t)
	want := run(t, mem, mem, false)
	check := func(name string, got []*kassa.Invoice) {
		t.Helper()
		for i := range want {
			sameInvoice(t, name, got[i], want[i])
		}
	}
	behind := openMem(t)
	check("Pebble, replayed from the old created events", run(t, behind, behind, true))
	pgdb, _ := openPG(t, kassatest.NewTestClock(journalV1At))
	check("PostgreSQL, from the snapshots", run(t, pgdb, pgdb, false))
	pgBehind, _ := openPG(t, kassatest.NewTestClock(journalV1At))
	check("PostgreSQL, replayed from the old created events", run(t, pgBehind, pgBehind, true))
}

// hideSnapshotOnce answers NotFound to the first snapshot read of an
// invoice, as a node does that read before another node's create
// committed and the journal after.
type hideSnapshotOnce struct {
	kassa.Journal
	mu     sync.Mutex
	hidden map[string]bool
}

func (j *hideSnapshotOnce) InvoiceSnapshot(ctx context.Context, id string) (*kassa.Invoice, uint64, error) {
	if j.hide(id) {
		return nil, 0, kassa.Errorf(kassa.NotFound, "invoice not found")
	}
	return j.Journal.InvoiceSnapshot(ctx, id)
}

// hide reports whether this read of id is the one to hide.
func (j *hideSnapshotOnce) hide(id string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	first := !j.hidden[id]
	j.hidden[id] = true
	return first
}

// TestLoadReadsTheSnapshotOfACreateItMissed: an activation that read no
// snapshot but then a created event (without the document) reads the
// snapshot again instead of failing.
func TestLoadReadsTheSnapshotOfACreateItMissed(t *testing.T) {
	dir := t.TempDir()
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db := openDir(t, dir)
	h := newHarness(t, db, clock)
	h.createStore("0", "0")
	inv := h.invoice("1000", kassa.SATS)
	db2 := reopen(t, h, db, dir)
	defer db2.Close()
	j := &hideSnapshotOnce{Journal: db2, hidden: map[string]bool{}}
	h2 := newHarnessWith(t, db2, clock, func(c *Config) { c.Journal = j })
	h2.pay(inv, 1000, 1, "aa")
	if got := h2.get(inv.ID); got.Status != kassa.InvoiceSettled {
		t.Fatalf("status = %s, want Settled", got.Status)
	}
	if j.hide(inv.ID) {
		t.Fatal("the snapshot read was not hidden: the test did not test the case")
	}
	for _, st := range h2.sys.Runtime.ActorStats() {
		if st.Restarts != 0 {
			t.Fatalf("%d %s actors restarted after a panic", st.Restarts, st.Kind)
		}
	}
}

// sameInvoice fails unless got and want encode to the same JSON.
func sameInvoice(t *testing.T, what string, got, want *kassa.Invoice) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}
