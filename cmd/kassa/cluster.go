package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/cluster/clusterproviders/etcd"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kassapay/kassa/actors"
)

// clusterLease is the etcd lease of a node's membership: a node that
// stops answering (killed, stalled) leaves the member list this long
// after its last keep-alive, and its stores move to the others.
const clusterLease = 3 * time.Second

// clusterSettings is what --cluster and --node-listen say.
type clusterSettings struct {
	endpoints []string // etcd client addresses, host:port
	host      string
	port      int
}

// parseCluster checks the cluster flags: --cluster 'etcd://HOST:PORT'
// (several etcd members separated by commas) needs --node-listen
// HOST:PORT and the shared PostgreSQL store (store is the --store value),
// because the nodes of a cluster keep everything in one store.
func parseCluster(cluster, nodeListen, store string) (*clusterSettings, error) {
	if cluster == "" {
		if nodeListen != "" {
			return nil, fmt.Errorf("--node-listen is for cluster mode: give --cluster 'etcd://HOST:PORT' too")
		}
		return nil, nil
	}
	if !strings.HasPrefix(store, "postgres://") && !strings.HasPrefix(store, "postgresql://") {
		return nil, fmt.Errorf("--cluster needs --store 'postgres://…': the nodes of a cluster share one PostgreSQL store (the default Pebble store belongs to one node)")
	}
	u, err := url.Parse(cluster)
	if err != nil || u.Scheme != "etcd" || u.Host == "" || u.Path != "" && u.Path != "/" || u.User != nil {
		return nil, fmt.Errorf("--cluster %q: use etcd://HOST:PORT (etcd members separated by commas)", cluster)
	}
	s := &clusterSettings{}
	for _, ep := range strings.Split(u.Host, ",") {
		if _, _, err := net.SplitHostPort(ep); err != nil {
			return nil, fmt.Errorf("--cluster %q: etcd member %q is not HOST:PORT", cluster, ep)
		}
		s.endpoints = append(s.endpoints, ep)
	}
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
	return s, nil
}

// joinCluster makes sys a member of the cluster in etcd. etcd must
// answer first: protoactor-go's provider would wait for it for good. The
// channel it returns is closed when the node loses its membership (see
// watchMembership) while runCtx lasts.
func joinCluster(ctx, runCtx context.Context, sys *actors.System, s *clusterSettings, fence actors.Fence, log *slog.Logger) (<-chan struct{}, error) {
	client, err := clientv3.New(clientv3.Config{Endpoints: s.endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("--cluster: etcd client: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = client.Get(pingCtx, "/kassa/ping")
	cancel()
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("--cluster: etcd at %s does not answer: %w", strings.Join(s.endpoints, ","), err)
	}
	provider, err := etcd.NewWithConfig("/kassa", clientv3.Config{}, etcd.WithEtcdClient(client),
		etcd.WithKeepAliveTTL(clusterLease), etcd.WithRetryInterval(500*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("--cluster: etcd client: %w", err)
	}
	if err := sys.JoinCluster(actors.ClusterConfig{Name: "kassa", Provider: provider, Host: s.host, Port: s.port, Fence: fence}); err != nil {
		return nil, fmt.Errorf("--cluster: join through etcd at %s: %w", strings.Join(s.endpoints, ","), err)
	}
	log.Info("joined the cluster", "etcd", strings.Join(s.endpoints, ","), "node", net.JoinHostPort(s.host, strconv.Itoa(s.port)))
	// The provider's member key: base key, cluster name, "NAME@MEMBERID".
	key := "/kassa/kassa/kassa@" + sys.MemberID()
	go selfFence(runCtx, client, key, sys, time.Now())
	return watchMembership(runCtx, client, key, log), nil
}

// Self-fencing: the etcd client renews the membership lease every third
// of clusterLease, so the lease lasts at least clusterLease less that
// third past this node's last contact with etcd. A node that has not
// reached etcd for fenceAfter stops serving as any store's owner
// (System.Suspend) before its lease can expire and the others take its
// stores over, and serves again once etcd answers and its member key is
// still there (System.Resume); a key gone is an expulsion (watchMembership).
const (
	fenceAfter = clusterLease/2 - clusterLease/12 // 1.25 s of a 3 s lease
	fencePoll  = 250 * time.Millisecond
)

// selfFence checks etcd every fencePoll until ctx ends; last is the time
// the node last reached etcd.
func selfFence(ctx context.Context, client *clientv3.Client, key string, sys *actors.System, last time.Time) {
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

// errExpelled is why a node that lost its membership stops.
var errExpelled = errors.New("this node lost its cluster membership (it stalled, or lost etcd, for longer than its lease) and the other nodes took its stores over: exiting so that no stale actor keeps running; restart it to rejoin")

// watchMembership returns a channel that is closed when this node's
// member key in etcd disappears while ctx lasts: its lease expired, so
// the others removed it and will never take it back (protoactor-go
// blocks a member that left). A node that wakes from a stall finds out
// here; until it has stopped, the journal refuses whatever its stale
// actors write over the new owners' events.
func watchMembership(ctx context.Context, client *clientv3.Client, key string, log *slog.Logger) <-chan struct{} {
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
							log.Error("cluster membership lost", "key", key)
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

// membersOf is the membership fence of a cluster's shared store (nil for
// a store without one).
func membersOf(db storage) actors.Fence {
	if pg, ok := db.(pgStorage); ok {
		return pg.DB.Members()
	}
	return nil
}
