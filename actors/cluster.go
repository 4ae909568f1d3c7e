package actors

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"go.opentelemetry.io/otel/trace"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/protos"
)

// KindStore is the cluster kind (grain) of a store. A store's invoice
// actors and its webhook endpoint actors run on the node that runs the
// store, so a store grain places all three (docs/decisions.md, "Cluster
// mode").
const KindStore = "store"

// Provider is a cluster membership provider (etcd in production). One
// serves one membership: Rejoin takes a new one.
type Provider = cluster.ClusterProvider

// ClusterConfig is how a node joins a protoactor-go cluster (Cluster.Join).
type ClusterConfig struct {
	// Name is the cluster's name; nodes with the same name and provider
	// form one cluster.
	Name string
	// Provider is the membership provider: etcd in production, the
	// in-memory test provider in tests.
	Provider cluster.ClusterProvider
	// Host and Port are where this node listens for other nodes, and
	// the address it tells them to dial (a port of 0 picks a free one).
	Host string
	Port int
	// Fence, when set, makes every commit of this node's actors
	// conditional on its membership, checked in the commit's own
	// transaction: the node joins it before it joins the cluster, and
	// expels each member it sees leave before it takes that member's
	// stores over (docs/decisions.md, "Membership fence").
	Fence Fence
	// ServerTLS and ClientTLS are the mutual TLS of the node port: the
	// server's configuration (it requires a client certificate of the
	// cluster CA) and the one this node dials the others with
	// (internal/nodetls). Without them Join refuses to start
	// unless Insecure is set, for tests on one machine.
	ServerTLS, ClientTLS *tls.Config
	Insecure             bool
}

// Fence admits the members of a cluster to commit, and expels them.
type Fence interface {
	// Join admits member: its commits go through until it is expelled.
	Join(ctx context.Context, member string) error
	// Commit commits b for member, in one transaction with the check
	// that member is admitted; kassa.ErrNotMember, and nothing
	// written, when it is not.
	Commit(ctx context.Context, member string, b kassa.Batch) error
	// Expel refuses every later commit of member, once its commits in
	// flight are done, and frees the webhook deliveries member claims
	// (a member claims under its member id: claimHolder).
	Expel(ctx context.Context, member string) error
	// FreeDeadlineClaimsExcept frees the invoice deadline claims of
	// every holder that is not one of members, and says how many it
	// freed: those of a run of the cluster that no member saw leave
	// (every node killed at once).
	FreeDeadlineClaimsExcept(ctx context.Context, members []string) (int, error)
}

// Cluster is a node's part in its cluster: its membership (Join,
// Rejoin, and the halts of Suspend, Expelled and StepDown, which stop
// the Runtime's actors), the placement of the store grains, the routing
// of a store call to the node that runs the store and the serving of the
// calls other nodes route here, the membership fence every commit goes
// through, and the history of the member lists (StoreOwner). A node that
// never joins is a cluster of one: every store is its own, and its
// commits go straight to the journal. It decides no business rule: a
// call routed here runs through its handler (the Service).
type Cluster struct {
	// rt is the node's actor runtime, whose actors the cluster places,
	// halts and stops.
	rt     *Runtime
	cfg    *Config
	log    *slog.Logger
	tracer trace.Tracer
	// handler runs the store calls other nodes route to this node (the
	// Service); NewSystem sets it.
	handler callHandler
	// state is set by Join (and again by Rejoin); nil on a single node.
	state atomic.Pointer[clusterState]
	// topologies are the member lists this node saw (StoreOwner).
	topologies topologyHistory
	// fence, in a cluster that has one, admits this node's commits
	// (ClusterConfig.Fence).
	fence Fence
	// calls holds the replies of recent routed calls by request id.
	calls callMemo
}

// callHandler runs a store call that another node routed to this one,
// which runs its store: it decodes the call and runs the command's body
// (Service.dispatchCall).
type callHandler interface {
	dispatchCall(context.Context, *protos.StoreCall) (*protos.StoreCallReply, error)
}

// clusterState is what the node keeps of its cluster; nil on a single
// node.
func (c *Cluster) clusterState() *clusterState { return c.state.Load() }

