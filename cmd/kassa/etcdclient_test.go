package main

import (
	"context"
	"testing"
	"time"

	"github.com/kassapay/kassa/kassatest/harness"
)

// TestEtcdClientReconnectsWithinALease: after etcd was away for several
// leases, a node's etcd client reaches it again well within a lease of
// its return, so that the membership lease it then renews has not run
// out. Before, gRPC's reconnect backoff had grown to several seconds
// during the outage (1 s, 1.6 times more after each failed attempt): a
// node came back to etcd up to 5 s late, its lease (3 s) ran out and it
// joined again under a new member id (TestClusterRidesOutEtcd saw one
// node in three do so after "etcd stopped").
func TestEtcdClientReconnectsWithinALease(t *testing.T) {
	e := harness.EtcdForTest(t)
	client, err := newEtcdClient([]string{e.Endpoint()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	get := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		defer cancel()
		_, err := client.Get(ctx, "/kassa/ping")
		return err
	}
	if err := get(); err != nil {
		t.Fatal(err)
	}
	if err := e.Down(); err != nil {
		t.Fatal(err)
	}
	// The node keeps asking while etcd is away (self-fencing polls it
	// every 250 ms), and each failed attempt grows the backoff.
	for end := time.Now().Add(4 * clusterLease); time.Now().Before(end); time.Sleep(fencePoll) {
		if err := get(); err == nil {
			t.Fatal("etcd answered while down")
		}
	}
	if err := e.Up(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	for get() != nil {
		if time.Since(back) > clusterLease {
			t.Fatalf("the etcd client did not reach etcd within a lease (%v) of its return", clusterLease)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("etcd reached again %v after its return", time.Since(back).Round(time.Millisecond))
}
