package kassatest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kassapay/kassa"
)

// Epoch is the time the suites' records are stamped with.
var Epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// RunJournal runs the contract of kassa.Journal against fresh journals
// made by open (each case gets its own; open registers its cleanup).
func RunJournal(t *testing.T, open func(t *testing.T) kassa.Journal) {
	cases := []struct {
		name string
		fn   func(t *testing.T, j kassa.Journal)
	}{
		{"EventsInOrder", journalEventsInOrder},
		{"EventsStopOnError", journalEventsStopOnError},
		{"Snapshots", journalSnapshots},
		{"NotFound", journalNotFound},
		{"BatchIsAtomic", journalBatchIsAtomic},
		{"ConcurrentCommits", journalConcurrentCommits},
		{"RequestOnce", journalRequestOnce},
		{"RequestsExpire", journalRequestsExpire},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, open(t))
		})
	}
}

// Commit builds one batch of j with build and commits it.
func Commit(t testing.TB, j kassa.Journal, build func(b kassa.Batch)) {
	t.Helper()
	b := j.NewBatch()
	build(b)
	if err := j.Commit(t.Context(), b); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

type event struct {
	seq  uint64
	data string
}

func events(t *testing.T, j kassa.Journal, s kassa.Stream, after uint64) []event {
	t.Helper()
	var out []event
	err := j.Events(t.Context(), s, after, func(seq uint64, data []byte) error {
		out = append(out, event{seq, string(data)}) // kept after the call on purpose
		return nil
	})
	if err != nil {
		t.Fatalf("events of %v after %d: %v", s, after, err)
	}
	return out
}

func journalEventsInOrder(t *testing.T, j kassa.Journal) {
	ab := kassa.Stream{Kind: kassa.KindInvoice, ID: "ab"}
	abc := kassa.Stream{Kind: kassa.KindInvoice, ID: "abc"}
	storeAB := kassa.Stream{Kind: kassa.KindStore, ID: "ab"}
	data := func(s kassa.Stream, seq uint64) []byte { return fmt.Appendf(nil, "%s/%s#%d", s.Kind, s.ID, seq) }
	// 300 events cross a byte boundary at 256; appended in reverse, so
	// that the order comes from the sequence numbers.
	const n = 300
	Commit(t, j, func(b kassa.Batch) {
		for seq := uint64(n); seq >= 1; seq-- {
			b.AppendEvent(ab, seq, data(ab, seq))
		}
		for seq := uint64(1); seq <= 3; seq++ {
			b.AppendEvent(abc, seq, data(abc, seq))
			b.AppendEvent(storeAB, seq, data(storeAB, seq))
		}
	})
	check := func(s kassa.Stream, after, last uint64) {
		t.Helper()
		got := events(t, j, s, after)
		if want := int(last) - int(min(after, last)); len(got) != want {
			t.Fatalf("%v after %d: %d events, want %d", s, after, len(got), want)
		}
		for i, e := range got {
			if seq := after + uint64(i) + 1; e.seq != seq || e.data != string(data(s, seq)) {
				t.Fatalf("%v after %d: event %d is %d %q", s, after, i, e.seq, e.data)
			}
		}
	}
	check(ab, 0, n)
	check(ab, 255, n)
	check(ab, n, n)
	check(ab, n+5, n)
	check(abc, 0, 3)
	check(storeAB, 1, 3)
	check(kassa.Stream{Kind: kassa.KindInvoice, ID: "a"}, 0, 0)
	for s, want := range map[kassa.Stream]uint64{ab: n, abc: 3, storeAB: 3, {Kind: kassa.KindInvoice, ID: "none"}: 0} {
		if seq, err := j.StreamSeq(t.Context(), s); seq != want || err != nil {
			t.Errorf("StreamSeq(%v) = %d, %v; want %d", s, seq, err, want)
		}
	}
	// Appending goes on where the stream ended.
	Commit(t, j, func(b kassa.Batch) { b.AppendEvent(abc, 4, data(abc, 4)) })
	check(abc, 2, 4)
}

func journalEventsStopOnError(t *testing.T, j kassa.Journal) {
	s := kassa.Stream{Kind: kassa.KindInvoice, ID: "inv"}
	Commit(t, j, func(b kassa.Batch) {
		for seq := uint64(1); seq <= 5; seq++ {
			b.AppendEvent(s, seq, []byte("{}"))
		}
	})
	stop := errors.New("stop")
	calls := 0
	err := j.Events(t.Context(), s, 0, func(seq uint64, _ []byte) error {
		calls++
		if seq == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 2 {
		t.Errorf("Events = %v after %d calls, want the callback's error after 2", err, calls)
	}
}

// NewInvoice returns a New invoice of store created at created.
func NewInvoice(id, store string, created time.Time) *kassa.Invoice {
	return &kassa.Invoice{
		ID:             id,
		StoreID:        store,
		Status:         kassa.InvoiceNew,
		Amount:         1000,
		Currency:       kassa.EUR,
		StoreCurrency:  kassa.EUR,
		EnabledMethods: []kassa.PaymentMethod{kassa.MethodOnchain, kassa.MethodLightning},
		CreatedAt:      created,
		UpdatedAt:      created,
		ExpiresAt:      created.Add(15 * time.Minute),
		MonitorUntil:   created.Add(24 * time.Hour),
	}
}

// NewStore returns a store with the given API keys.
func NewStore(id string, apiKeys ...string) *kassa.Store {
	st := &kassa.Store{ID: id, Name: "Store " + id, Currency: kassa.EUR, CreatedAt: Epoch}
	for i, k := range apiKeys {
		st.APIKeys = append(st.APIKeys, kassa.APIKey{ID: fmt.Sprintf("key_%d", i), Label: "default", Key: k, CreatedAt: Epoch})
	}
	return st
}

// sameJSON compares by encoding, which is what a store keeps (decimals
// and times compare badly with reflect.DeepEqual).
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func journalSnapshots(t *testing.T, j kassa.Journal) {
	ctx := t.Context()
	inv := NewInvoice("inv_1", "s1", Epoch)
	inv.OnchainAddress, inv.PaymentHash = "bcrt1qaddr", "hash1"
	st := NewStore("s1", "key_1")
	// A store's team is part of its snapshot.
	st.Members, st.MembersKept = []kassa.Member{{Email: "owner@example.com", Role: kassa.RoleOwner}, {Email: "emp@example.com", Role: kassa.RoleEmployee}}, true
	st.Invites = []kassa.Invite{{ID: "ab12", By: "owner@example.com", Role: kassa.RoleGuest, Created: Epoch, Expires: Epoch.Add(time.Hour)}}
	Commit(t, j, func(b kassa.Batch) {
		b.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: inv.ID}, 1, []byte("{}"))
		b.PutInvoice(inv, nil, 1)
		b.AppendEvent(kassa.Stream{Kind: kassa.KindStore, ID: st.ID}, 1, []byte("{}"))
		b.PutStore(st, 1)
	})
	got, seq, err := j.InvoiceSnapshot(ctx, inv.ID)
	if err != nil || seq != 1 {
		t.Fatalf("InvoiceSnapshot = seq %d, %v", seq, err)
	}
	sameJSON(t, "invoice", got, inv)
	gotStore, seq, err := j.StoreSnapshot(ctx, st.ID)
	if err != nil || seq != 1 {
		t.Fatalf("StoreSnapshot = seq %d, %v", seq, err)
	}
	sameJSON(t, "store", gotStore, st)

	next := *inv
	next.Status, next.UpdatedAt = kassa.InvoiceExpired, Epoch.Add(15*time.Minute)
	Commit(t, j, func(b kassa.Batch) { b.PutInvoice(&next, inv, 2) })
	got, seq, err = j.InvoiceSnapshot(ctx, inv.ID)
	if err != nil || seq != 2 {
		t.Fatalf("InvoiceSnapshot after update = seq %d, %v", seq, err)
	}
	sameJSON(t, "updated invoice", got, &next)
}

func journalNotFound(t *testing.T, j kassa.Journal) {
	_, _, err := j.InvoiceSnapshot(t.Context(), "nope")
	wantCode(t, "InvoiceSnapshot", err, kassa.NotFound)
	_, _, err = j.StoreSnapshot(t.Context(), "nope")
	wantCode(t, "StoreSnapshot", err, kassa.NotFound)
	if got := events(t, j, kassa.Stream{Kind: kassa.KindInvoice, ID: "nope"}, 0); len(got) != 0 {
		t.Errorf("events of an unknown stream: %v", got)
	}
}

func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want %s", what, code)
	} else if got := kassa.ErrorCode(err); got != code {
		t.Errorf("%s: error %v has code %s, want %s", what, err, got, code)
	}
}