// clusterState is what a node in cluster mode keeps of one
// membership: a node that joins again (Rejoin) gets a new one.
type clusterState struct {
	c *cluster.Cluster
	// id is the member id: the actor system's, and the one this node
	// commits under through the membership fence.
	id string
	// cc is the configuration it joined with, for Rejoin.
	cc ClusterConfig
	// left is set once the membership was given up (Rejoin).
	left atomic.Bool

	mu      sync.RWMutex
	rdv     *cluster.Rendezvous
	members []string // addresses, as of the last topology event
	// memberLeft is closed when a member leaves (and replaced): calls
	// in flight to it are sent again (sendCall). viewChanged is closed
	// at every topology event (and replaced): a grain's activation
	// asked of a node that no longer owns the store is asked again of
	// the one that does (activate).
	memberLeft, viewChanged chan struct{}
	// timeout bounds an activation (the node's request timeout).
	timeout time.Duration
	// clock is the node's (Config.Clock).
	clock kassa.Clock
	// afterTopology, set by a test, runs after this node took a
	// topology event in (onTopology) and before protoactor-go's own
	// handlers of it do: a thread descheduled there on a loaded
	// machine.
	afterTopology atomic.Pointer[func()]
	// grains holds the store grains active on this node: store id →
	// the grain's PID.
	grains sync.Map
}

// Join starts this node's cluster member: remoting on cc.Host and
// cc.Port, the provider's membership, disthash placement, and the store
// kind. From then on a call about a store another node owns is sent to
// that node as a protos.StoreCall. Call it before Recover.
func (c *Cluster) Join(cc ClusterConfig) error {
	if cc.Provider == nil {
		return errors.New("cluster: no membership provider")
	}
	if cc.Name == "" {
		cc.Name = "kassa"
	}
	if cc.Fence != nil {
		if err := c.joinFence(cc.Fence); err != nil {
			return err
		}
	}
	st, err := c.startMember(cc)
	if err != nil {
		c.state.Store(nil)
		if st != nil {
			st.c.Shutdown(false)
		}
	}
	return err
}

// startMember starts a cluster member on the node's actor system and
// makes it the node's membership.
func (c *Cluster) startMember(cc ClusterConfig) (st *clusterState, err error) {
	as := c.rt.actorSystem()
	remoting, err := c.remoteConfig(cc)
	if err != nil {
		return nil, err
	}
	kind := cluster.NewKind(KindStore, actor.PropsFromProducer(func() actor.Actor { return &storeGrain{cl: c} }))
	lookup := &placement{IdentityLookup: disthash.New()}
	cfg := cluster.Configure(cc.Name, cc.Provider, lookup, remoting,
		cluster.WithKinds(kind), cluster.WithRequestTimeout(c.cfg.RequestTimeout))
	member := cluster.New(as, cfg)
	st = &clusterState{c: member, id: as.ID, cc: cc, rdv: cluster.NewRendezvous(),
		memberLeft: make(chan struct{}), viewChanged: make(chan struct{}), timeout: c.cfg.RequestTimeout,
		clock: c.cfg.Clock}
	lookup.st = st
	c.state.Store(st)
	as.EventStream.Subscribe(func(ev any) {
		if t, ok := ev.(*cluster.ClusterTopology); ok && c.clusterState() == st {
			c.onTopology(st, t)
		}
	})
	defer func() {
		// StartMember panics when the provider fails (etcd unreachable).
		if r := recover(); r != nil {
			err = fmt.Errorf("cluster: start member: %v", r)
		}
	}()
	member.StartMember()
	return st, nil
}

// errRejoining answers what this node is asked while it joins its
// cluster again.
var errRejoining = kassa.Errorf(kassa.Unavailable, "this node lost its cluster membership and is joining again: try again")

