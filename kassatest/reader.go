package kassatest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/kassapay/kassa"
)

// Storage is a store under test: the journal that writes and the reader
// that reads what it wrote.
type Storage struct {
	Journal kassa.Journal
	Reader  kassa.Reader
}

// RunReader runs the contract of kassa.Reader against fresh stores made
// by open, writing through their Journal.
func RunReader(t *testing.T, open func(t *testing.T) Storage) {
	cases := []struct {
		name string
		fn   func(t *testing.T, s Storage)
	}{
		{"Stores", readerStores},
		{"Ledger", readerLedger},
		{"TransactionNumbers", readerTransactionNumbers},
		{"InvoiceLookups", readerInvoiceLookups},
		{"InvoicePages", readerInvoicePages},
		{"SearchFolded", readerSearchFolded},
		{"SearchTermChanges", readerSearchTermChanges},
		{"SearchPages", readerSearchPages},
		{"SearchSameWrite", readerSearchSameWrite},
		{"OpenInvoices", readerOpenInvoices},
		{"PaymentRequests", readerPaymentRequests},
		{"Webhooks", readerWebhooks},
		{"WebhookOutbox", readerWebhookOutbox},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, open(t))
		})
	}
}

func readerStores(t *testing.T, s Storage) {
	ctx := t.Context()
	Commit(t, s.Journal, func(b kassa.Batch) {
		b.PutStore(NewStore("s1", "key_a", "key_b"), 1)
		b.PutStore(NewStore("s2", "key_c"), 1)
	})
	for key, want := range map[string]string{"key_a": "s1", "key_b": "s1", "key_c": "s2"} {
		if st, err := s.Reader.StoreByAPIKey(ctx, key); err != nil || st.ID != want {
			t.Errorf("StoreByAPIKey(%s) = %v, %v; want %s", key, st, err, want)
		}
	}
	_, err := s.Reader.StoreByAPIKey(ctx, "key_zz")
	wantCode(t, "StoreByAPIKey of an unknown key", err, kassa.NotFound)
	_, err = s.Reader.Store(ctx, "s9")
	wantCode(t, "Store of an unknown id", err, kassa.NotFound)
	st, err := s.Reader.Store(ctx, "s2")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "store", st, NewStore("s2", "key_c"))

	renamed := NewStore("s2", "key_c")
	renamed.Name = "Renamed"
	Commit(t, s.Journal, func(b kassa.Batch) { b.PutStore(renamed, 2) })
	if st, err := s.Reader.Store(ctx, "s2"); err != nil || st.Name != "Renamed" {
		t.Errorf("Store after an update = %v, %v", st, err)
	}
	var ids []string
	if err := s.Reader.Stores(ctx, func(st *kassa.Store) error { ids = append(ids, st.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"s1", "s2"}) {
		t.Errorf("Stores = %v", ids)
	}
}

