package kassatest

import (
	"testing"
	"time"

	"github.com/kassapay/kassa"
)

// RunKeyValue runs the contract of kassa.KeyValue against fresh stores
// made by open. Expiry is judged by the wall clock.
func RunKeyValue(t *testing.T, open func(t *testing.T) kassa.KeyValue) {
	t.Run("PutGet", func(t *testing.T) {
		t.Parallel()
		kv := open(t)
		ctx := t.Context()
		if _, ok, err := kv.GetValue(ctx, "missing"); ok || err != nil {
			t.Errorf("GetValue of a missing key = %v, %v", ok, err)
		}
		later := time.Now().Add(time.Hour)
		for _, v := range []string{"first", "second", ""} {
			if err := kv.PutValue(ctx, "k", []byte(v), later); err != nil {
				t.Fatal(err)
			}
			if got, ok, err := kv.GetValue(ctx, "k"); !ok || err != nil || string(got) != v {
				t.Errorf("GetValue after PutValue(%q) = %q, %v, %v", v, got, ok, err)
			}
		}
		if err := kv.PutValue(ctx, "k2", []byte("other"), later); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := kv.GetValue(ctx, "k"); string(got) != "" {
			t.Errorf("a second key changed the first: %q", got)
		}
	})
	t.Run("CacheValue", func(t *testing.T) {
		// Every store kassa serve runs on keeps the answer of a keyed
		// create without waiting for the disk (kassa.ValueCache): the
		// create's own commit is what must be durable.
		t.Parallel()
		kv := open(t)
		c, ok := kv.(kassa.ValueCache)
		if !ok {
			t.Fatalf("%T keeps no value without waiting for the disk (kassa.ValueCache): a keyed create writes its answer synced", kv)
		}
		ctx := t.Context()
		later := time.Now().Add(time.Hour)
		for _, v := range []string{"first", "second"} {
			if err := c.CacheValue(ctx, "cached", []byte(v), later); err != nil {
				t.Fatal(err)
			}
			if got, ok, err := kv.GetValue(ctx, "cached"); !ok || err != nil || string(got) != v {
				t.Errorf("GetValue after CacheValue(%q) = %q, %v, %v", v, got, ok, err)
			}
		}
		if err := c.CacheValue(ctx, "gone", []byte("v"), time.Now().Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := kv.GetValue(ctx, "gone"); ok || err != nil {
			t.Errorf("GetValue of an expired cached key = %v, %v; want absent", ok, err)
		}
	})
	t.Run("Expiry", func(t *testing.T) {
		t.Parallel()
		kv := open(t)
		ctx := t.Context()
		if err := kv.PutValue(ctx, "gone", []byte("v"), time.Now().Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := kv.GetValue(ctx, "gone"); ok || err != nil {
			t.Errorf("GetValue of an expired key = %v, %v; want absent", ok, err)
		}
	})
}