// Rejoin makes this node a member of its cluster again, under a new
// member id, after it lost its membership (its etcd lease expired while
// it was cut off from etcd or stalled, so the others dropped it and will
// not take its old id back): it stops serving as any store's owner and
// stops its store and webhook actors at once, leaves the old membership
// (its remoting stops, its member key goes), expels its old id from the
// membership fence so that nothing of the old membership commits again,
// and joins with a new actor system and id through p, a provider not
// used before. Until it is done every call about a store answers 503.
// A failed Rejoin can be called again. Nothing needs a restart: what the
// old membership held was already the others'.
func (c *Cluster) Rejoin(ctx context.Context, p Provider) error {
	old := c.clusterState()
	if old == nil {
		return errors.New("cluster: rejoin on a single node")
	}
	if !c.StepDown() {
		return fmt.Errorf("cluster: cannot rejoin: %s", c.rt.halt.Load().Message)
	}
	if old.left.CompareAndSwap(false, true) {
		c.log.Warn("leaving the lost cluster membership", "member", old.id)
		start := c.cfg.Clock.Now()
		// The provider stops renewing the old member key and deletes
		// it; in the background, as it may wait for etcd (the caller
		// closes its etcd client, and deletes the key itself).
		go func() { _ = old.c.Config.ClusterProvider.Shutdown(false) }()
		old.c.Shutdown(false) // stops its actor system and node port
		c.log.Info("left the lost cluster membership", "member", old.id, "took", c.cfg.Clock.Now().Sub(start).Round(time.Millisecond))
	}
	if cur := c.clusterState(); cur != old && !cur.left.Load() {
		// A Rejoin that failed after it started a member: give that
		// one up too before the next.
		cur.left.Store(true)
		cur.c.Shutdown(false)
	}
	if c.fence != nil {
		if err := c.fence.Expel(ctx, old.id); err != nil {
			return fmt.Errorf("cluster: expel the old member id: %w", err)
		}
	}
	as := c.rt.newActorSystem()
	c.rt.as.Store(as)
	if c.fence != nil {
		if err := c.fence.Join(ctx, as.ID); err != nil {
			return fmt.Errorf("cluster: join the membership fence: %w", err)
		}
	}
	cc := old.cc
	cc.Provider = p
	if _, err := c.startMember(cc); err != nil {
		return err
	}
	c.rt.halt.CompareAndSwap(errRejoining, nil)
	c.log.Info("joined the cluster again under a new member id", "member", as.ID, "old", old.id)
	if c.rt.recovered.Load() {
		c.rt.goRecovered("sweep after joining again", c.rt.sweepTakenOver)
	}
	return nil
}

// StepDown makes this node stop serving as any store's owner at once,
// because it lost its membership and will join again (Rejoin): every
// call about a store answers 503, and its store and webhook actors stop.
// It returns false when the node is halted for good (Expelled).
func (c *Cluster) StepDown() bool {
	if c.rt.haltWith(errRejoining, errCutOff) {
		c.log.Error("lost the cluster membership: no longer serving as any store's owner until this node is in again")
	} else if c.rt.halt.Load() != errRejoining {
		return false
	}
	c.rt.stopOwned()
	return true
}

// onTopology keeps the member list this node routes by, and sweeps the
// stores it now owns: the invoices of a lost node's stores get their
// timers armed again here without waiting for the next sweep.
func (c *Cluster) onTopology(st *clusterState, t *cluster.ClusterTopology) {
	if c.fence != nil {
		// Before this node takes any of their stores over: a member
		// that left (killed, stalled, cut off) commits nothing more.
		for _, m := range t.Left {
			ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RequestTimeout)
			id := st.memberID(m)
			if err := c.fence.Expel(ctx, id); err != nil {
				c.log.Error("expel a member that left", "member", id, "err", err)
			} else {
				c.log.Info("expelled a member that left the cluster", "member", id, "address", m.Address())
			}
			cancel()
		}
	}
	if c.fence != nil {
		// Claims of holders that are not members: a whole cluster
		// killed and started again has new members only, and none of
		// them saw the old ones leave. Their sweepers had claimed
		// invoices ahead of the deadline, and those invoices' timers
		// died with them: the next round here fires them, instead of
		// Grace past each deadline. A member whose join this node has
		// not seen yet may lose its claims too; an expiry fired twice
		// fires once. A node that is not in its own view (leaving, or
		// cut off) frees nothing.
		c.freeClaimsOfNonMembers(st, t.Members)
	}
	rdv := cluster.NewRendezvous()
	rdv.UpdateMembers(t.Members)
	members := make([]string, 0, len(t.Members))
	for _, m := range t.Members {
		members = append(members, m.Address())
	}
	st.mu.Lock()
	st.rdv, st.members = rdv, members
	if len(t.Left) > 0 {
		close(st.memberLeft)
		st.memberLeft = make(chan struct{})
	}
	close(st.viewChanged)
	st.viewChanged = make(chan struct{})
	st.mu.Unlock()
	if h := st.afterTopology.Load(); h != nil {
		(*h)()
	}
	c.topologies.add(c.cfg.Clock.Now(), t.Members)
	c.log.Info("cluster topology", "members", members, "left", len(t.Left), "joined", len(t.Joined), "member", st.id)
	if c.rt.recovered.Load() && len(t.Left) > 0 {
		c.rt.goRecovered("sweep after a node left", c.rt.sweepTakenOver)
	}
}

