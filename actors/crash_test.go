package actors

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// crashActor makes the actor at pid panic (a crash message) and returns
// once its supervisor has restarted it: the supervisor publishes its
// restart directive before the restart, and a Touch queued behind the
// crash is answered only by the restarted instance. It fails t when the
// actor did not panic or was not restarted.
func crashActor(t testing.TB, sys *actor.ActorSystem, pid *actor.PID) {
	t.Helper()
	var restarted atomic.Bool
	sub := sys.EventStream.SubscribeWithPredicate(func(any) { restarted.Store(true) }, func(evt any) bool {
		e, ok := evt.(*actor.SupervisorEvent)
		return ok && e.Child.Equal(pid) && e.Directive == actor.RestartDirective && e.Reason == "crash requested"
	})
	defer sys.EventStream.Unsubscribe(sub)
	sys.Root.Send(pid, crash{})
	if _, err := sys.Root.RequestFuture(pid, &actor.Touch{}, 5*time.Second).Result(); err != nil {
		t.Fatalf("the actor did not answer after its crash: %v", err)
	}
	if !restarted.Load() {
		t.Fatal("the crash did not make the actor panic and restart")
	}
}
