package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"
)

// closeGrace is how long Close may run past --shutdown-timeout: the
// actors' stop, the lease release and the store's close after the drain.
const closeGrace = 2 * time.Second

// errCloseStuck is why a stop that overran its time exits anyway.
var errCloseStuck = errors.New("the stop did not finish within --shutdown-timeout (etcd or PostgreSQL not answering?): exiting without waiting for it")

// closeBounded is Close within --shutdown-timeout and closeGrace,
// whatever etcd and PostgreSQL do: a stop that waits for an answer
// from either (leaving the membership, releasing a lease) past that is
// left behind, and the process exits; the cluster drops the node after
// its lease, and its leases expire. Such a stop is logged as an error
// but is not a failed one: like a drain cut by the timeout, whose
// deliveries stay in the outbox, it is the bound the operator set, and
// the exit code stays 0, for a cluster node as for a single node.
func (m *Main) closeBounded() error {
	timeout := cmp.Or(m.Config.ShutdownTimeout, DefaultConfig().ShutdownTimeout)
	done := make(chan error, 1)
	go func() { done <- m.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout + closeGrace):
		if m.log != nil {
			m.log.Error(errCloseStuck.Error(), "timeout", timeout)
		}
		return nil
	}
}

// drain is the graceful part of Close, all of it within
// --shutdown-timeout: the HTTP server stops accepting connections and
// waits for the requests in flight; the backends stop, so that no new
// payment arrives; the store actors handle what their mailboxes hold and
// the webhook endpoints send the deliveries that are due. What is not
// done by the deadline is cut off: requests get their connection closed,
// and deliveries stay in the durable outbox, sent after the next start.
func (m *Main) drain() error {
	timeout := cmp.Or(m.Config.ShutdownTimeout, DefaultConfig().ShutdownTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	if m.log != nil && m.server != nil {
		m.log.Info("shutting down: finishing requests in flight and due webhook deliveries", "timeout", timeout)
	}
	var err error
	if m.server != nil {
		if err = m.server.Shutdown(ctx); errors.Is(err, context.DeadlineExceeded) {
			m.server.Close()
			err = fmt.Errorf("requests still running after --shutdown-timeout %v were cut off", timeout)
			if m.log != nil {
				m.log.Warn("shutting down: " + err.Error())
			}
		}
	}
	if m.cancel != nil {
		m.cancel()
	}
	if m.sys != nil {
		if !m.sys.Runtime.Drain(ctx) && m.log != nil {
			m.log.Warn("shutting down: webhook deliveries not sent by --shutdown-timeout stay in the outbox for the next start", "timeout", timeout)
		}
	}
	if m.log != nil && m.server != nil {
		m.log.Info("shutting down: drained", "took", time.Since(start).Round(time.Millisecond))
	}
	return err
}
