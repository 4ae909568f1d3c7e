package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kassapay/kassa/actors"
	kassahttp "github.com/kassapay/kassa/http"
	"github.com/kassapay/kassa/internal/etcdmember"
	"github.com/kassapay/kassa/internal/nodetls"
)

// clusterLease is the etcd lease of a node's membership: a node that
// stops answering (killed, stalled) leaves the member list this long
// after its last keep-alive, and its stores move to the others.
const clusterLease = 3 * time.Second

// clusterSettings is what --cluster, --node-listen and the --node-tls-*
// flags say.
type clusterSettings struct {
	endpoints []string // etcd client addresses, host:port
	// etcdTLS is the TLS of the connections to etcd (ca=, cert=, key=
	// in --cluster); nil: plaintext.
	etcdTLS *tls.Config
	host    string
	port    int
	// tls is the node port's mutual TLS; nil with --node-insecure.
	tls *nodetls.Config
	// revoked is the cluster's list of revoked node certificates that
	// tls checks (followRevocations keeps it up to date); nil with
	// --node-insecure.
	revoked *nodetls.Revocations
}

// parseCluster checks the cluster flags of c: --cluster 'etcd://HOST:PORT'
// (several etcd members separated by commas) needs --node-listen
// HOST:PORT and the shared PostgreSQL store, because the nodes of a
// cluster keep everything in one store; and the node port's mutual TLS
// (--node-tls-ca, --node-tls-cert, --node-tls-key), or --node-insecure
// on a loopback --node-listen.
func parseCluster(c Config) (*clusterSettings, error) {
	cluster, nodeListen, store := c.Cluster, c.NodeListen, c.Store
	if cluster == "" {
		if nodeListen != "" {
			return nil, fmt.Errorf("--node-listen is for cluster mode: give --cluster 'etcd://HOST:PORT' too")
		}
		if c.NodeTLSCA != "" || c.NodeTLSCert != "" || c.NodeTLSKey != "" || c.NodeInsecure {
			return nil, fmt.Errorf("--node-tls-ca, --node-tls-cert, --node-tls-key and --node-insecure are for cluster mode: give --cluster 'etcd://HOST:PORT' too")
		}
		return nil, nil
	}
	if !strings.HasPrefix(store, "postgres://") && !strings.HasPrefix(store, "postgresql://") {
		return nil, fmt.Errorf("--cluster needs --store 'postgres://…': the nodes of a cluster share one PostgreSQL store (the default Pebble store belongs to one node)")
	}
	endpoints, etcdTLS, err := parseEtcdURL("--cluster", cluster)
	if err != nil {
		return nil, err
	}
	s := &clusterSettings{endpoints: endpoints, etcdTLS: etcdTLS}
	if nodeListen == "" {
		return nil, fmt.Errorf("--cluster needs --node-listen HOST:PORT: the address other nodes reach this one at")
	}
	host, portText, err := net.SplitHostPort(nodeListen)
	port, perr := strconv.Atoi(portText)
	if err != nil || perr != nil || host == "" || port <= 0 || port > 65535 {
		return nil, fmt.Errorf("--node-listen %q: use HOST:PORT with the address other nodes reach this one at (not 0.0.0.0, not port 0)", nodeListen)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return nil, fmt.Errorf("--node-listen %q: use HOST:PORT with the address other nodes reach this one at (not 0.0.0.0, not port 0)", nodeListen)
	}
	s.host, s.port = host, port
	return s, parseNodeTLS(c, s)
}