func journalBatchIsAtomic(t *testing.T, j kassa.Journal) {
	ctx := t.Context()
	s := kassa.Stream{Kind: kassa.KindInvoice, ID: "inv_1"}
	b := j.NewBatch()
	b.AppendEvent(s, 1, []byte("{}"))
	b.PutInvoice(NewInvoice("inv_1", "s1", Epoch), nil, 1)
	b.PutStore(NewStore("s1"), 1)
	if seq, err := j.StreamSeq(ctx, s); seq != 0 || err != nil {
		t.Errorf("StreamSeq before commit = %d, %v", seq, err)
	}
	_, _, err := j.InvoiceSnapshot(ctx, "inv_1")
	wantCode(t, "InvoiceSnapshot before commit", err, kassa.NotFound)
	_, _, err = j.StoreSnapshot(ctx, "s1")
	wantCode(t, "StoreSnapshot before commit", err, kassa.NotFound)
	if err := j.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	if seq, err := j.StreamSeq(ctx, s); seq != 1 || err != nil {
		t.Errorf("StreamSeq after commit = %d, %v", seq, err)
	}
	if _, _, err := j.InvoiceSnapshot(ctx, "inv_1"); err != nil {
		t.Errorf("InvoiceSnapshot after commit: %v", err)
	}
	if _, _, err := j.StoreSnapshot(ctx, "s1"); err != nil {
		t.Errorf("StoreSnapshot after commit: %v", err)
	}
}