func readerLedger(t *testing.T, s Storage) {
	ctx := t.Context()
	topUp := &kassa.Transaction{StoreID: "s1", Type: kassa.TransactionTopUp, Status: kassa.TransactionSettled, Amount: 1000, CreatedAt: Epoch}
	fee := &kassa.Transaction{StoreID: "s1", InvoiceID: "inv_1", Type: kassa.TransactionFee, Status: kassa.TransactionSettled, Amount: 30, FeeAmount: 30, CreatedAt: Epoch.Add(time.Minute)}
	deposit := &kassa.Transaction{StoreID: "s1", InvoiceID: "inv_1", Type: kassa.TransactionTransfer, Status: kassa.TransactionSettled, Amount: 3000, FullAmount: 3000, CreatedAt: Epoch.Add(time.Minute)}
	other := &kassa.Transaction{StoreID: "s2", Type: kassa.TransactionTopUp, Status: kassa.TransactionSettled, Amount: 5, CreatedAt: Epoch}
	Commit(t, s.Journal, func(b kassa.Batch) { b.PutTransaction(topUp); b.PutTransaction(other) })
	Commit(t, s.Journal, func(b kassa.Batch) { b.PutTransaction(deposit); b.PutTransaction(fee) })
	ids := []int64{topUp.ID, other.ID, deposit.ID, fee.ID}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("transaction IDs %v do not grow", ids)
		}
	}
	if bal, err := s.Reader.Balance(ctx, "s1"); bal != 970 || err != nil {
		t.Errorf("Balance = %d, %v; want 970 (top-up less the fee)", bal, err)
	}
	if bal, err := s.Reader.Balance(ctx, "s9"); bal != 0 || err != nil {
		t.Errorf("Balance of a store without lines = %d, %v", bal, err)
	}
	got, err := s.Reader.Transaction(ctx, fee.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "transaction", got, fee)
	_, err = s.Reader.Transaction(ctx, fee.ID+100)
	wantCode(t, "Transaction of an unknown id", err, kassa.NotFound)
	lines, err := s.Reader.TransactionsByInvoice(ctx, "inv_1")
	if err != nil || len(lines) != 2 || lines[0].ID != deposit.ID || lines[1].ID != fee.ID {
		t.Errorf("TransactionsByInvoice = %v, %v", lines, err)
	}
	var listed []int64
	if _, err := s.Reader.Transactions(ctx, "s1", kassa.ListQuery{}, func(tx *kassa.Transaction) error {
		listed = append(listed, tx.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 3 || listed[2] != topUp.ID {
		t.Errorf("Transactions = %v, want 3 newest first ending with the top-up %d", listed, topUp.ID)
	}
}

// transactionNumberer is what a store offers to number a store's ledger
// lines (the numbers the dashboard and the export show).
type transactionNumberer interface {
	TransactionNumber(ctx context.Context, tx *kassa.Transaction) (int64, error)
}

func readerTransactionNumbers(t *testing.T, s Storage) {
	nr, ok := s.Reader.(transactionNumberer)
	if !ok {
		t.Skip("the store does not number ledger lines")
	}
	ctx := t.Context()
	// s2's line comes first, and s1's lines share a time: they are
	// numbered by time, then id, from 1 in each store.
	other := &kassa.Transaction{StoreID: "s2", Type: kassa.TransactionTopUp, Status: kassa.TransactionSettled, Amount: 5, CreatedAt: Epoch}
	first := &kassa.Transaction{StoreID: "s1", Type: kassa.TransactionTopUp, Status: kassa.TransactionSettled, Amount: 1000, CreatedAt: Epoch.Add(time.Second)}
	a := &kassa.Transaction{StoreID: "s1", InvoiceID: "inv_1", Type: kassa.TransactionTransfer, Status: kassa.TransactionSettled, Amount: 3000, CreatedAt: Epoch.Add(time.Minute)}
	b := &kassa.Transaction{StoreID: "s1", InvoiceID: "inv_1", Type: kassa.TransactionFee, Status: kassa.TransactionSettled, Amount: 30, CreatedAt: Epoch.Add(time.Minute)}
	Commit(t, s.Journal, func(bt kassa.Batch) { bt.PutTransaction(other) })
	Commit(t, s.Journal, func(bt kassa.Batch) { bt.PutTransaction(first); bt.PutTransaction(a); bt.PutTransaction(b) })
	for tx, want := range map[*kassa.Transaction]int64{other: 1, first: 1, a: 2, b: 3} {
		if n, err := nr.TransactionNumber(ctx, tx); n != want || err != nil {
			t.Errorf("TransactionNumber of %s line %d = %d, %v; want %d", tx.StoreID, tx.ID, n, err, want)
		}
	}
}

func readerInvoiceLookups(t *testing.T, s Storage) {
	ctx := t.Context()
	inv := NewInvoice("inv_1", "s1", Epoch)
	inv.OnchainAddress, inv.PaymentHash = "bcrt1qaddr", "hash1"
	Commit(t, s.Journal, func(b kassa.Batch) { b.PutInvoice(inv, nil, 1) })
	if id, err := s.Reader.InvoiceIDByAddress(ctx, "bcrt1qaddr"); id != "inv_1" || err != nil {
		t.Errorf("InvoiceIDByAddress = %q, %v", id, err)
	}
	if id, err := s.Reader.InvoiceIDByPaymentHash(ctx, "hash1"); id != "inv_1" || err != nil {
		t.Errorf("InvoiceIDByPaymentHash = %q, %v", id, err)
	}
	_, err := s.Reader.InvoiceIDByAddress(ctx, "bcrt1qother")
	wantCode(t, "InvoiceIDByAddress of an unknown address", err, kassa.NotFound)
	_, err = s.Reader.InvoiceIDByPaymentHash(ctx, "hash2")
	wantCode(t, "InvoiceIDByPaymentHash of an unknown hash", err, kassa.NotFound)
	_, err = s.Reader.Invoice(ctx, "inv_2")
	wantCode(t, "Invoice of an unknown id", err, kassa.NotFound)
	got, err := s.Reader.Invoice(ctx, "inv_1")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "invoice", got, inv)

	// A new invoice made with an address or hash an older one has (an
	// address derived again after a crash) takes the lookup over.
	again := NewInvoice("inv_2", "s1", Epoch.Add(time.Minute))
	again.OnchainAddress, again.PaymentHash = "bcrt1qaddr", "hash1"
	Commit(t, s.Journal, func(b kassa.Batch) { b.PutInvoice(again, nil, 1) })
	if id, err := s.Reader.InvoiceIDByAddress(ctx, "bcrt1qaddr"); id != "inv_2" || err != nil {
		t.Errorf("InvoiceIDByAddress of an address made again = %q, %v; want inv_2", id, err)
	}
	if id, err := s.Reader.InvoiceIDByPaymentHash(ctx, "hash1"); id != "inv_2" || err != nil {
		t.Errorf("InvoiceIDByPaymentHash of a hash made again = %q, %v; want inv_2", id, err)
	}
}

func readerInvoicePages(t *testing.T, s Storage) {
	ctx := t.Context()
	Commit(t, s.Journal, func(b kassa.Batch) {
		for i, id := range []string{"inv_a", "inv_b", "inv_c", "inv_d", "inv_e"} {
			b.PutInvoice(NewInvoice(id, "s1", Epoch.Add(time.Duration(i)*time.Hour)), nil, 1)
		}
		b.PutInvoice(NewInvoice("inv_other", "s2", Epoch), nil, 1)
	})
	list := func(q kassa.ListQuery) (ids []string, next string) {
		t.Helper()
		next, err := s.Reader.Invoices(ctx, "s1", q, func(inv *kassa.Invoice) error {
			ids = append(ids, inv.ID)
			return nil
		})
		if err != nil {
			t.Fatalf("Invoices(%+v): %v", q, err)
		}
		return ids, next
	}
	if ids, next := list(kassa.ListQuery{}); !slices.Equal(ids, []string{"inv_e", "inv_d", "inv_c", "inv_b", "inv_a"}) || next != "" {
		t.Errorf("all invoices = %v, next %q", ids, next)
	}
	var paged []string
	q := kassa.ListQuery{Limit: 2}
	for range 10 {
		ids, next := list(q)
		paged = append(paged, ids...)
		if next == "" {
			break
		}
		q.Cursor = next
	}
	if !slices.Equal(paged, []string{"inv_e", "inv_d", "inv_c", "inv_b", "inv_a"}) {
		t.Errorf("pages of 2 = %v", paged)
	}
	if ids, _ := list(kassa.ListQuery{From: Epoch.Add(time.Hour), To: Epoch.Add(3 * time.Hour)}); !slices.Equal(ids, []string{"inv_d", "inv_c", "inv_b"}) {
		t.Errorf("invoices from 1 h to 3 h = %v", ids)
	}
	_, err := s.Reader.Invoices(ctx, "s1", kassa.ListQuery{Cursor: "not a cursor!"}, func(*kassa.Invoice) error { return nil })
	wantCode(t, "Invoices with a bad cursor", err, kassa.Invalid)
}

func readerOpenInvoices(t *testing.T, s Storage) {
	ctx := t.Context()
	late := NewInvoice("inv_late", "s1", Epoch.Add(time.Hour))
	early := NewInvoice("inv_early", "s2", Epoch)
	settled := NewInvoice("inv_settled", "s1", Epoch)
	Commit(t, s.Journal, func(b kassa.Batch) {
		b.PutInvoice(late, nil, 1)
		b.PutInvoice(early, nil, 1)
		b.PutInvoice(settled, nil, 1)
	})
	done := *settled
	done.Status = kassa.InvoiceSettled
	Commit(t, s.Journal, func(b kassa.Batch) { b.PutInvoice(&done, settled, 2) })
	type open struct {
		id, store string
		deadline  time.Time
	}
	var got []open
	if err := s.Reader.OpenInvoices(ctx, func(id, store string, deadline time.Time) error {
		got = append(got, open{id, store, deadline})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []open{{"inv_early", "s2", early.ExpiresAt}, {"inv_late", "s1", late.ExpiresAt}}
	if len(got) != len(want) {
		t.Fatalf("OpenInvoices = %v, want %v", got, want)
	}
	for i := range want {
		if got[i].id != want[i].id || got[i].store != want[i].store || !got[i].deadline.Equal(want[i].deadline) {
			t.Errorf("OpenInvoices[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

func readerPaymentRequests(t *testing.T, s Storage) {
	ctx := t.Context()
	Commit(t, s.Journal, func(b kassa.Batch) {
		b.PutPaymentRequest(&kassa.PaymentRequest{ID: "pr_old", StoreID: "s1", Title: "Old", CreatedAt: Epoch})
		b.PutPaymentRequest(&kassa.PaymentRequest{ID: "pr_new", StoreID: "s1", Title: "New", CreatedAt: Epoch.Add(time.Hour)})
	})
	Commit(t, s.Journal, func(b kassa.Batch) { b.MarkPaymentRequestPaid("pr_old", "inv_1") })
	pr, err := s.Reader.PaymentRequest(ctx, "pr_old")
	if err != nil || pr.Title != "Old" || pr.PaidInvoiceID != "inv_1" {
		t.Errorf("PaymentRequest = %+v, %v; want it paid by inv_1", pr, err)
	}
	_, err = s.Reader.PaymentRequest(ctx, "pr_none")
	wantCode(t, "PaymentRequest of an unknown id", err, kassa.NotFound)
	var ids []string
	if err := s.Reader.PaymentRequests(ctx, "s1", func(pr *kassa.PaymentRequest) error { ids = append(ids, pr.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"pr_new", "pr_old"}) {
		t.Errorf("PaymentRequests = %v, want newest first", ids)
	}
}

func readerWebhooks(t *testing.T, s Storage) {
	ctx := t.Context()
	wh := &kassa.Webhook{ID: "wh_1", StoreID: "s1", URL: "https://shop.example/hook", Secret: "secret", Enabled: true,
		Events: []kassa.EventType{kassa.EventSettled}, CreatedAt: Epoch, UpdatedAt: Epoch}
	Commit(t, s.Journal, func(b kassa.Batch) { b.PutWebhook(wh) })
	got, err := s.Reader.Webhook(ctx, "wh_1")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "webhook", got, wh)
	n := 0
	if err := s.Reader.Webhooks(ctx, "s1", func(*kassa.Webhook) error { n++; return nil }); err != nil || n != 1 {
		t.Errorf("Webhooks = %d, %v; want 1", n, err)
	}
	Commit(t, s.Journal, func(b kassa.Batch) { b.DeleteWebhook(wh) })
	_, err = s.Reader.Webhook(ctx, "wh_1")
	wantCode(t, "Webhook after delete", err, kassa.NotFound)
}

// readerWebhookOutbox: an endpoint's pending deliveries are read in the
// order they were put in the outbox, whatever their ids, and leave it
// once written as sent.
func readerWebhookOutbox(t *testing.T, s Storage) {
	ctx := t.Context()
	ids := []string{"dl_z", "dl_a", "dl_m"}
	var ds []*kassa.Delivery
	for _, id := range ids {
		d := &kassa.Delivery{ID: id, WebhookID: "wh_1", StoreID: "s1", InvoiceID: "inv_1", Type: kassa.EventNew,
			Payload: []byte(`{"type":"New"}`), Status: kassa.DeliveryPending, CreatedAt: Epoch}
		ds = append(ds, d)
		Commit(t, s.Journal, func(b kassa.Batch) { b.PutDelivery(d, true) })
	}
	other := &kassa.Delivery{ID: "dl_b", WebhookID: "wh_2", StoreID: "s1", InvoiceID: "inv_1", Type: kassa.EventNew,
		Payload: []byte(`{"type":"New"}`), Status: kassa.DeliveryPending, CreatedAt: Epoch}
	Commit(t, s.Journal, func(b kassa.Batch) { b.PutDelivery(other, true) })
	outbox := func() []string {
		var got []string
		if err := s.Reader.WebhookOutbox(ctx, "wh_1", func(id string) error { got = append(got, id); return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := outbox(); !slices.Equal(got, ids) {
		t.Fatalf("WebhookOutbox = %v, want %v", got, ids)
	}
	pending := map[string][]string{}
	if err := s.Reader.PendingDeliveries(ctx, func(w, d string) error { pending[w] = append(pending[w], d); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pending["wh_1"], ids) || !slices.Equal(pending["wh_2"], []string{"dl_b"}) || len(pending) != 2 {
		t.Errorf("PendingDeliveries = %v, want wh_1 %v and wh_2 [dl_b]", pending, ids)
	}
	ds[0].Status = kassa.DeliveryDelivered
	Commit(t, s.Journal, func(b kassa.Batch) { b.PutDelivery(ds[0], false) })
	if got := outbox(); !slices.Equal(got, ids[1:]) {
		t.Errorf("WebhookOutbox after one sent = %v, want %v", got, ids[1:])
	}
}
