package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa/internal/nodetls"
)

// TestParseCluster checks the cluster flags: cluster mode needs the
// PostgreSQL store, a node address and the node port's mutual TLS (or
// --node-insecure on loopback), and each refusal says what is missing.
func TestParseCluster(t *testing.T) {
	const pg = "postgres://kassa@127.0.0.1:5432/kassa"
	certs := filepath.Join(t.TempDir(), "certs")
	if err := nodetls.Generate(certs, 2, []string{"127.0.0.1", "10.0.0.5", "node1.internal"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	others := filepath.Join(t.TempDir(), "others")
	if err := nodetls.Generate(others, 1, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	node1 := nodetls.NodeFiles(certs, 1)
	withTLS := func(c Config, f nodetls.Files) Config {
		c.NodeTLSCA, c.NodeTLSCert, c.NodeTLSKey = f.CA, f.Cert, f.Key
		return c
	}
	insecure := func(c Config) Config { c.NodeInsecure = true; return c }
	plain := func(cluster, node, store string) Config {
		return Config{Cluster: cluster, NodeListen: node, Store: store}
	}
	for _, c := range []struct {
		cfg  Config
		want string // part of the error; empty: accepted
	}{
		{plain("", "", ""), ""},
		{plain("", "127.0.0.1:7000", pg), "--node-listen is for cluster mode"},
		{insecure(plain("", "", "")), "are for cluster mode"},
		{insecure(plain("etcd://127.0.0.1:2379", "127.0.0.1:7000", "")), "--cluster needs --store 'postgres://…'"},
		{insecure(plain("etcd://127.0.0.1:2379", "127.0.0.1:7000", "pebble")), "--cluster needs --store 'postgres://…'"},
		{insecure(plain("etcd://127.0.0.1:2379", "", pg)), "--cluster needs --node-listen"},
		{insecure(plain("http://127.0.0.1:2379", "127.0.0.1:7000", pg)), "use etcd://HOST:PORT"},
		{insecure(plain("etcd://127.0.0.1", "127.0.0.1:7000", pg)), "is not HOST:PORT"},
		{insecure(plain("etcd://127.0.0.1:2379", "0.0.0.0:7000", pg)), "not 0.0.0.0"},
		{insecure(plain("etcd://127.0.0.1:2379", "127.0.0.1:0", pg)), "not port 0"},
		// The node port's authentication.
		{plain("etcd://127.0.0.1:2379", "127.0.0.1:7000", pg), "--cluster needs the node port's mutual TLS"},
		{withTLS(plain("etcd://127.0.0.1:2379", "127.0.0.1:7000", pg), nodetls.Files{CA: node1.CA, Cert: node1.Cert}), "--cluster needs the node port's mutual TLS"},
		{insecure(plain("etcd://127.0.0.1:2379", "127.0.0.1:7000", pg)), ""},
		{insecure(plain("etcd://127.0.0.1:2379", "localhost:7000", pg)), ""},
		{insecure(plain("etcd://127.0.0.1:2379", "[::1]:7000", pg)), ""},
		{insecure(plain("etcd://10.0.0.1:2379", "10.0.0.5:7000", pg)), "--node-insecure only with a loopback --node-listen"},
		{insecure(plain("etcd://10.0.0.1:2379", "node1.internal:7000", pg)), "--node-insecure only with a loopback --node-listen"},
		{insecure(withTLS(plain("etcd://127.0.0.1:2379", "127.0.0.1:7000", pg), node1)), "not both"},
		{withTLS(plain("etcd://127.0.0.1:2379", "127.0.0.1:7000", pg), node1), ""},
		{withTLS(plain("etcd://10.0.0.1:2379,10.0.0.2:2379", "10.0.0.5:7000", pg), node1), ""},
		{withTLS(plain("etcd://10.0.0.1:2379", "node1.internal:7000", pg), node1), ""},
		{withTLS(plain("etcd://10.0.0.1:2379", "10.0.0.6:7000", pg), node1), "not 10.0.0.6, the host the other nodes dial"},
		{withTLS(plain("etcd://127.0.0.1:2379", "127.0.0.1:7000", pg), nodetls.Files{CA: node1.CA, Cert: nodetls.NodeFiles(others, 1).Cert, Key: nodetls.NodeFiles(others, 1).Key}), "is not one of the cluster CA"},
		{withTLS(plain("etcd://127.0.0.1:2379", "127.0.0.1:7000", pg), nodetls.Files{CA: node1.CA, Cert: node1.Cert, Key: nodetls.NodeFiles(certs, 2).Key}), "private key does not match"},
	} {
		s, err := parseCluster(c.cfg)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("parseCluster(%+v) = %v, want accepted", c.cfg, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("parseCluster(%+v) = %v, want an error with %q", c.cfg, err, c.want)
		case c.want == "" && c.cfg.Cluster != "" && (s == nil || len(s.endpoints) == 0 || s.port != 7000 || (s.tls == nil) != c.cfg.NodeInsecure):
			t.Errorf("parseCluster(%+v) = %+v", c.cfg, s)
		}
	}
}

// TestClusterCerts runs `kassa cluster certs`: it writes the CA and one
// certificate and key per node, keys 0600, naming the hosts asked for.
func TestClusterCerts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	var out, errOut bytes.Buffer
	if err := dispatch(t.Context(), []string{"cluster", "certs", dir, "--nodes", "3", "--host", "10.0.0.5,node.internal", "--host", "127.0.0.1"}, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	for _, name := range []string{"ca.crt", "ca.key", "node1.crt", "node1.key", "node2.crt", "node2.key", "node3.crt", "node3.key"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".key") && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %#o, want 0600", name, fi.Mode().Perm())
		}
	}
	c, err := nodetls.Load(nodetls.NodeFiles(dir, 3), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"10.0.0.5", "node.internal", "127.0.0.1"} {
		if err := c.CheckHost(h); err != nil {
			t.Error(err)
		}
	}
	if !strings.Contains(out.String(), "--node-tls-cert") {
		t.Errorf("output does not say how to use the files:\n%s", out.String())
	}
	for _, args := range [][]string{{"cluster"}, {"cluster", "certs", dir}, {"cluster", "certs", "--nodes", "2"}, {"cluster", "other"}} {
		if err := dispatch(t.Context(), args, &out, &errOut); err != errUsage {
			t.Errorf("kassa %v = %v, want a usage error", args, err)
		}
	}
	if err := dispatch(t.Context(), []string{"cluster", "certs", dir, "--nodes", "1"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second kassa cluster certs into %s = %v, want a refusal to replace the CA", dir, err)
	}
}

// TestParseEtcdURL: --cluster names etcd's TLS as ca=, cert= and key=;
// ca= alone or with both of the others, each once, nothing else.
func TestParseEtcdURL(t *testing.T) {
	certs := filepath.Join(t.TempDir(), "certs")
	if err := nodetls.Generate(certs, 1, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	f := nodetls.NodeFiles(certs, 1)
	for _, c := range []struct {
		url     string
		want    string // part of the error; empty: accepted
		withTLS bool
	}{
		{"etcd://127.0.0.1:2379", "", false},
		{"etcd://10.0.0.1:2379,10.0.0.2:2379?ca=" + f.CA, "", true},
		{"etcd://10.0.0.1:2379?ca=" + f.CA + "&cert=" + f.Cert + "&key=" + f.Key, "", true},
		{"etcd://10.0.0.1:2379?cert=" + f.Cert + "&key=" + f.Key, "need ca=FILE", false},
		{"etcd://10.0.0.1:2379?ca=" + f.CA + "&cert=" + f.Cert, "give cert= and key= together", false},
		{"etcd://10.0.0.1:2379?ca=" + f.CA + "&ca=" + f.CA, "give ca= once", false},
		{"etcd://10.0.0.1:2379?ca=", "give ca= once", false},
		{"etcd://10.0.0.1:2379?tls=1", `unknown parameter "tls"`, false},
		{"etcd://10.0.0.1:2379?ca=" + filepath.Join(certs, "missing.crt"), "etcd TLS", false},
		{"etcd://10.0.0.1:2379?ca=" + f.Cert + "&cert=" + f.Cert + "&key=" + f.Cert, "etcd TLS", false},
		{"etcd://10.0.0.1:2379#x", "use etcd://HOST:PORT", false},
	} {
		eps, cfg, err := parseEtcdURL("--cluster", c.url)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want accepted", c.url, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error with %q", c.url, err, c.want)
		case c.want == "" && (len(eps) == 0 || (cfg != nil) != c.withTLS):
			t.Errorf("%s: endpoints %v, TLS %v", c.url, eps, cfg != nil)
		}
	}
}
