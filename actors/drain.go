package actors

import (
	"context"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Drain stops the actors gracefully, before Shutdown: each store actor
// first handles what its mailbox already holds, then each webhook
// endpoint sends the deliveries that are due, oldest first, until ctx
// ends. When ctx ends first, the delivery in flight is abandoned and
// left, with every other one not sent, in the durable outbox, from which
// RecoverDeliveries sends it after the next start; Drain then waits (at
// most abandonGrace) for the endpoints to stop, so that each cut attempt
// has come back and been logged before the caller closes the store and
// exits. Drain returns whether everything finished before ctx ended.
// Stop the backends first, so that no new work arrives.
func (s *Runtime) Drain(ctx context.Context) bool {
	done := true
	var endpoints []<-chan struct{}
	for _, m := range []*sync.Map{&s.stores, &s.webhooks} {
		waits := s.poisonAll(m)
		if m == &s.webhooks {
			endpoints = waits
		}
		for _, w := range waits {
			select {
			case <-w:
			case <-ctx.Done():
				done = false
			}
			if !done {
				break
			}
		}
		if !done {
			break
		}
	}
	if !done {
		s.abandonDeliveries()
		// Endpoints not yet asked to stop (the stores ran out of time)
		// are asked now; canceled, their attempts return at once.
		endpoints = append(endpoints, s.poisonAll(&s.webhooks)...)
		grace := time.NewTimer(abandonGrace)
		defer grace.Stop()
		for _, w := range endpoints {
			select {
			case <-w:
			case <-grace.C:
				return false
			}
		}
	}
	return done
}

// abandonGrace bounds the wait of a drain that ran out of time for the
// webhook endpoints whose deliveries it cut off.
const abandonGrace = 5 * time.Second

// poisonAll takes every actor out of m and asks each to stop once it has
// handled its mailbox; it returns the channels closed as they stop.
func (s *Runtime) poisonAll(m *sync.Map) []<-chan struct{} {
	var waits []<-chan struct{}
	m.Range(func(id, pid any) bool {
		m.Delete(id)
		waits = append(waits, s.poison(pid.(*actor.PID)))
		return true
	})
	return waits
}

// poison asks pid to stop once it has handled the messages in its
// mailbox, and returns a channel closed when it has stopped. Unlike
// PoisonFuture it does not give up after a fixed time: the caller's
// context bounds the wait.
func (s *Runtime) poison(pid *actor.PID) <-chan struct{} {
	stopped := make(chan struct{})
	props := actor.PropsFromFunc(func(c actor.Context) {
		switch msg := c.Message().(type) {
		case *actor.Started:
			c.Watch(pid)
			c.Poison(pid)
		case *actor.Terminated:
			if msg.Who.Equal(pid) {
				close(stopped)
				c.Stop(c.Self())
			}
		}
	})
	s.actorSystem().Root.Spawn(props)
	return stopped
}

// deliveryContext is the context of webhook deliveries: canceled when a
// drain runs out of time.
func (s *Runtime) deliveryContext() context.Context {
	s.deliveryOnce.Do(func() { s.deliveryCtx, s.deliveryCancel = context.WithCancel(context.Background()) })
	return s.deliveryCtx
}

func (s *Runtime) abandonDeliveries() {
	s.deliveryContext()
	s.deliveryCancel()
}