// journalConcurrentCommits releases many committers at once (a durable
// journal groups their syncs): every commit returns only once durable and
// visible, and none is lost or mixed with another.
func journalConcurrentCommits(t *testing.T, j kassa.Journal) {
	const writers, each = 16, 10
	start := make(chan struct{})
	errs := make(chan error, writers*each)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			s := kassa.Stream{Kind: kassa.KindInvoice, ID: fmt.Sprintf("inv_%02d", w)}
			for seq := uint64(1); seq <= each; seq++ {
				b := j.NewBatch()
				b.AppendEvent(s, seq, fmt.Appendf(nil, "%d", seq))
				if err := j.Commit(t.Context(), b); err != nil {
					errs <- err
					return
				}
				if got, err := j.StreamSeq(t.Context(), s); got != seq || err != nil {
					errs <- fmt.Errorf("%v: StreamSeq right after commit %d = %d, %v", s, seq, got, err)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for w := range writers {
		s := kassa.Stream{Kind: kassa.KindInvoice, ID: fmt.Sprintf("inv_%02d", w)}
		if got := events(t, j, s, 0); len(got) != each {
			t.Errorf("%v: %d events, want %d", s, len(got), each)
		}
	}
}

// journalRequestOnce: a request id recorded by one commit makes a second
// commit that records it fail with kassa.ErrRequestDone and write
// nothing, concurrent commits included; the record reads back, and the
// same id of another store is another request.
func journalRequestOnce(t *testing.T, j kassa.Journal) {
	rr, ok := j.(kassa.RequestReader)
	if !ok {
		t.Fatalf("%T records no request ids", j)
	}
	if _, err := rr.Request(t.Context(), "s1", "req_1"); kassa.ErrorCode(err) != kassa.NotFound {
		t.Fatalf("request before any commit: %v, want NotFound", err)
	}
	build := func(stream, store, result string) kassa.Batch {
		b := j.NewBatch()
		b.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: stream}, 1, []byte(stream))
		b.(kassa.RequestBatch).PutRequest(kassa.RequestRecord{StoreID: store, ID: "req_1", Kind: kassa.RequestInvoice, ResultID: result, Fingerprint: "f", At: Epoch})
		return b
	}
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = j.Commit(t.Context(), build(fmt.Sprintf("inv%d", i), "s1", fmt.Sprintf("inv%d", i)))
		}()
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won < 0:
			won = i
		case err == nil:
			t.Fatalf("commits %d and %d both recorded request req_1", won, i)
		case !errors.Is(err, kassa.ErrRequestDone) || kassa.ErrorCode(err) != kassa.Conflict:
			t.Fatalf("commit %d of a recorded request: %v, want ErrRequestDone", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no commit recorded request req_1")
	}
	r, err := rr.Request(t.Context(), "s1", "req_1")
	want := kassa.RequestRecord{StoreID: "s1", ID: "req_1", Kind: kassa.RequestInvoice, ResultID: fmt.Sprintf("inv%d", won), Fingerprint: "f", At: Epoch}
	if err != nil || !sameRequest(*r, want) {
		t.Fatalf("request read back: %+v, %v; want %+v", r, err, want)
	}
	for i := range n {
		if got := events(t, j, kassa.Stream{Kind: kassa.KindInvoice, ID: fmt.Sprintf("inv%d", i)}, 0); (i == won) != (len(got) == 1) {
			t.Fatalf("stream inv%d has events %v; only the commit that recorded the request writes", i, got)
		}
	}
	Commit(t, j, func(b kassa.Batch) {
		b.(kassa.RequestBatch).PutRequest(kassa.RequestRecord{StoreID: "s2", ID: "req_1", Kind: kassa.RequestInvoice, ResultID: "x"})
	})
}

