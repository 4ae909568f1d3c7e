package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kassapay/kassa"
	chainrpc "github.com/kassapay/kassa/chain/rpc"
	"github.com/kassapay/kassa/lease"
	"github.com/kassapay/kassa/lightning/lnd"
	"github.com/kassapay/kassa/metrics"
	"github.com/kassapay/kassa/persistence/postgres"
)

// roleLease is the lease of a cluster's roles (the chain and Lightning
// watchers, the forwarder): when the node that holds a role dies, another
// takes it at most this long after its last renewal, plus one retry
// (roleLease/3). Renewals come every roleLease/3.
const roleLease = 6 * time.Second

// roles are the lease runners of a cluster's node; empty on a single node.
type roles struct {
	runners []*lease.Runner
	wg      sync.WaitGroup
}

// leaseStore is a store that keeps leases (PostgreSQL).
type leaseStore interface{ Leases() postgres.Leases }

// startWatchers starts the chain and Lightning watchers. On a single node
// (Pebble, or PostgreSQL without --cluster) they start at once, as
// always. In cluster mode the real ones (chain/rpc, lnd) each run under a
// lease.Runner, on one node at a time, writing their cursors only
// through the lease's fenced store; the simulated ones keep their state
// in the store and run on every node. Events go to the owning node of
// the store through the actors' lookup seam either way. The forwarder
// (with lnd) runs under a lease of its own in cluster mode.
func (m *Main) startWatchers(ctx context.Context, cluster bool, chain kassa.Chain, lightning kassa.Lightning) error {
	leases, ok := m.db.(leaseStore)
	if !cluster || !ok {
		if err := chain.Start(ctx, m.sys.Service.HandleChainEvent); err != nil {
			return fmt.Errorf("start chain backend: %w", err)
		}
		if err := lightning.Start(ctx, m.sys.Service.HandleLightningEvent); err != nil {
			return fmt.Errorf("start Lightning backend: %w", err)
		}
		return nil
	}
	holder := nodeHolder()
	if c, ok := chain.(*chainrpc.Chain); ok {
		m.roles.add(m, leases.Leases(), lease.RoleChainWatcher, holder, func(ctx context.Context, kv kassa.KeyValue) error {
			return c.Watch(ctx, kv, m.sys.Service.HandleChainEvent)
		})
	} else if err := chain.Start(ctx, m.sys.Service.HandleChainEvent); err != nil {
		return fmt.Errorf("start chain backend: %w", err)
	}
	if n, ok := lightning.(*lnd.Node); ok {
		m.roles.add(m, leases.Leases(), lease.RoleLightningWatcher, holder, func(ctx context.Context, kv kassa.KeyValue) error {
			return n.Watch(ctx, kv, m.sys.Service.HandleLightningEvent)
		})
	} else if err := lightning.Start(ctx, m.sys.Service.HandleLightningEvent); err != nil {
		return fmt.Errorf("start Lightning backend: %w", err)
	}
	if m.forwarder != nil {
		// Forwards are paid by one node at a time, every write fenced
		// (actors.Forwarder.Lead).
		m.roles.add(m, leases.Leases(), lease.RoleForwarder, holder, m.forwarder.Lead)
	}
	for _, r := range m.roles.runners {
		m.roles.wg.Add(1)
		go func() {
			defer m.roles.wg.Done()
			r.Run(ctx)
		}()
	}
	return nil
}

// add makes the runner of role.
func (r *roles) add(m *Main, store lease.Store, role, holder string, work func(context.Context, kassa.KeyValue) error) {
	r.runners = append(r.runners, &lease.Runner{
		Store: store, Role: role, Holder: holder, TTL: roleLease, Clock: m.Clock, Log: m.log, Work: work,
	})
}

// statuses says which roles this node holds, at which epoch.
func (r *roles) statuses() []lease.Status {
	out := make([]lease.Status, 0, len(r.runners))
	for _, run := range r.runners {
		out = append(out, run.Status())
	}
	return out
}

// wait waits, at most d, until the runners stopped and released their
// leases (their context ended), so that another node need not wait for
// the leases to expire.
func (r *roles) wait(d time.Duration) {
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// nodeRoles is what health says of this node of a cluster: its
// membership and store grains, and the roles it holds.
type nodeRoles struct {
	Address string   `json:"address"`
	Members []string `json:"members"`
	Stores  int      `json:"stores"`
	// Owning and Fenced: whether this node serves as its stores'
	// owner, and why not (actors.ClusterHealth).
	Owning bool   `json:"owning"`
	Fenced string `json:"fenced,omitempty"`
	// Leases are the roles that run on one node at a time, and whether
	// this node holds each (with the lease's epoch).
	Leases []lease.Status `json:"leases"`
}

var (
	leaseHeld  = prometheus.NewDesc("kassa_lease_held", "1 while this node holds the role's lease (cluster mode).", []string{"role"}, nil)
	leaseEpoch = prometheus.NewDesc("kassa_lease_epoch", "Epoch of the role's lease this node holds (0 while it holds none).", []string{"role"}, nil)
)

// collector exposes, per role, whether this node holds its lease and
// the lease's epoch; nothing on a single node.
func (r *roles) collector() prometheus.Collector {
	return metrics.Collector(metrics.Func{
		Descs: []*prometheus.Desc{leaseHeld, leaseEpoch},
		Collect: func(_ context.Context, ch chan<- prometheus.Metric) {
			for _, s := range r.statuses() {
				held := 0.0
				if s.Held {
					held = 1
				}
				ch <- metrics.Gauge(leaseHeld, held, s.Role)
				ch <- metrics.Gauge(leaseEpoch, float64(s.Epoch), s.Role)
			}
		},
	})
}

// clusterReport reports this node of a cluster.
func (m *Main) clusterReport() any {
	h := nodeRoles{Leases: m.roles.statuses()}
	if c := m.sys.Cluster.Health(); c != nil {
		h.Address, h.Members, h.Stores, h.Owning, h.Fenced = c.Address, c.Members, c.Stores, c.Owning, c.Fenced
	}
	if h.Members == nil {
		h.Members = []string{}
	}
	return h
}
