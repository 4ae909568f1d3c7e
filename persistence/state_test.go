package persistence

import (
	"fmt"
	"testing"
)

// TestState checks a backend's state space: values round-trip (an empty
// one too), Delete removes, Scan walks one prefix in key order, and two
// spaces never see each other's keys.
func TestState(t *testing.T) {
	ctx := t.Context()
	db, err := Open("", Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a, b := db.State("a"), db.State("ab")
	for _, k := range []string{"inv/2", "inv/1", "inv/10", "height"} {
		if err := a.Put(ctx, k, []byte("a:"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Put(ctx, "empty", nil); err != nil {
		t.Fatal(err)
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
}