// freeClaimsOfNonMembers frees the deadline claims of every holder that
// is not one of members (onTopology), when this node is one of them.
func (c *Cluster) freeClaimsOfNonMembers(st *clusterState, members []*cluster.Member) {
	ids := make([]string, 0, len(members))
	for _, m := range members {
		ids = append(ids, st.memberID(m))
	}
	if !slices.Contains(ids, st.id) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RequestTimeout)
	defer cancel()
	n, err := c.fence.FreeDeadlineClaimsExcept(ctx, ids)
	if err != nil {
		c.log.Error("free the deadline claims of holders that are not members", "err", err)
	} else if n > 0 {
		c.log.Info("freed the deadline claims of holders that are not members", "claims", n)
	}
}

// sweepTakenOver arms the timers of the stores this node now owns (their
// invoices due within sweepAhead), and sends their webhook outboxes.
func (s *Runtime) sweepTakenOver() {
	if _, err := s.wakeDue(context.Background(), ""); err != nil {
		s.log.Error("sweep after a node left", "err", err)
	}
	if _, err := s.RecoverDeliveries(context.Background()); err != nil {
		s.log.Error("recover deliveries after a node left", "err", err)
	}
}

// memberID is the id m joined the fence and claims under: its actor
// system's id. The topology names a member as its provider does, which
// for etcd is CLUSTER@ID.
func (st *clusterState) memberID(m *cluster.Member) string {
	return strings.TrimPrefix(m.Id, st.cc.Name+"@")
}

// leftSignal is closed when a member next leaves the cluster.
func (st *clusterState) leftSignal() chan struct{} {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.memberLeft
}

// ownerOf returns the address of the node that runs store id, as this
// node sees the cluster ("" before the first topology event).
func (c *Cluster) ownerOf(storeID string) string {
	owner, _ := c.clusterState().view(storeID)
	return owner
}

// view returns the address of the node that runs store id as this node
// sees the cluster, and a channel closed when that view next changes.
func (st *clusterState) view(storeID string) (owner string, changed chan struct{}) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.rdv.GetByClusterIdentity(cluster.NewClusterIdentity(storeID, KindStore)), st.viewChanged
}

// placement is the store kind's identity lookup. disthash's placement
// actors activate the grains (each node's partition activator), but the
// node a store's grain is asked of is the owner in this node's own view
// of the members, the one it routes, fences and resends by (onTopology),
// not disthash's copy of it, which protoactor-go updates after Kassa's
// handler and which can lag it on a loaded machine; and the wait for a
// node that leaves meanwhile ends when it leaves, not after a timeout
// (activate). protoactor-go asks it on a miss of its PID cache.
type placement struct {
	cluster.IdentityLookup
	st *clusterState
}

func (p *placement) Get(id *cluster.ClusterIdentity) *actor.PID {
	// protoactor-go asks it with no context of the call: the
	// activation is bounded by the node's request timeout.
	ctx, cancel := withBudget(context.Background(), p.st.timeout)
	defer cancel()
	return p.st.activate(ctx, id.Identity, false)
}

