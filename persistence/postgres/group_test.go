package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/harness"
	"github.com/kassapay/kassa/lease"
)

// groupHarness holds the first group of a DB, about to be sent (its
// statements and COMMIT go in one round trip), until released, so that
// the batches committed meanwhile queue up and go in the next group
// together. One group runs at a time.
type groupHarness struct {
	db      *DB
	hold    chan struct{} // closed to let the first group commit
	held    chan struct{} // closed once the first group is held
	mu      sync.Mutex
	groups  int
	sizes   []int // of the groups that committed
	onGroup func(n, size int)
}

func newGroupHarness(t *testing.T, db *DB) *groupHarness {
	t.Helper()
	h := &groupHarness{db: db, hold: make(chan struct{}), held: make(chan struct{})}
	db.group.maxRunning = 1
	db.group.executed = func(size int) {
		h.mu.Lock()
		h.groups++
		n, on := h.groups, h.onGroup
		h.mu.Unlock()
		if n == 1 {
			close(h.held)
			<-h.hold
		}
		if on != nil {
			on(n, size)
		}
	}
	db.group.committed = func(size int) {
		h.mu.Lock()
		h.sizes = append(h.sizes, size)
		h.mu.Unlock()
	}
	t.Cleanup(func() {
		select {
		case <-h.hold:
		default:
			close(h.hold)
		}
	})
	return h
}

// start commits a first batch (a store) and returns once its group is
// held; done receives its commit's error.
func (h *groupHarness) start(t *testing.T) (done chan error) {
	t.Helper()
	done = make(chan error, 1)
	b := h.db.NewBatch()
	b.PutStore(&kassa.Store{ID: "first", Name: "First", Currency: kassa.EUR}, 1)
	go func() { done <- h.db.Commit(context.Background(), b) }()
	select {
	case <-h.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the first group never ran")
	}
	return done
}

// waitQueued waits until n batches wait for the next group.
func (h *groupHarness) waitQueued(t *testing.T, n int) {
	t.Helper()
	kassatest.WaitUntil(t, fmt.Sprintf("%d batches queued", n), func() bool {
		h.db.group.mu.Lock()
		defer h.db.group.mu.Unlock()
		return len(h.db.group.queue) == n
	})
}

// committedSizes returns the sizes of the groups committed, in order
// of size (two groups' COMMITs may end in either order).
func (h *groupHarness) committedSizes() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Sorted(slices.Values(h.sizes))
}

// invoiceBatch is an invoice's first commit: its event and snapshot.
func invoiceBatch(db *DB, id string) kassa.Batch {
	b := db.NewBatch()
	b.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: id}, 1, []byte("created "+id))
	b.PutInvoice(kassatest.NewInvoice(id, "s1", kassatest.Epoch), nil, 1)
	return b
}

// stored reports whether the invoice's event is visible to another
// connection, that is committed.
func stored(t *testing.T, other *DB, id string) bool {
	t.Helper()
	seq, err := other.StreamSeq(context.Background(), kassa.Stream{Kind: kassa.KindInvoice, ID: id})
	if err != nil {
		t.Errorf("read %s: %v", id, err)
	}
	return seq == 1
}

