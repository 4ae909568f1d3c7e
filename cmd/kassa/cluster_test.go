package main

import (
	"strings"
	"testing"
)

// TestParseCluster checks the cluster flags: cluster mode needs the
// PostgreSQL store and a node address, and each refusal says what is
// missing.
func TestParseCluster(t *testing.T) {
	const pg = "postgres://kassa@127.0.0.1:5432/kassa"
	for _, c := range []struct {
		cluster, node, store string
		want                 string // part of the error; empty: accepted
	}{
		{"", "", "", ""},
		{"", "127.0.0.1:7000", pg, "--node-listen is for cluster mode"},
		{"etcd://127.0.0.1:2379", "127.0.0.1:7000", "", "--cluster needs --store 'postgres://…'"},
		{"etcd://127.0.0.1:2379", "127.0.0.1:7000", "pebble", "--cluster needs --store 'postgres://…'"},
		{"etcd://127.0.0.1:2379", "", pg, "--cluster needs --node-listen"},
		{"http://127.0.0.1:2379", "127.0.0.1:7000", pg, "use etcd://HOST:PORT"},
		{"etcd://127.0.0.1", "127.0.0.1:7000", pg, "is not HOST:PORT"},
		{"etcd://127.0.0.1:2379", "0.0.0.0:7000", pg, "not 0.0.0.0"},
		{"etcd://127.0.0.1:2379", "127.0.0.1:0", pg, "not port 0"},
		{"etcd://127.0.0.1:2379", "127.0.0.1:7000", pg, ""},
		{"etcd://10.0.0.1:2379,10.0.0.2:2379", "10.0.0.5:7000", pg, ""},
	} {
		s, err := parseCluster(c.cluster, c.node, c.store)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("parseCluster(%q, %q, %q) = %v, want accepted", c.cluster, c.node, c.store, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("parseCluster(%q, %q, %q) = %v, want an error with %q", c.cluster, c.node, c.store, err, c.want)
		case c.want == "" && c.cluster != "" && (s == nil || len(s.endpoints) == 0 || s.port != 7000):
			t.Errorf("parseCluster(%q, %q, %q) = %+v", c.cluster, c.node, c.store, s)
		}
	}
}
