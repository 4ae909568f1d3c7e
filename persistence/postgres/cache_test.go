package postgres

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kassapay/kassa"
)

// commitT commits one batch built by build.
func commitT(t *testing.T, d *DB, build func(b kassa.Batch)) {
	t.Helper()
	b := d.NewBatch()
	build(b)
	if err := d.Commit(t.Context(), b); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// TestOwnedCacheFollowsTheOwnersWrites checks what the owned cache
// serves: a store owned here sees its own commits at once (a deleted
// API key stops resolving to a store that holds it, a balance moves with
// every fee and top-up, also under concurrent commits), and a store not
// owned here sees another node's writes.
func TestOwnedCacheFollowsTheOwnersWrites(t *testing.T) {
	dsn := newSchema(t)
	d, other := openTestDSN(t, dsn), openTestDSN(t, dsn)
	ctx := t.Context()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := kassa.NewStore(kassa.NewID("sto_"), kassa.StoreSettings{Name: "Shop"}, now)
	key := st.APIKeys[0].Key
	second := kassa.APIKey{ID: "key_2", Label: "second", Key: kassa.NewSecret(), CreatedAt: now}
	st.APIKeys = append(st.APIKeys, second)
	commitT(t, d, func(b kassa.Batch) { b.PutStore(st, 1) })
	release := d.Own(st.ID)
	defer release()

	hasKey := func(s *kassa.Store, k string) bool {
		for _, x := range s.APIKeys {
			if x.Key == k {
				return true
			}
		}
		return false
	}
	// Fill the cache, then delete the second key.
	for range 2 {
		got, err := d.StoreByAPIKey(ctx, second.Key)
		if err != nil || got.ID != st.ID || !hasKey(got, second.Key) {
			t.Fatalf("StoreByAPIKey(second) = %+v, %v", got, err)
		}
	}
	if _, _, ok := d.cache.store(st.ID); !ok {
		t.Fatal("an owned store read by its key is not cached")
	}
	without := *st
	without.APIKeys = st.APIKeys[:1:1]
	commitT(t, d, func(b kassa.Batch) { b.PutStore(&without, 2) })
	if got, err := d.StoreByAPIKey(ctx, second.Key); err == nil && hasKey(got, second.Key) {
		t.Fatal("a deleted key still resolves to a store that holds it")
	}
	if got, seq, err := d.StoreSnapshot(ctx, st.ID); err != nil || seq != 2 || hasKey(got, second.Key) || !hasKey(got, key) {
		t.Fatalf("StoreSnapshot after the delete = seq %d, %v", seq, err)
	}

	// Balances: first reads race concurrent commits.
	const writers = 40
	var want int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range writers + 8 {
		wg.Go(func() {
			if i >= writers {
				if _, err := d.Balance(ctx, st.ID); err != nil {
					t.Errorf("Balance: %v", err)
				}
				return
			}
			up := kassa.Sats(1000 + i)
			fee := kassa.Sats(3 * i)
			b := d.NewBatch()
			b.PutTransaction(&kassa.Transaction{StoreID: st.ID, Type: kassa.TransactionTopUp, Status: kassa.TransactionSettled, Amount: up, CreatedAt: now})
			b.PutTransaction(&kassa.Transaction{StoreID: st.ID, InvoiceID: fmt.Sprintf("inv_%d", i), Type: kassa.TransactionFee, Status: kassa.TransactionSettled, Amount: fee, FeeAmount: fee, CreatedAt: now})
			if err := d.Commit(ctx, b); err != nil {
				t.Errorf("commit: %v", err)
				return
			}
			mu.Lock()
			want += int64(up - fee)
			mu.Unlock()
		})
	}
	wg.Wait()
	if _, ok := d.cache.balances.Get(st.ID); !ok {
		t.Fatal("the balance of an owned store is not cached")
	}
	var onDisk int64
	if err := d.pool.QueryRow(ctx, `SELECT balance FROM balances WHERE store_id = $1`, st.ID).Scan(&onDisk); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Balance(ctx, st.ID); err != nil || int64(got) != want || onDisk != want {
		t.Fatalf("Balance = %d, %v; on disk %d; want %d", got, err, onDisk, want)
	}

	// Released, the store is read from the database again: another
	// node's writes show.
	release()
	commitT(t, other, func(b kassa.Batch) {
		b.PutTransaction(&kassa.Transaction{StoreID: st.ID, Type: kassa.TransactionTopUp, Status: kassa.TransactionSettled, Amount: 7, CreatedAt: now})
		b.PutStore(st, 3) // both keys again
	})
	if got, err := d.Balance(ctx, st.ID); err != nil || int64(got) != want+7 {
		t.Fatalf("Balance after release = %d, %v; want %d", got, err, want+7)
	}
	if got, err := d.StoreByAPIKey(ctx, second.Key); err != nil || !hasKey(got, second.Key) {
		t.Fatalf("StoreByAPIKey after release = %+v, %v; want the other node's store", got, err)
	}
	// Owned again, it starts from the database.
	again := d.Own(st.ID)
	defer again()
	if got, err := d.Balance(ctx, st.ID); err != nil || int64(got) != want+7 {
		t.Fatalf("Balance owned again = %d, %v; want %d", got, err, want+7)
	}
}