// activate has store id's grain activated, on this node when here is
// set, else on the store's owner in this node's view, and returns its
// PID; nil when none was within ctx's budget. When the view changes while it
// waits (the node it asked left, or another one now owns the store), it
// asks the store's owner in the new view at once.
func (st *clusterState) activate(ctx context.Context, storeID string, here bool) *actor.PID {
	for {
		owner, changed := st.view(storeID)
		if here {
			owner = st.c.ActorSystem.Address()
		}
		got := st.askActivation(ctx, owner, storeID)
		for asked := true; asked; {
			select {
			case pid := <-got:
				if pid != nil {
					return pid
				}
				got = nil // refused or timed out: ask again when the view changes
			case <-changed:
				now, next := st.view(storeID)
				if got == nil || !here && now != owner {
					asked = false
				} else {
					changed = next
				}
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// askActivation asks the node at addr to activate store id's grain; the
// channel gets the grain's PID, or is closed without one when the node
// refuses or does not answer within ctx's budget. It is nil when addr
// is "".
func (st *clusterState) askActivation(ctx context.Context, addr, storeID string) chan *actor.PID {
	if addr == "" {
		return nil
	}
	got := make(chan *actor.PID, 1)
	req := &cluster.ActivationRequest{ClusterIdentity: cluster.NewClusterIdentity(storeID, KindStore)}
	f := st.c.ActorSystem.Root.RequestFuture(actor.NewPID(addr, disthash.PartitionActivatorActorName), req,
		max(budgetLeft(ctx), time.Millisecond))
	go func() {
		defer close(got)
		res, err := f.Result()
		if r, ok := res.(*cluster.ActivationResponse); ok && err == nil && !r.Failed && r.Pid != nil {
			got <- r.Pid
		}
	}()
	return got
}

// routedKey marks a context of a call another node routed here: it runs
// here whatever this node thinks of the topology, so that two nodes with
// different views never bounce a call between them.
type routedKey struct{}

// remoteStore reports whether calls about store id go to another node.
// When this node owns the store it activates the store's grain first, so
// that placement knows of it and stops it when the topology moves it.
func (c *Cluster) remoteStore(ctx context.Context, storeID string) (bool, error) {
	st := c.clusterState()
	if st == nil {
		return false, nil
	}
	if h := c.rt.halt.Load(); h != nil {
		return false, h
	}
	if ctx.Value(routedKey{}) == nil {
		switch owner := c.ownerOf(storeID); owner {
		case "":
			return false, kassa.Errorf(kassa.Unavailable, "the cluster has no members yet: try again")
		case st.c.ActorSystem.Address():
		default:
			return true, nil
		}
	}
	if _, ok := st.grains.Load(storeID); !ok {
		ctx, cancel := withBudget(ctx, st.timeout)
		defer cancel()
		if budgetLeft(ctx) <= 0 {
			return false, errTimedOut // as the request would answer
		}
		if pid := st.activate(ctx, storeID, true); pid == nil {
			return false, kassa.Errorf(kassa.Unavailable, "store %s could not be placed in the cluster: try again", storeID)
		}
	}
	return false, nil
}

// storeGrain is a store's grain: the cluster's handle on the node that
// runs the store. It answers routed calls, and ties the store's local
// actors to the placement: they start with the grain and stop with it
// when the topology moves the store to another node.
type storeGrain struct {
	cl *Cluster
	st *clusterState // the membership it runs in
	id string
}

func (g *storeGrain) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *cluster.ClusterInit:
		g.id = msg.Identity.Identity
		g.st = g.cl.clusterState()
		g.cl.grainStarted(g.st, g.id, ctx.Self())
		g.st.stopIfNotOwned(g.id, ctx.Self())
	case *protos.StoreCall:
		// Off the mailbox: the call waits for the store actor, and
		// calls about a store's different invoices run side by side.
		// serveCall never panics (recoverReply). A call about another
		// store than the grain's is refused: it would run that store
		// here, whichever node owns it.
		sender, root := ctx.Sender(), ctx.ActorSystem().Root
		if msg.StoreId != g.id {
			if sender != nil {
				root.Send(sender, &protos.StoreCallReply{Code: kassa.Invalid,
					Message: fmt.Sprintf("%s from another node about store %q, sent to the grain of %q", callName(msg), msg.StoreId, g.id)})
			}
			return
		}
		go func() {
			rep := g.cl.serveCall(msg)
			if sender != nil {
				root.Send(sender, rep)
			}
		}()
	case *actor.Stopping:
		if g.id != "" {
			g.cl.grainStopped(g.st, g.id, ctx.Self())
		}
	}
}

// orphanGrace is how long a store grain that started on a node which,
// in its own view, does not run the store lives on before it stops,
// unless a topology change made the node the store's owner meanwhile.
// Such a grain was asked for by a node with an older view, for the call
// it sent; protoactor-go's placement stops a grain only when a topology
// change moves it away, and none comes after the last change.
const orphanGrace = 5 * time.Second

// stopIfNotOwned stops the grain pid of store id after orphanGrace when
// this node, in its view then, does not run the store.
func (st *clusterState) stopIfNotOwned(storeID string, pid *actor.PID) {
	self := st.c.ActorSystem.Address()
	if owner, _ := st.view(storeID); owner == self {
		return
	}
	st.clock.AfterFunc(orphanGrace, func() {
		if owner, _ := st.view(storeID); owner != self && owner != "" && !st.left.Load() {
			st.c.ActorSystem.Root.Poison(pid)
		}
	})
}

// grainStarted takes over a store on this node: its webhook list is read
// afresh, and its endpoints send what their outboxes hold (deliveries a
// lost node left pending). The store actor, which starts next, wakes its
// invoices that are due.
func (c *Cluster) grainStarted(st *clusterState, storeID string, pid *actor.PID) {
	st.grains.Store(storeID, pid)
	c.rt.storeTakenOver(storeID)
}

// storeTakenOver reads the webhook list of a store this node now runs
// afresh, and has its endpoints send what their outboxes hold.
func (s *Runtime) storeTakenOver(storeID string) {
	s.outbox.changed(storeID)
	if s.deliveriesRecovered.Load() {
		s.goRecovered("wake the webhooks of a store taken over", func() { s.drainStoreWebhooks(storeID) })
	}
}

// grainStopped gives a store up on this node: its store actor (with its
// invoice actors and their timers) and its webhook endpoint actors stop.
// Should a stale activation remain anywhere, its next write conflicts in
// the journal and it reloads.
func (c *Cluster) grainStopped(st *clusterState, storeID string, pid *actor.PID) {
	st.grains.CompareAndDelete(storeID, pid)
	if st.left.Load() {
		return // stopOwned stopped its actors; the store may run in a new membership
	}
	c.rt.storeGivenUp(storeID)
}

// storeGivenUp stops the store actor of a store this node no longer
// runs (with its invoice actors and their timers), and its webhook
// endpoint actors.
func (s *Runtime) storeGivenUp(storeID string) {
	if p, ok := s.stores.LoadAndDelete(storeID); ok {
		s.actorSystem().Root.Stop(p.(*actor.PID))
	}
	s.goRecovered("stop the webhooks of a store given up", func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
		defer cancel()
		_ = s.cfg.Reader.Webhooks(ctx, storeID, func(w *kassa.Webhook) error {
			if p, ok := s.webhooks.LoadAndDelete(w.ID); ok {
				s.actorSystem().Root.Stop(p.(*actor.PID))
			}
			return nil
		})
	})
}

// goRecovered runs fn in a goroutine of its own, which a panic does not
// end the process from: it is logged with its stack. The goroutines that
// another node's messages start (a grain activated or stopped, a member
// gone) run this way, as the store grain's calls do (recoverReply).
func (s *Runtime) goRecovered(what string, fn func()) {
	go func() {
		defer func() {
			if r := recover(); r != nil {
				s.log.Error("a background task panicked", "task", what, "panic", r, "stack", string(debug.Stack()))
			}
		}()
		fn()
	}()
}

// drainStoreWebhooks wakes each webhook endpoint of a store, which then
// sends its outbox in order.
func (s *Runtime) drainStoreWebhooks(storeID string) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
	defer cancel()
	err := s.cfg.Reader.Webhooks(ctx, storeID, func(w *kassa.Webhook) error {
		s.actorSystem().Root.Send(s.webhook(w.ID), &protos.DeliverWebhook{})
		return nil
	})
	if err != nil {
		s.log.Error("wake webhooks of a store taken over", "store", storeID, "err", err)
	}
}

