// Package etcdmember is the cluster provider of a Kassa node: the
// membership of protoactor-go's cluster, kept in etcd. Each member puts
// one key under a lease it renews, BASE/CLUSTER/CLUSTER@MEMBERID, whose
// value is the member's address and kinds in the JSON of protoactor-go's
// own etcd provider (so that nodes of either can read each other's), and
// watches the cluster's keys: every change is a new topology for the
// cluster's member list.
//
// It replaces protoactor-go's etcd provider, whose start could crash a
// node ("concurrent map read and map write": its leadership check read
// the member's metadata while its keep-alive goroutine wrote it), and
// which put its member key back under a new lease when the old one had
// expired. Here a lease etcd still holds after an outage (a restarted
// etcd extends its leases) is renewed again, and a lease that expired is
// the end of the membership: the
// key is gone, the others dropped the member for good, and the node joins
// again as a new member with a new provider (cmd/kassa, keepMembership).
package etcdmember

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// stopTimeout bounds what Shutdown waits for etcd: a node stopping while
// etcd is away does not hang, and its key goes with its lease.
const stopTimeout = 2 * time.Second

// defaultStartTimeout bounds Start's calls to etcd.
const defaultStartTimeout = 10 * time.Second

// ClientConfig is the etcd client configuration of a member whose lease
// is ttl. The client tries to reach an etcd that went away at least
// every sixth of the lease: with gRPC's default backoff (1 s, 1.6 times
// more after each failed attempt, up to 2 min) a member came back to an
// etcd returning from an outage of a few leases seconds late, when its
// lease had run out. An attempt that hangs (etcd cut off, not refusing)
// is given up after half a lease.
func ClientConfig(endpoints []string, ttl time.Duration) clientv3.Config {
	return clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: ttl / 6},
			MinConnectTimeout: ttl / 2,
		})}}
}

// Provider is one membership of one node: a node that joins again uses a
// new Provider. It implements cluster.ClusterProvider.
type Provider struct {
	client *clientv3.Client
	base   string
	ttl    time.Duration
	retry  time.Duration
	log    *slog.Logger
	// startTimeout bounds Start's calls to etcd (a test shortens it).
	startTimeout time.Duration

	mu      sync.Mutex
	lease   clientv3.LeaseID
	key     string
	cancel  context.CancelFunc
	done    chan struct{} // closed when the watch has stopped
	stopped bool
}

// New returns a provider that keeps the membership under base in etcd
// through client, with a lease of ttl (rounded up to whole seconds, as
// etcd grants them); retry is the pause before the watch starts again
// after etcd failed it. The caller owns client; made with ClientConfig,
// it renews the lease after an outage in time.
func New(client *clientv3.Client, base string, ttl, retry time.Duration, log *slog.Logger) *Provider {
	if log == nil {
		log = slog.Default()
	}
	return &Provider{client: client, base: strings.TrimSuffix(base, "/"), ttl: ttl, retry: retry, log: log,
		startTimeout: defaultStartTimeout}
}

// node is a member's value in etcd: the fields of protoactor-go's etcd
// provider's Node.
type node struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Host    string   `json:"host"`
	Address string   `json:"address"`
	Port    int      `json:"port"`
	Kinds   []string `json:"kinds"`
	Alive   bool     `json:"alive"`
}

func (n *node) member() *cluster.Member {
	host := cmp.Or(n.Host, n.Address)
	kinds := n.Kinds
	if kinds == nil {
		kinds = []string{}
	}
	return &cluster.Member{Id: n.ID, Host: host, Port: int32(n.Port), Kinds: kinds}
}

// Self is what a member says of itself.
type Self struct {
	Cluster string // the cluster's name
	ID      string // the actor system's id
	Address string // host:port of its node port
	Kinds   []string
}

// StartMember registers c's node as a member and starts watching the
// others: c's member list learns of every change.
func (p *Provider) StartMember(c *cluster.Cluster) error {
	self := Self{Cluster: c.Config.Name, ID: c.ActorSystem.ID, Address: c.ActorSystem.Address(), Kinds: c.GetClusterKinds()}
	return p.Start(self, c.MemberList.UpdateClusterTopology)
}

// StartClient is not supported: every Kassa node is a member.
func (p *Provider) StartClient(*cluster.Cluster) error {
	return errors.New("etcdmember: a cluster client that is not a member is not supported")
}

// Key is the member key of member id (the actor system's) in cluster
// name under base.
func Key(base, name, id string) string {
	return strings.TrimSuffix(base, "/") + "/" + name + "/" + name + "@" + id
}