// parseEtcdURL reads etcd://HOST:PORT[,HOST:PORT...][?ca=FILE[&cert=FILE&key=FILE]]
// (flag names the flag it came from, for the errors): the etcd members
// and, with ca=, the TLS of the connections to them. ca= is the CA that
// signed etcd's server certificates (etcd's --trusted-ca-file when it is
// the cluster CA of kassa cluster certs); cert= and key= are the client
// certificate an etcd with --client-cert-auth requires (a node's own
// node certificate will do). Once ca= is given the client speaks TLS
// only: there is no fall-back to plaintext.
func parseEtcdURL(flag, cluster string) ([]string, *tls.Config, error) {
	u, err := url.Parse(cluster)
	if err != nil || u.Scheme != "etcd" || u.Host == "" || u.Path != "" && u.Path != "/" || u.User != nil || u.Fragment != "" {
		return nil, nil, fmt.Errorf("%s %q: use etcd://HOST:PORT (etcd members separated by commas; ?ca=FILE&cert=FILE&key=FILE for TLS)", flag, cluster)
	}
	var endpoints []string
	for _, ep := range strings.Split(u.Host, ",") {
		if _, _, err := net.SplitHostPort(ep); err != nil {
			return nil, nil, fmt.Errorf("%s %q: etcd member %q is not HOST:PORT", flag, cluster, ep)
		}
		endpoints = append(endpoints, ep)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %q: %w", flag, cluster, err)
	}
	for k, v := range q {
		if k != "ca" && k != "cert" && k != "key" {
			return nil, nil, fmt.Errorf("%s %q: unknown parameter %q (etcd's TLS takes ca=, cert= and key=)", flag, cluster, k)
		}
		if len(v) != 1 || v[0] == "" {
			return nil, nil, fmt.Errorf("%s %q: give %s= once, with a file", flag, cluster, k)
		}
	}
	ca, cert, key := q.Get("ca"), q.Get("cert"), q.Get("key")
	switch {
	case ca == "" && cert == "" && key == "":
		return endpoints, nil, nil
	case ca == "":
		return nil, nil, fmt.Errorf("%s %q: cert= and key= need ca=FILE, the CA of etcd's server certificates", flag, cluster)
	case (cert == "") != (key == ""):
		return nil, nil, fmt.Errorf("%s %q: give cert= and key= together (etcd's --client-cert-auth), or neither", flag, cluster)
	}
	cfg, err := nodetls.LoadClient(nodetls.Files{CA: ca, Cert: cert, Key: key})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: etcd TLS: %w", flag, err)
	}
	return endpoints, cfg, nil
}

// parseNodeTLS loads the node port's mutual TLS into s, or checks that
// --node-insecure may do without it.
func parseNodeTLS(c Config, s *clusterSettings) error {
	given := 0
	for _, f := range []string{c.NodeTLSCA, c.NodeTLSCert, c.NodeTLSKey} {
		if f != "" {
			given++
		}
	}
	if c.NodeInsecure {
		if given > 0 {
			return fmt.Errorf("--node-insecure turns the node port's TLS off: give it or --node-tls-ca, --node-tls-cert and --node-tls-key, not both")
		}
		if !loopbackHost(s.host) {
			return fmt.Errorf("--node-insecure only with a loopback --node-listen (127.0.0.1, ::1, localhost), not %q: another machine's node must authenticate with --node-tls-ca, --node-tls-cert and --node-tls-key (kassa cluster certs makes them)", c.NodeListen)
		}
		return nil
	}
	if given < 3 {
		return fmt.Errorf("--cluster needs the node port's mutual TLS: --node-tls-ca FILE, --node-tls-cert FILE and --node-tls-key FILE (make them with kassa cluster certs DIR --nodes N --host HOST), or --node-insecure for a test cluster on loopback; without them anyone who reaches --node-listen could command the node")
	}
	cfg, err := nodetls.Load(nodetls.Files{CA: c.NodeTLSCA, Cert: c.NodeTLSCert, Key: c.NodeTLSKey}, time.Now())
	if err != nil {
		return fmt.Errorf("--node-tls-*: %w", err)
	}
	if err := cfg.CheckHost(s.host); err != nil {
		return fmt.Errorf("--node-tls-cert %s: %w", c.NodeTLSCert, err)
	}
	s.revoked = nodetls.NewRevocations()
	s.revoked.Guard(cfg)
	s.tls = cfg
	return nil
}