// sameRequest reports whether two request records are equal, their times
// as instants.
func sameRequest(a, b kassa.RequestRecord) bool {
	at := a.At.Equal(b.At)
	a.At, b.At = time.Time{}, time.Time{}
	return at && a == b
}

// sweeper is a journal's sweep of expired records (SweepExpired).
type sweeper interface {
	SweepExpired(ctx context.Context, now time.Time) (int, error)
}

// journalRequestsExpire: a request record is kept for kassa.RequestWindow
// after its time and deleted by the first sweep after that (then the id
// may be recorded again); a record without a time is stamped with the
// journal's clock; a pool address's record is never deleted.
func journalRequestsExpire(t *testing.T, j kassa.Journal) {
	rr := j.(kassa.RequestReader)
	sw, ok := j.(sweeper)
	if !ok {
		t.Fatalf("%T sweeps no expired records", j)
	}
	put := func(r kassa.RequestRecord) {
		Commit(t, j, func(b kassa.Batch) { b.(kassa.RequestBatch).PutRequest(r) })
	}
	old := kassa.RequestRecord{StoreID: "s1", ID: "req_old", Kind: kassa.RequestInvoice, ResultID: "inv_1", At: Epoch}
	later := kassa.RequestRecord{StoreID: "s1", ID: "req_later", Kind: kassa.RequestWebhook, ResultID: "wh_1", At: Epoch.Add(time.Hour)}
	pool := kassa.RequestRecord{StoreID: "pool", ID: "bcrt1qaddress", Kind: kassa.RequestPoolAddress, ResultID: "inv_1", At: Epoch}
	put(old)
	put(later)
	put(pool)
	before := time.Now()
	put(kassa.RequestRecord{StoreID: "s1", ID: "req_unstamped", Kind: kassa.RequestInvoice, ResultID: "inv_2"})
	if r, err := rr.Request(t.Context(), "s1", "req_unstamped"); err != nil || r.At.Before(before.Add(-time.Minute)) {
		t.Fatalf("a record without a time reads back as %+v, %v; want it stamped with the clock", r, err)
	}
	present := func(r kassa.RequestRecord) bool {
		t.Helper()
		got, err := rr.Request(t.Context(), r.StoreID, r.ID)
		switch {
		case err == nil:
			if !sameRequest(*got, r) {
				t.Fatalf("request %s reads back as %+v, want %+v", r.ID, got, r)
			}
			return true
		case kassa.ErrorCode(err) == kassa.NotFound:
			return false
		default:
			t.Fatalf("request %s: %v", r.ID, err)
			return false
		}
	}
	sweep := func(now time.Time) {
		t.Helper()
		if _, err := sw.SweepExpired(t.Context(), now); err != nil {
			t.Fatal(err)
		}
	}
	// At the window's edge the record is still there.
	sweep(Epoch.Add(kassa.RequestWindow))
	if !present(old) || !present(later) || !present(pool) {
		t.Fatal("a sweep at the window's edge deleted a record it must keep")
	}
	sweep(Epoch.Add(kassa.RequestWindow + time.Millisecond))
	if present(old) {
		t.Fatal("a record older than the window is kept")
	}
	if !present(later) || !present(pool) {
		t.Fatal("a sweep deleted a record inside the window, or a pool address's")
	}
	// The id is free again: a new create may record it.
	again := old
	again.ResultID, again.At = "inv_3", Epoch.Add(kassa.RequestWindow)
	put(again)
	if !present(again) {
		t.Fatal("the id of an expired record cannot be recorded again")
	}
	sweep(Epoch.Add(100 * kassa.RequestWindow))
	if present(later) || present(again) {
		t.Fatal("records long past the window are kept")
	}
	if !present(pool) {
		t.Fatal("a pool address's record was deleted")
	}
}