// TestGroupCommitSharesTransactions: batches committed while a
// transaction is being written go together in the next one, whether
// through the membership fence or not: nine batches, two transactions.
// Each caller is answered only once its batch is committed: when the
// commit returns, another connection already sees the batch; while the
// shared transaction has run its statements but not committed, nobody
// is answered and nothing is visible.
func TestGroupCommitSharesTransactions(t *testing.T) {
	db := openTest(t)
	other := openTestDSN(t, db.pool.Config().ConnString())
	ctx := t.Context()
	if err := db.Members().Join(ctx, "node-1"); err != nil {
		t.Fatal(err)
	}
	h := newGroupHarness(t, db)
	const n = 8
	var (
		mu       sync.Mutex
		answered []string
	)
	h.onGroup = func(g, size int) {
		if g != 2 {
			return
		}
		// The second group holds every batch queued and is about to
		// be sent: nothing of it is committed yet.
		mu.Lock()
		defer mu.Unlock()
		if len(answered) != 0 {
			t.Errorf("answered before the commit: %v", answered)
		}
		for i := range n {
			if id := fmt.Sprintf("inv_%d", i); stored(t, other, id) {
				t.Errorf("%s visible before the group committed", id)
			}
		}
	}
	first := h.start(t)
	errs := make(chan error, n)
	for i := range n {
		id := fmt.Sprintf("inv_%d", i)
		go func() {
			var err error
			if i%2 == 0 {
				err = db.Members().Commit(ctx, "node-1", invoiceBatch(db, id))
			} else {
				err = db.Commit(ctx, invoiceBatch(db, id))
			}
			if err == nil && !stored(t, other, id) {
				err = fmt.Errorf("%s answered, but another connection does not see it", id)
			}
			mu.Lock()
			answered = append(answered, id)
			mu.Unlock()
			errs <- err
		}()
	}
	h.waitQueued(t, n)
	close(h.hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := h.committedSizes(); !slices.Equal(got, []int{1, n}) {
		t.Errorf("transactions committed held %v batches, want [1 %d]", got, n)
	}
}

// TestGroupCommitRefusesAlone: in one shared transaction, a batch of an
// expelled member, one whose event sequence number is taken, one under
// a lost lease and one under a lost delivery claim each fail with their
// own error and write nothing; the two sound batches of the group
// commit.
func TestGroupCommitRefusesAlone(t *testing.T) {
	db := openTest(t)
	ctx := t.Context()
	m := db.Members()
	for _, id := range []string{"node-1", "node-2"} {
		if err := m.Join(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Expel(ctx, "node-2"); err != nil {
		t.Fatal(err)
	}
	kassatest.Commit(t, db, func(b kassa.Batch) {
		b.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: "taken"}, 1, []byte("first"))
	})
	stale, ok, err := db.Leases().Acquire(ctx, lease.RoleForwarder, "node-1", time.Hour)
	if err != nil || !ok {
		t.Fatalf("acquire: %v, %v", ok, err)
	}
	if err := db.Leases().Release(ctx, stale); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := db.Leases().Acquire(ctx, lease.RoleForwarder, "node-2", time.Hour); err != nil || !ok {
		t.Fatalf("take-over: %v, %v", ok, err)
	}
	lostClaim := kassa.DeliveryClaim{WebhookID: "wh", DeliveryID: "dl", Holder: "node-1"}

	h := newGroupHarness(t, db)
	first := h.start(t)
	type result struct {
		name string
		err  error
	}
	results := make(chan result, 6)
	commit := func(name string, f func() error) { go func() { results <- result{name, f()} }() }
	commit("member", func() error { return m.Commit(ctx, "node-1", invoiceBatch(db, "ok_member")) })
	commit("plain", func() error { return db.Commit(ctx, invoiceBatch(db, "ok_plain")) })
	commit("expelled", func() error { return m.Commit(ctx, "node-2", invoiceBatch(db, "bad_expelled")) })
	commit("seq", func() error {
		b := invoiceBatch(db, "bad_seq")
		b.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: "taken"}, 1, []byte("second"))
		return m.Commit(ctx, "node-1", b)
	})
	commit("lease", func() error {
		return db.Leases().Fenced(stale).(fenced).Commit(ctx, invoiceBatch(db, "bad_lease"))
	})
	commit("claim", func() error { return db.CommitClaimed(ctx, lostClaim, invoiceBatch(db, "bad_claim")) })
	h.waitQueued(t, 6)
	close(h.hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	want := map[string]error{
		"member": nil, "plain": nil,
		"expelled": kassa.ErrNotMember, "seq": ErrSeqTaken, "lease": lease.ErrLost, "claim": kassa.ErrClaimLost,
	}
	for range want {
		r := <-results
		if w := want[r.name]; w == nil && r.err != nil || w != nil && !errors.Is(r.err, w) {
			t.Errorf("%s: commit = %v, want %v", r.name, r.err, w)
		}
	}
	for _, id := range []string{"ok_member", "ok_plain"} {
		if !stored(t, db, id) {
			t.Errorf("%s not stored", id)
		}
	}
	for _, id := range []string{"bad_expelled", "bad_seq", "bad_lease", "bad_claim"} {
		if stored(t, db, id) {
			t.Errorf("%s stored, though its batch was refused", id)
		}
		if _, err := db.Invoice(ctx, id); kassa.ErrorCode(err) != kassa.NotFound {
			t.Errorf("%s: snapshot of a refused batch: %v", id, err)
		}
	}
	var events []string
	if err := db.Events(ctx, kassa.Stream{Kind: kassa.KindInvoice, ID: "taken"}, 0, func(_ uint64, e []byte) error {
		events = append(events, string(e))
		return nil
	}); err != nil || !slices.Equal(events, []string{"first"}) {
		t.Errorf("events of the taken stream = %q, %v; want only the first", events, err)
	}
	// The first group, then one transaction with the two sound batches.
	if got := h.committedSizes(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("transactions committed held %v batches, want [1 2]", got)
	}
}