// MemberID is this node's id among the cluster's members.
func (c *Cluster) MemberID() string { return c.rt.actorSystem().ID }

// ClusterHealth is what a node of a cluster reports about itself.
type ClusterHealth struct {
	// Address is this node's address among the members.
	Address string `json:"address"`
	// Members are the addresses of the nodes this node sees.
	Members []string `json:"members"`
	// Stores is how many store grains (each with its invoice and
	// webhook endpoint actors) run on this node.
	Stores int `json:"stores"`
	// Owning says whether this node serves as its stores' owner; when
	// it does not, Fenced says why (it lost contact with etcd, or its
	// membership).
	Owning bool   `json:"owning"`
	Fenced string `json:"fenced,omitempty"`
}

// ClusterHealth reports membership and the actors this node runs; nil
// on a single node.
func (c *Cluster) Health() *ClusterHealth {
	st := c.clusterState()
	if st == nil {
		return nil
	}
	h := &ClusterHealth{Address: st.c.ActorSystem.Address()}
	h.Owning, h.Fenced = c.Serving()
	st.mu.RLock()
	h.Members = append([]string(nil), st.members...)
	st.mu.RUnlock()
	st.grains.Range(func(_, _ any) bool { h.Stores++; return true })
	return h
}

// ownsWebhook reports whether this node runs the store of webhook id
// (and activates that store's grain when it does).
func (c *Cluster) ownsWebhook(ctx context.Context, id string) bool {
	w, err := c.cfg.Reader.Webhook(ctx, id)
	if err != nil {
		return false
	}
	remote, err := c.remoteStore(ctx, w.StoreID)
	return err == nil && !remote
}

