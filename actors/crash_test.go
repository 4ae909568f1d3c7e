package actors

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// crashActor makes the actor at pid panic on a request (a crash
// message) and returns once its supervisor has restarted it. The crash
// must be answered with the panic's error at once (answerPanic); the
// supervisor publishes its restart directive before the restart, and a
// Touch queued behind the crash is answered only by the restarted
// instance. It fails t when the actor did not answer the panic, or was
// not restarted.
func crashActor(t testing.TB, h *harness, pid *actor.PID) {
	t.Helper()
	sys := h.sys.Runtime.actorSystem()
	var restarted atomic.Bool
	sub := sys.EventStream.SubscribeWithPredicate(func(any) { restarted.Store(true) }, func(evt any) bool {
		e, ok := evt.(*actor.SupervisorEvent)
		return ok && e.Child.Equal(pid) && e.Directive == actor.RestartDirective && e.Reason == "crash requested"
	})
	defer sys.EventStream.Unsubscribe(sub)
	res, err := sys.Root.RequestFuture(pid, crash{}, 30*time.Second).Result()
	if r, ok := res.(reply); err != nil || !ok || !errors.Is(r.err, errActorPanicked) {
		t.Fatalf("crash answered %v, %v; want %v", res, err, errActorPanicked)
	}
	if _, err := sys.Root.RequestFuture(pid, &actor.Touch{}, 5*time.Second).Result(); err != nil {
		t.Fatalf("the actor did not answer after its crash: %v", err)
	}
	if !restarted.Load() {
		t.Fatal("the crash did not make the actor panic and restart")
	}
}