// TestGroupCommitServerDownMidCommit: PostgreSQL stops as a shared
// transaction is sent: every batch in it is answered with
// ErrUnavailable (code Unavailable), and once the server is back none
// of them is stored, while the group committed before is.
func TestGroupCommitServerDownMidCommit(t *testing.T) {
	srv, dsn := harness.PostgresForTest(t)
	db := openTestDSN(t, dsn)
	ctx := t.Context()
	if err := db.Members().Join(ctx, "node-1"); err != nil {
		t.Fatal(err)
	}
	h := newGroupHarness(t, db)
	h.onGroup = func(g, _ int) {
		if g == 2 {
			// The first group's COMMIT is answered before the server
			// goes down.
			for end := time.Now().Add(30 * time.Second); len(h.committedSizes()) == 0 && time.Now().Before(end); {
				time.Sleep(time.Millisecond)
			}
			if err := srv.Down(); err != nil {
				t.Error(err)
			}
		}
	}
	first := h.start(t)
	const n = 4
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- db.Members().Commit(ctx, "node-1", invoiceBatch(db, fmt.Sprintf("inv_%d", i))) }()
	}
	h.waitQueued(t, n)
	close(h.hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-errs; !errors.Is(err, ErrUnavailable) || kassa.ErrorCode(err) != kassa.Unavailable {
			t.Errorf("commit while the server went down = %v (code %s), want ErrUnavailable", err, kassa.ErrorCode(err))
		}
	}
	if err := srv.Up(); err != nil {
		t.Fatal(err)
	}
	kassatest.WaitUntil(t, "PostgreSQL back", func() bool { return db.Available(ctx) == nil })
	if _, err := db.Store(ctx, "first"); err != nil {
		t.Errorf("the group committed before the outage: %v", err)
	}
	for i := range n {
		if id := fmt.Sprintf("inv_%d", i); stored(t, db, id) {
			t.Errorf("%s stored, though its commit failed", id)
		}
	}
	if got := h.committedSizes(); !slices.Equal(got, []int{1}) {
		t.Errorf("transactions committed held %v batches, want [1]", got)
	}
}

// Two fences share their check only when their SQL and every argument
// are the same: a fence of one lease must not pass for another's.
func TestFenceKeysDifferByEveryArgument(t *testing.T) {
	const sql = `SELECT 1 FROM leases WHERE role = $1 AND holder = $2 AND epoch = $3 FOR SHARE`
	keys := map[string][]any{}
	for _, args := range [][]any{
		{"forward", "node-a", int64(1)},
		{"forward", "node-a", int64(2)},
		{"forward", "node-a", int64(12)},
		{"forward", "node-a1", int64(2)},
		{"forwardnode-a", "", int64(1)},
		{"forward", "node-a", "1"},
		{"forward", "node-a", []string{"1"}},
		{"forward", "node-a", []string{"1", "2"}},
		{"forward", "node-a"},
	} {
		k := fenceKey(sql, args)
		if other, ok := keys[k]; ok {
			t.Fatalf("fence keys of %#v and %#v are the same: %q", other, args, k)
		}
		keys[k] = args
	}
	a, b := []any{"forward", "node-a", int64(1)}, []any{"forward", "node-a", int64(1)}
	if fenceKey(sql, a) != fenceKey(sql, b) {
		t.Fatal("one check has two keys")
	}
	if fenceKey("A s1:x", nil) == fenceKey("A ", []any{"x"}) {
		t.Fatal("two checks' SQL and arguments share a key")
	}
}

// TestGroupKeepsItsTurnUntilCommitted: the batches that arrive while a
// group is written go in the next group, whose statements run only
// once the first group's COMMIT is answered, so that the server pays
// one transaction for all the batches of a flush.
func TestGroupKeepsItsTurnUntilCommitted(t *testing.T) {
	db := openTest(t)
	h := newGroupHarness(t, db)
	second := make(chan struct{})
	h.onGroup = func(g, size int) {
		if g == 2 {
			close(second)
		}
	}
	var once sync.Once
	overlapped := false
	db.group.committed = func(size int) {
		// The first group's COMMIT is answered: had the second group
		// been given the turn, its statements would run now.
		once.Do(func() {
			select {
			case <-second:
				overlapped = true
			case <-time.After(time.Second):
			}
		})
	}
	first := h.start(t)
	const n = 3
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- db.Commit(t.Context(), invoiceBatch(db, fmt.Sprintf("inv_%d", i))) }()
	}
	h.waitQueued(t, n)
	close(h.hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if overlapped {
		t.Error("the second group ran its statements before the first group's COMMIT was answered")
	}
}
