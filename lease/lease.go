// Package lease runs a role (the chain watcher, the Lightning watcher,
// the forwarder) on one node of a cluster at a time, with fencing: a
// lease is a row per role with its holder, an epoch and an expiry, and
// every cursor write of the role's work commits only while the lease's
// epoch is still the role's current one. A node that stalls past its
// lease's expiry (a long GC pause, SIGSTOP, a network partition) loses the
// role to another node, which takes it with the next epoch; when the
// stalled node wakes up, its writes are refused with ErrLost and it steps
// down. See docs/decisions.md, "Watcher leases with epoch fencing".
//
// A single node takes no lease: it runs every role itself
// (cmd/kassa, startWatchers).
package lease

import (
	"context"
	"time"

	"github.com/kassapay/kassa"
)

// The roles.
const (
	RoleChainWatcher     = "chain-watcher"
	RoleLightningWatcher = "lightning-watcher"
	// RoleForwarder pays the forwards to stores' Lightning addresses
	// (actors.Forwarder.Lead).
	RoleForwarder = "forwarder"
)

// Committer is a fenced store that also commits journal batches under
// the lease, for work that writes more than cursors (the forwarder's
// forwards and ledger lines): the batch commits only while the lease's
// epoch is the role's, in one transaction, else ErrLost. The KeyValue
// a Runner hands its work implements it when Store.Fenced's does.
type Committer interface {
	Commit(ctx context.Context, b kassa.Batch) error
}

// ErrLost is the error of a renewal or a fenced write whose lease is no
// longer the role's current one: another node took the role over with a
// newer epoch. The holder must stop the role's work.
var ErrLost = kassa.Errorf(kassa.Conflict, "lease lost: another node holds the role with a newer epoch")

// Lease is a role held by a holder.
type Lease struct {
	Role   string
	Holder string
	// Epoch grows by one each time the role changes hands.
	Epoch   int64
	Expires time.Time
}

// Store keeps the leases.
type Store interface {
	// Acquire gives role to holder until now+ttl when nobody holds it,
	// the lease expired, or holder holds it already (a renewal, same
	// epoch). Taking it from another holder increments the epoch. ok is
	// false while another holder's lease runs.
	Acquire(ctx context.Context, role, holder string, ttl time.Duration) (l Lease, ok bool, err error)
	// Renew extends l to now+ttl; ErrLost when l's epoch is no longer
	// the role's.
	Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// Release gives l up at once, so another node need not wait for its
	// expiry; releasing a lost lease is no error.
	Release(ctx context.Context, l Lease) error
	// Fenced returns the key-value store that the role's work writes
	// its cursors to: each write checks, in its own transaction, that
	// l's epoch is still the role's, and fails with ErrLost otherwise.
	Fenced(l Lease) kassa.KeyValue
}