// loopbackHost says whether host is a loopback address or localhost.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// joinCluster makes sys a member of the cluster in etcd. etcd must
// answer first: the provider's start would wait for it up to its bound.
// While runCtx lasts the node then keeps its membership: it fences
// itself while cut off from etcd (selfFence), and joins again under a
// new member id when it lost its membership (keepMembership).
func joinCluster(ctx, runCtx context.Context, sys *actors.Cluster, s *clusterSettings, fence actors.Fence, log *slog.Logger) error {
	// Each membership has an etcd client and a provider of its own: a
	// node that joins again closes the old client, which ends whatever
	// the old provider still renews or watches.
	newMembership := func() (*clientv3.Client, actors.Provider, error) {
		client, err := newEtcdClient(s.endpoints, s.etcdTLS)
		if err != nil {
			return nil, nil, fmt.Errorf("--cluster: etcd client: %w", err)
		}
		return client, etcdmember.New(client, etcdBase, clusterLease, 500*time.Millisecond, log), nil
	}
	client, provider, err := newMembership()
	if err != nil {
		return err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = client.Get(pingCtx, "/kassa/ping")
	cancel()
	if err != nil {
		client.Close()
		return fmt.Errorf("--cluster: etcd at %s does not answer: %w", strings.Join(s.endpoints, ","), err)
	}
	if s.etcdTLS == nil && slices.ContainsFunc(s.endpoints, func(ep string) bool { h, _, _ := net.SplitHostPort(ep); return !loopbackHost(h) }) {
		log.Warn("etcd is reached without TLS (no ca= in --cluster): whoever reaches it can change the member list and the revoked certificates")
	}
	if s.revoked != nil {
		// A client of its own: the membership's is closed when the
		// node joins again.
		rc, err := newEtcdClient(s.endpoints, s.etcdTLS)
		if err != nil {
			client.Close()
			return fmt.Errorf("--cluster: etcd client: %w", err)
		}
		if err := followRevocations(ctx, runCtx, rc, s.revoked, log); err != nil {
			rc.Close()
			client.Close()
			return err
		}
	}
	cc := actors.ClusterConfig{Name: "kassa", Provider: provider, Host: s.host, Port: s.port, Insecure: s.tls == nil, Fence: fence}
	if s.tls != nil {
		cc.ServerTLS, cc.ClientTLS = s.tls.Server, s.tls.Client
	} else {
		log.Warn("the node port runs without TLS (--node-insecure): any process on this machine can command this node")
	}
	if err := sys.Join(cc); err != nil {
		client.Close()
		return fmt.Errorf("--cluster: join through etcd at %s: %w", strings.Join(s.endpoints, ","), err)
	}
	log.Info("joined the cluster", "etcd", strings.Join(s.endpoints, ","), "node", net.JoinHostPort(s.host, strconv.Itoa(s.port)), "member", sys.MemberID())
	go keepMembership(runCtx, client, sys, newMembership, log)
	return nil
}

// newEtcdClient is a node's etcd client (etcdmember.ClientConfig: it
// reaches an etcd back from an outage soon enough to renew the lease),
// over TLS when tlsCfg is set.
func newEtcdClient(endpoints []string, tlsCfg *tls.Config) (*clientv3.Client, error) {
	cfg := etcdmember.ClientConfig(endpoints, clusterLease)
	cfg.TLS = tlsCfg
	return clientv3.New(cfg)
}

// etcdBase is where the cluster's membership lives in etcd.
const etcdBase = "/kassa"

// memberKey is the member key of member id in etcd (etcdmember.Key).
func memberKey(id string) string { return etcdmember.Key(etcdBase, "kassa", id) }

// rejoinRetry is how soon a node tries again to join its cluster after
// a failed attempt.
const rejoinRetry = time.Second

// keepMembership watches this node's membership until ctx ends. When
// it is lost (the node's etcd lease expired: etcd was away, or the node
// was cut off from it or stalled, for longer than clusterLease), the
// others have dropped its member id for good and taken its stores over:
// the node steps down at once (it serves as no store's owner and its
// store actors stop) and joins again under a new member id, with a new
// lease, retrying until it is in (actors.Cluster.Rejoin). It does not exit:
// reads go on being answered meanwhile, and what needs an owner answers
// 503 until it is back.
func keepMembership(ctx context.Context, client *clientv3.Client, sys *actors.Cluster,
	newMembership func() (*clientv3.Client, actors.Provider, error), log *slog.Logger) {
	for {
		key := memberKey(sys.MemberID())
		mctx, cancel := context.WithCancel(ctx)
		go selfFence(mctx, client, key, sys, time.Now())
		lost := watchMembership(mctx, client, key)
		select {
		case <-ctx.Done():
			cancel()
			return
		case <-lost:
		}
		cancel()
		log.Error("cluster membership lost (this node stalled, or lost etcd, for longer than its lease, and the others took its stores over): stepping down and joining again under a new member id", "key", key)
		sys.StepDown()
		client.Close() // the old membership renews nothing from now on
		for ctx.Err() == nil {
			c, p, err := newMembership()
			if err == nil {
				dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
				_, _ = c.Delete(dctx, key) // the old member key, should it be back
				dcancel()
				err = sys.Rejoin(ctx, p)
			}
			if err == nil {
				client = c
				log.Info("joined the cluster again", "member", sys.MemberID())
				break
			}
			if c != nil {
				c.Close()
			}
			log.Error("join the cluster again", "err", err, "retry_in", rejoinRetry)
			select {
			case <-ctx.Done():
			case <-time.After(rejoinRetry):
			}
		}
	}
}

// Self-fencing: the etcd client renews the membership lease every third
// of clusterLease, so the lease lasts at least clusterLease less that
// third past this node's last contact with etcd. A node that has not
// reached etcd for fenceAfter stops serving as any store's owner
// (actors.Cluster.Suspend) before its lease can expire and the others take its
// stores over, and serves again once etcd answers and its member key is
// still there (System.Resume); a key gone is an expulsion (watchMembership).
const (
	fenceAfter = clusterLease/2 - clusterLease/12 // 1.25 s of a 3 s lease
	fencePoll  = 250 * time.Millisecond
)

// selfFence checks etcd every fencePoll until ctx ends; last is the time
// the node last reached etcd.
func selfFence(ctx context.Context, client *clientv3.Client, key string, sys *actors.Cluster, last time.Time) {
	t := time.NewTicker(fencePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sent := time.Now()
		c, cancel := context.WithTimeout(ctx, fenceAfter)
		res, err := client.Get(c, key)
		cancel()
		if err == nil && len(res.Kvs) > 0 {
			last = sent
			sys.Resume()
			continue
		}
		if time.Since(last) >= fenceAfter {
			sys.Suspend()
		}
	}
}

// watchMembership returns a channel that is closed when this node's
// member key in etcd disappears while ctx lasts: its lease expired, so
// the others removed it and will never take it back (protoactor-go
// blocks a member that left). A node that wakes from a stall finds out
// here; until it has stepped down, the membership fence and the journal
// refuse whatever its stale actors write.
func watchMembership(ctx context.Context, client *clientv3.Client, key string) <-chan struct{} {
	expelled := make(chan struct{})
	go func() {
		for ctx.Err() == nil {
			res, err := client.Get(ctx, key)
			if err != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			if len(res.Kvs) == 0 {
				close(expelled)
				return
			}
			for w := range client.Watch(ctx, key, clientv3.WithRev(res.Header.Revision+1)) {
				for _, ev := range w.Events {
					if ev.Type == clientv3.EventTypeDelete {
						if ctx.Err() == nil {
							close(expelled)
						}
						return
					}
				}
				if w.Err() != nil {
					break // watch again from a fresh read
				}
			}
		}
	}()
	return expelled
}

// ticketKey is the key of the pay-link tickets (kassahttp.Deps.TicketKey),
// made once and kept in the store: the nodes of a cluster share the
// PostgreSQL store, so a ticket one node issued holds on every other
// behind the same load balancer, and on any node after a restart. The
// first node to store it wins (LoadOrStore); the others take its key.
func ticketKey(ctx context.Context, db storage) ([]byte, error) {
	key, err := db.State("http").LoadOrStore(ctx, "paylink-ticket-key", kassahttp.NewTicketKey())
	if err != nil {
		return nil, fmt.Errorf("the pay-link ticket key: %w", err)
	}
	if len(key) < 32 {
		return nil, fmt.Errorf("the pay-link ticket key in the store is %d bytes, want 32", len(key))
	}
	return key, nil
}

// membersOf is the membership fence of a cluster's shared store (nil for
// a store without one).
func membersOf(db storage) actors.Fence {
	if pg, ok := db.(pgStorage); ok {
		return pg.DB.Members()
	}
	return nil
}

const clusterUsage = `usage: kassa cluster certs DIR --nodes N [--host HOST]...
       kassa cluster revoke --cluster 'etcd://HOST:PORT' (--cert FILE | --serial HEX)
  make a cluster CA and a certificate for each of N nodes in DIR:
  DIR/ca.crt, DIR/ca.key (keep it offline), DIR/node1.crt, DIR/node1.key, ...
  Give node I --node-tls-ca DIR/ca.crt --node-tls-cert DIR/nodeI.crt
  --node-tls-key DIR/nodeI.key. Every certificate names each --host (a DNS
  name or an IP address, repeatable or comma-separated; default localhost,
  127.0.0.1 and ::1): the host of each node's --node-listen must be one.
  revoke: every node refuses that node certificate from then on (kassa
  cluster revoke --help).`

// runCluster is `kassa cluster certs DIR --nodes N [--host HOST]...` and
// `kassa cluster revoke` (runRevoke).
func runCluster(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "revoke" {
		return runRevoke(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "certs" {
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
			fmt.Fprintln(stdout, clusterUsage)
			return errHelpShown
		}
		fmt.Fprintln(stderr, clusterUsage)
		return errUsage
	}
	fs := flag.NewFlagSet("kassa cluster certs", flag.ContinueOnError)
	nodes := fs.Int("nodes", 0, "how many node certificates to make")
	var hosts []string
	fs.Func("host", "a DNS name or IP address the node certificates name (repeatable, or comma-separated)", func(v string) error {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h != "" {
				hosts = append(hosts, h)
			}
		}
		return nil
	})
	rest, err := parseFlags(fs, args[1:], func(w io.Writer) {
		fmt.Fprintln(w, clusterUsage+"\n\nflags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}, stdout, stderr)
	if err != nil {
		return err
	}
	if len(rest) != 1 || *nodes < 1 || *nodes > 1000 {
		fmt.Fprintln(stderr, clusterUsage)
		return errUsage
	}
	dir := rest[0]
	if err := nodetls.Generate(dir, *nodes, hosts, time.Now()); err != nil {
		return fmt.Errorf("cluster certs: %w", err)
	}
	if len(hosts) == 0 {
		hosts = nodetls.DefaultHosts
	}
	fmt.Fprintf(stdout, "wrote %s: a cluster CA and %d node certificates for %s\n", dir, *nodes, strings.Join(hosts, ", "))
	fmt.Fprintf(stdout, "node I: --node-tls-ca %s --node-tls-cert %s --node-tls-key %s\n",
		filepath.Join(dir, "ca.crt"), filepath.Join(dir, "nodeI.crt"), filepath.Join(dir, "nodeI.key"))
	fmt.Fprintf(stdout, "keep %s offline: it makes certificates that can command the cluster\n", filepath.Join(dir, "ca.key"))
	return nil
}
