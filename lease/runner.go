package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kassapay/kassa"
)

// Runner holds one role for one node: it tries to acquire the lease,
// runs the role's work while it holds it, renews it every TTL/3, and
// stops the work (steps down) as soon as a renewal or one of the work's
// fenced writes says the lease was lost. Then it tries again.
type Runner struct {
	Store  Store
	Role   string
	Holder string
	// TTL is the lease's length: how long the role stays unserved when
	// its node dies (docs/decisions.md, "Watcher leases with epoch
	// fencing").
	TTL   time.Duration
	Clock kassa.Clock
	Log   *slog.Logger
	// Work runs the role until ctx ends, writing its cursors to kv
	// only. It is started again after a step-down and a new
	// acquisition.
	Work func(ctx context.Context, kv kassa.KeyValue) error

	mu       sync.Mutex
	held     Lease
	holding  bool
	stepDown func()
}

// Status is what health reports of a role.
type Status struct {
	Role   string `json:"role"`
	Held   bool   `json:"held"`
	Epoch  int64  `json:"epoch,omitempty"`
	Holder string `json:"holder,omitempty"`
}

// Status says whether this node holds the role, and at which epoch.
func (r *Runner) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Status{Role: r.Role, Held: r.holding}
	if r.holding {
		s.Epoch, s.Holder = r.held.Epoch, r.held.Holder
	}
	return s
}

// Run holds the role until ctx ends, then releases it.
func (r *Runner) Run(ctx context.Context) {
	for ctx.Err() == nil {
		l, ok, err := r.Store.Acquire(ctx, r.Role, r.Holder, r.TTL)
		switch {
		case err != nil && ctx.Err() == nil:
			r.Log.Error("lease: acquire", "role", r.Role, "err", err)
		case ok:
			// After a step-down (or work that failed) wait as after a
			// refusal: the role is another's, or the work's trouble
			// needs time; either way no busy loop.
			r.hold(ctx, l)
		}
		r.sleep(ctx, r.TTL/3)
	}
}

// sleep waits d on the runner's clock, or until ctx ends.
func (r *Runner) sleep(ctx context.Context, d time.Duration) {
	done := make(chan struct{})
	cancel := r.Clock.AfterFunc(d, func() { close(done) })
	defer cancel()
	select {
	case <-ctx.Done():
	case <-done:
	}
}

// hold runs the work while l holds, renewing it, and returns when the
// lease is lost or ctx ends.
func (r *Runner) hold(ctx context.Context, l Lease) {
	workCtx, stop := context.WithCancel(ctx)
	defer stop()
	r.mu.Lock()
	r.held, r.holding, r.stepDown = l, true, stop
	r.mu.Unlock()
	r.Log.Info("lease: acquired", "role", r.Role, "holder", r.Holder, "epoch", l.Epoch)
	done := make(chan struct{})
	go func() {
		defer close(done)
		kv := &fencedKV{KeyValue: r.Store.Fenced(l), lost: stop}
		if err := r.Work(workCtx, kv); err != nil && workCtx.Err() == nil {
			r.Log.Error("lease: the role's work stopped", "role", r.Role, "err", err)
			stop()
		}
	}()
	for workCtx.Err() == nil {
		r.sleep(workCtx, r.TTL/3)
		if workCtx.Err() != nil {
			break
		}
		renewed, err := r.Store.Renew(workCtx, l, r.TTL)
		switch {
		case errors.Is(err, ErrLost):
			stop()
		case err != nil:
			// A failed renewal is tried again; the fencing of the
			// writes keeps a lease that ran out harmless.
			r.Log.Warn("lease: renew", "role", r.Role, "err", err)
		default:
			l = renewed
		}
	}
	<-done
	r.mu.Lock()
	r.holding, r.stepDown = false, nil
	r.mu.Unlock()
	if ctx.Err() != nil {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.Store.Release(rctx, l); err != nil {
			r.Log.Warn("lease: release", "role", r.Role, "err", err)
		}
		return
	}
	r.Log.Warn("lease: lost, stepped down", "role", r.Role, "holder", r.Holder, "epoch", l.Epoch)
}

// fencedKV stops the work at the first write refused for a lost lease.
type fencedKV struct {
	kassa.KeyValue
	lost func()
}

func (f *fencedKV) PutValue(ctx context.Context, key string, value []byte, expires time.Time) error {
	err := f.KeyValue.PutValue(ctx, key, value, expires)
	if errors.Is(err, ErrLost) {
		f.lost()
	}
	return err
}

// Commit commits b through the lease's store when it can commit batches
// (Committer), stopping the work when the lease was lost.
func (f *fencedKV) Commit(ctx context.Context, b kassa.Batch) error {
	c, ok := f.KeyValue.(Committer)
	if !ok {
		return fmt.Errorf("lease: the fenced store %T cannot commit batches", f.KeyValue)
	}
	err := c.Commit(ctx, b)
	if errors.Is(err, ErrLost) {
		f.lost()
	}
	return err
}