// commit commits b: through the membership fence in a cluster that has
// one, so that a node that lost its membership writes nothing, a new
// stream's first event included; else to the journal.
func (c *Cluster) commit(ctx context.Context, b kassa.Batch) error {
	if h := c.rt.halt.Load(); h != nil {
		return h
	}
	if c.fence != nil {
		id := c.rt.actorSystem().ID
		if st := c.clusterState(); st != nil {
			id = st.id
		}
		err := c.fence.Commit(ctx, id, b)
		if errors.Is(err, kassa.ErrNotMember) {
			c.log.Warn("write refused: this node is no longer a member of the cluster")
		}
		return err
	}
	return c.cfg.Journal.Commit(ctx, b)
}

// claimHolder names this node in its webhook delivery claims: in a
// cluster with a membership fence, its member id, so that the members
// that expel it free its claims at once and the node that takes its
// stores over sends their deliveries without waiting for the claims to
// run out (docs/decisions.md, "Outbox claims"); else Config.ClaimHolder.
func (c *Cluster) claimHolder() string {
	if c.fence != nil {
		if st := c.clusterState(); st != nil {
			return st.id
		}
	}
	return c.cfg.ClaimHolder
}

// joinFence admits this node to f, through which it commits from then
// on.
func (c *Cluster) joinFence(f Fence) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RequestTimeout)
	defer cancel()
	if err := f.Join(ctx, c.rt.actorSystem().ID); err != nil {
		return fmt.Errorf("cluster: join the membership fence: %w", err)
	}
	c.fence = f
	return nil
}

// errExpelled answers what this node is asked once it knows it lost
// its membership.
var errExpelled = kassa.ErrNotMember

// Expelled tells the system that this node lost its cluster membership
// (its etcd lease expired: the others took its stores over). From now on
// it commits nothing and answers 503 to every call about a store; its
// store and webhook actors stop at once, not at the end of a drain, so
// that no timer of theirs fires and nothing in their mailboxes runs.
func (c *Cluster) Expelled() {
	if !c.rt.haltWith(errExpelled, errCutOff, errRejoining) {
		return
	}
	c.rt.stopOwned()
}

// errCutOff answers what this node is asked while it cannot reach etcd.
var errCutOff = kassa.Errorf(kassa.Unavailable, "this node lost contact with the cluster's etcd: try again")

// Suspend makes this node stop serving as the owner of its stores, at
// once, because it could not renew its etcd lease and the lease would
// now expire (self-fencing): the other nodes are about to take its
// stores over, and two owners of a store must never run. Its store and
// webhook actors stop, and every call about a store answers 503, until
// Resume. It returns false when the node was serving already halted.
func (c *Cluster) Suspend() bool {
	if !c.rt.haltWith(errCutOff) {
		return false
	}
	c.log.Error("lost contact with etcd for as long as the membership lease: no longer serving as any store's owner")
	c.rt.stopOwned()
	return true
}

