package kassatest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/kassapay/kassa/internal/simstore"
)

// RunSimStore runs the contract of the simulators' key-value store
// (simstore.Store) against fresh stores made by open, which returns the
// space of each name in one store.
func RunSimStore(t *testing.T, open func(t *testing.T) func(name string) simstore.Store) {
	t.Run("Spaces", func(t *testing.T) {
		t.Parallel()
		space := open(t)
		simStoreSpaces(t, space("a"), space("ab"))
	})
	t.Run("LoadOrStore", func(t *testing.T) {
		t.Parallel()
		space := open(t)
		simStoreLoadOrStore(t, space("a"), space("b"))
	})
}

// simStoreLoadOrStore: callers racing to store different values under
// one key all get the one stored, which Get then reads; a key with a
// value keeps it; another space is untouched.
func simStoreLoadOrStore(t *testing.T, a, b simstore.Store) {
	ctx := t.Context()
	const callers = 8
	got := make([]string, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			v, err := a.LoadOrStore(ctx, "key", fmt.Appendf(nil, "value %d", i))
			if err != nil {
				t.Error(err)
			}
			got[i] = string(v)
		})
	}
	wg.Wait()
	stored, ok, err := a.Get(ctx, "key")
	if err != nil || !ok {
		t.Fatalf("Get after LoadOrStore = %v, %v", ok, err)
	}
	for i, v := range got {
		if v != string(stored) {
			t.Errorf("caller %d got %q; the store holds %q", i, v, stored)
		}
	}
	if v, err := a.LoadOrStore(ctx, "key", []byte("later")); string(v) != string(stored) || err != nil {
		t.Errorf("LoadOrStore of a key with a value = %q, %v; want %q", v, err, stored)
	}
	if err := a.Put(ctx, "set", []byte("put")); err != nil {
		t.Fatal(err)
	}
	if v, err := a.LoadOrStore(ctx, "set", []byte("other")); string(v) != "put" || err != nil {
		t.Errorf("LoadOrStore of a key Put = %q, %v; want \"put\"", v, err)
	}
	if v, err := b.LoadOrStore(ctx, "key", []byte("b")); string(v) != "b" || err != nil {
		t.Errorf("LoadOrStore in another space = %q, %v; want \"b\"", v, err)
	}
}

// simStoreSpaces: values round-trip (an empty one too), Delete removes,
// Scan walks one prefix in key order, and two spaces never see each
// other's keys, even when one's name is a prefix of the other's.
func simStoreSpaces(t *testing.T, a, b simstore.Store) {
	ctx := t.Context()
	for _, k := range []string{"inv/2", "inv/1", "inv/10", "height", "inw"} {
		if err := a.Put(ctx, k, []byte("a:"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Put(ctx, "empty", nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, "inv/2", []byte("a:inv/2")); err != nil {
		t.Fatalf("Put over an existing key: %v", err)
	}
	if err := b.Put(ctx, "inv/1", []byte("b")); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := a.Get(ctx, "inv/1"); string(v) != "a:inv/1" || !ok || err != nil {
		t.Errorf("Get = %q, %v, %v", v, ok, err)
	}
	if v, ok, err := a.Get(ctx, "empty"); len(v) != 0 || !ok || err != nil {
		t.Errorf("Get of an empty value = %q, %v, %v; want present", v, ok, err)
	}
	if _, ok, err := a.Get(ctx, "missing"); ok || err != nil {
		t.Errorf("Get of a missing key = %v, %v", ok, err)
	}
	var keys []string
	if err := a.Scan(ctx, "inv/", func(k string, v []byte) error {
		keys = append(keys, k+"="+string(v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(keys); got != "[inv/1=a:inv/1 inv/10=a:inv/10 inv/2=a:inv/2]" {
		t.Errorf("Scan = %s", got)
	}
	if err := a.Delete(ctx, "inv/1"); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(ctx, "never"); err != nil {
		t.Errorf("Delete of a missing key: %v", err)
	}
	if _, ok, _ := a.Get(ctx, "inv/1"); ok {
		t.Error("Get after Delete found the key")
	}
	if v, ok, _ := b.Get(ctx, "inv/1"); !ok || string(v) != "b" {
		t.Errorf("the other space lost its key: %q, %v", v, ok)
	}
	n := 0
	if err := b.Scan(ctx, "", func(string, []byte) error { n++; return nil }); err != nil || n != 1 {
		t.Errorf("Scan of all of space ab = %d keys, %v; want 1", n, err)
	}
}