// Start registers self under a new lease, publishes the members it finds
// (self among them) and then every change, until Shutdown. It returns
// once self is registered and the first topology published.
func (p *Provider) Start(self Self, publish func(cluster.Members)) error {
	host, portText, err := net.SplitHostPort(self.Address)
	if err != nil {
		return fmt.Errorf("etcdmember: node address %q: %w", self.Address, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return fmt.Errorf("etcdmember: node address %q: %w", self.Address, err)
	}
	id := self.Cluster + "@" + self.ID
	me := node{ID: id, Name: id, Host: host, Address: host, Port: port, Kinds: self.Kinds, Alive: true}
	value, err := json.Marshal(me)
	if err != nil {
		return err
	}
	prefix := p.base + "/" + self.Cluster + "/"
	key := Key(p.base, self.Cluster, self.ID)

	ctx, cancel := context.WithCancel(context.Background())
	ok := false
	defer func() {
		if !ok {
			cancel()
		}
	}()
	setup, done := context.WithTimeout(ctx, p.startTimeout)
	defer done()
	secs := int64((p.ttl + time.Second - 1) / time.Second)
	grant, err := p.client.Grant(setup, max(secs, 1))
	if err != nil {
		return fmt.Errorf("etcdmember: grant a lease: %w", err)
	}
	revoke := func() {
		rctx, rdone := context.WithTimeout(context.Background(), stopTimeout)
		defer rdone()
		_, _ = p.client.Revoke(rctx, grant.ID)
	}
	if _, err := p.client.Put(setup, key, string(value), clientv3.WithLease(grant.ID)); err != nil {
		revoke()
		return fmt.Errorf("etcdmember: put the member key: %w", err)
	}
	members, rev, err := p.list(setup, prefix)
	if err != nil {
		revoke()
		return err
	}
	alive, err := p.client.KeepAlive(ctx, grant.ID)
	if err != nil {
		revoke()
		return fmt.Errorf("etcdmember: keep the lease alive: %w", err)
	}
	members[key] = me.member()
	publish(sorted(members))

	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		revoke()
		return errors.New("etcdmember: shut down")
	}
	p.lease, p.key, p.cancel, p.done = grant.ID, key, cancel, make(chan struct{})
	p.mu.Unlock()
	ok = true
	go p.renew(ctx, grant.ID, key, alive)
	go p.watch(ctx, prefix, key, me.member(), members, rev, publish)
	return nil
}

// renew keeps the lease alive until ctx ends or the lease is gone. The
// client closes alive when etcd has not answered for a whole lease
// (etcd stopped, or cut off); etcd may still hold the lease when it is
// back (a restarted etcd extends its leases), and then the membership
// goes on under it: renew asks, every retry, how long the lease has
// left, and renews it again while it is there. A lease etcd no longer
// holds is the end of the membership: its key is gone with it, and
// nothing puts it back.
func (p *Provider) renew(ctx context.Context, lease clientv3.LeaseID, key string, alive <-chan *clientv3.LeaseKeepAliveResponse) {
	for {
		for range alive {
		}
		for {
			if ctx.Err() != nil {
				return
			}
			ttl, err := p.client.TimeToLive(ctx, lease)
			if err == nil && ttl.TTL <= 0 {
				p.log.Warn("cluster membership lease ended", "key", key)
				return
			}
			if err == nil {
				if alive, err = p.client.KeepAlive(ctx, lease); err == nil {
					break
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(p.retry):
			}
		}
	}
}

// list reads the members under prefix, and the revision read at.
func (p *Provider) list(ctx context.Context, prefix string) (map[string]*cluster.Member, int64, error) {
	res, err := p.client.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("etcdmember: read the members: %w", err)
	}
	members := make(map[string]*cluster.Member, len(res.Kvs))
	for _, kv := range res.Kvs {
		if m, ok := p.decode(kv.Key, kv.Value); ok {
			members[string(kv.Key)] = m
		}
	}
	return members, res.Header.Revision, nil
}

func (p *Provider) decode(key, value []byte) (*cluster.Member, bool) {
	var n node
	if err := json.Unmarshal(value, &n); err != nil || n.ID == "" {
		p.log.Error("cluster membership: a member key that is not a member", "key", string(key), "err", err)
		return nil, false
	}
	return n.member(), true
}

// watch publishes every change under prefix after rev until ctx ends.
// Self stays in every topology: its key gone is the caller's to notice
// (the membership is over), not a member leaving. When etcd ends the
// watch (compaction, an outage) it reads the members again.
func (p *Provider) watch(ctx context.Context, prefix, self string, me *cluster.Member, members map[string]*cluster.Member, rev int64, publish func(cluster.Members)) {
	defer close(p.doneChan())
	for ctx.Err() == nil {
		for w := range p.client.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
			if w.Err() != nil {
				break
			}
			changed := false
			for _, ev := range w.Events {
				k := string(ev.Kv.Key)
				if k == self {
					continue
				}
				switch ev.Type {
				case clientv3.EventTypePut:
					if m, ok := p.decode(ev.Kv.Key, ev.Kv.Value); ok {
						members[k], changed = m, true
					}
				case clientv3.EventTypeDelete:
					if _, ok := members[k]; ok {
						delete(members, k)
						changed = true
					}
				}
			}
			rev = w.Header.Revision
			if changed && ctx.Err() == nil {
				publish(sorted(members))
			}
		}
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(p.retry):
		}
		fresh, r, err := p.list(ctx, prefix)
		if err != nil {
			p.log.Warn("cluster membership: watch ended, and the members cannot be read", "err", err)
			continue // from the same revision
		}
		fresh[self] = me
		members, rev = fresh, r
		publish(sorted(members))
	}
}

func (p *Provider) doneChan() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// sorted is the topology: the members in the order of their ids.
func sorted(members map[string]*cluster.Member) cluster.Members {
	out := make(cluster.Members, 0, len(members))
	for _, m := range members {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *cluster.Member) int { return strings.Compare(a.Id, b.Id) })
	return out
}

// Shutdown ends the membership: it stops the watch and the renewal and
// revokes the lease, which deletes the member key (waiting at most
// stopTimeout for etcd; a key it could not delete goes with its lease).
func (p *Provider) Shutdown(bool) error {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return nil
	}
	p.stopped = true
	cancel, done, lease := p.cancel, p.done, p.lease
	p.mu.Unlock()
	if cancel == nil {
		return nil // never started
	}
	cancel()
	<-done
	ctx, stop := context.WithTimeout(context.Background(), stopTimeout)
	defer stop()
	if _, err := p.client.Revoke(ctx, lease); err != nil {
		return fmt.Errorf("etcdmember: revoke the membership lease: %w", err)
	}
	return nil
}