// Resume ends a Suspend: etcd answers again and this node is still a
// member, so it serves its stores again (their actors start on the next
// call). It returns false when the node was not suspended.
func (c *Cluster) Resume() bool {
	if !c.rt.halt.CompareAndSwap(errCutOff, nil) {
		return false
	}
	c.log.Info("etcd answers again and this node is still a member: serving its stores again")
	return true
}

// Serving says whether this node serves as its stores' owner, and why
// not when it does not.
func (c *Cluster) Serving() (bool, string) {
	if h := c.rt.halt.Load(); h != nil {
		return false, h.Message
	}
	return true, ""
}

// stopOwned stops every store and webhook actor of this node at once,
// and waits until they are gone (a store actor stops its invoice
// actors first), so that an actor started after a Resume never finds
// its name still taken.
func (s *Runtime) stopOwned() {
	var futures []actor.Future
	for _, m := range []*sync.Map{&s.stores, &s.webhooks} {
		m.Range(func(id, pid any) bool {
			m.Delete(id)
			futures = append(futures, s.actorSystem().Root.StopFuture(pid.(*actor.PID)))
			return true
		})
	}
	for _, f := range futures {
		_ = f.Wait()
	}
}

// topologySnapshots is how many member lists a node keeps for the
// hand-over history of a store (StoreOwner), and handoversShown how many
// hand-overs it reports.
const (
	topologySnapshots = 64
	handoversShown    = 10
)

// topologyHistory is the member lists this node saw, oldest first, with
// when it saw them; it outlives a Rejoin.
type topologyHistory struct {
	mu    sync.Mutex
	snaps []topologySnap
}

type topologySnap struct {
	at      time.Time
	members []*cluster.Member
}

func (h *topologyHistory) add(at time.Time, members []*cluster.Member) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.snaps = append(h.snaps, topologySnap{at: at, members: members})
	if len(h.snaps) > topologySnapshots {
		h.snaps = slices.Clone(h.snaps[len(h.snaps)-topologySnapshots:])
	}
}

// StoreOwnership is which node of a cluster runs a store, as this node
// sees the cluster, and the store's last hand-overs.
type StoreOwnership struct {
	StoreID string `json:"storeId"`
	// Owner is the address of the node that runs the store ("" while
	// this node sees no members).
	Owner string `json:"owner"`
	// Self says whether Owner is this node, and Owning whether this
	// node serves as its stores' owner now (false while it is fenced
	// or joining again).
	Self   bool `json:"self"`
	Owning bool `json:"owning"`
	// Handovers are the store's last moves between nodes as this node
	// saw the membership change, newest first (at most 10, since this
	// node started and the store was made).
	Handovers []Handover `json:"handovers"`
}

// Handover is a store moving from one node to another.
type Handover struct {
	At   time.Time `json:"at"`
	From string    `json:"from,omitempty"`
	To   string    `json:"to"`
}

// StoreOwner says which node runs storeID and the store's last
// hand-overs; nil on a single node.
func (c *Cluster) StoreOwner(storeID string) *StoreOwnership {
	st := c.clusterState()
	if st == nil {
		return nil
	}
	o := &StoreOwnership{StoreID: storeID, Owner: c.ownerOf(storeID), Handovers: []Handover{}}
	o.Self = o.Owner != "" && o.Owner == st.c.ActorSystem.Address()
	o.Owning, _ = c.Serving()
	id := cluster.NewClusterIdentity(storeID, KindStore)
	// A member list from before the store existed moved nothing of it.
	var created time.Time
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RequestTimeout)
	defer cancel()
	if store, err := c.cfg.Reader.Store(ctx, storeID); err == nil {
		created = store.CreatedAt
	}
	c.topologies.mu.Lock()
	snaps := slices.Clone(c.topologies.snaps)
	c.topologies.mu.Unlock()
	prev := ""
	for i, snap := range snaps {
		rdv := cluster.NewRendezvous()
		rdv.UpdateMembers(snap.members)
		owner := rdv.GetByClusterIdentity(id)
		if i > 0 && owner != prev && snap.at.After(created) {
			o.Handovers = append(o.Handovers, Handover{At: snap.at.UTC(), From: prev, To: owner})
		}
		prev = owner
	}
	slices.Reverse(o.Handovers)
	if len(o.Handovers) > handoversShown {
		o.Handovers = o.Handovers[:handoversShown]
	}
	return o
}
