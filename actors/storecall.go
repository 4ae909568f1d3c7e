package actors

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/asynkron/protoactor-go/cluster"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/protos"
)

// A call about a store another node runs travels as a protos.StoreCall:
// one typed message per command in its oneof (the command table,
// commands.go), the documents it carries and returns converted by
// wiredoc.go, the request id, fingerprint and trace context in the
// envelope. Each command of the Service has one body, which starts with
// its command's route: when another node runs the store, route sends the
// call there and answers its reply; else the body runs on. The node that
// runs the store checks the call and runs the command's handler
// (Service.dispatchCall), which calls the same body, where route
// finds the store here (a call another node sent runs here whatever this
// node's view, remoteStore).

// router routes a call about a store to the node that runs the store
// (the Cluster).
type router interface {
	// remoteStore reports whether calls about storeID go to another
	// node.
	remoteStore(ctx context.Context, storeID string) (bool, error)
	// routeCall sends call about storeID to the node that runs the
	// store and answers its reply, or the error the reply carries.
	routeCall(ctx context.Context, storeID string, call *protos.StoreCall) (*protos.StoreCallReply, error)
}

// routeCall sends call, about storeID, to the node that runs the store,
// with its envelope (request id, fingerprint, trace context), and
// answers the reply; a reply that carries an error answers that error.
func (c *Cluster) routeCall(ctx context.Context, storeID string, call *protos.StoreCall) (rep *protos.StoreCallReply, err error) {
	req := kassa.RequestFrom(ctx)
	if req.ID == "" {
		req.ID = kassa.NewID("req_")
	}
	call.StoreId, call.RequestId, call.Fingerprint = storeID, req.ID, req.Fingerprint
	if a := kassa.ActorFrom(ctx); a != (kassa.Actor{}) {
		call.Actor = &protos.CallActor{Kind: a.Kind, Id: a.ID, Label: a.Label, Addr: a.Addr}
	}
	// The hop is a client span of this node's: the store's node
	// continues the trace under it.
	ctx, span := c.tracer.Start(ctx, "cluster."+callName(call), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("store.id", storeID)))
	defer func() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	call.Trace = carrier
	ctx, cancel := withBudget(ctx, c.cfg.RequestTimeout)
	defer cancel()
	res, err := c.sendCall(ctx, storeID, call)
	if err != nil {
		c.log.Error("cluster call failed", "method", callName(call), "store", storeID, "err", err)
		return nil, kassa.Errorf(kassa.Unavailable, "the node that runs this store did not answer: try again")
	}
	rep, isReply := res.(*protos.StoreCallReply)
	if !isReply {
		return nil, fmt.Errorf("cluster call %s: unexpected reply %T", callName(call), res)
	}
	if err := replyError(rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// sendCall sends call to the node that runs its store and waits for the
// reply, within the call's budget (ctx's deadline). When that node leaves the cluster meanwhile
// (killed, stalled, cut off), the call is sent again at once to the node
// that runs the store now, this one included, instead of waiting for the
// lost node until the timeout: the call's request id makes the repeat
// answer what the first made, should the lost node have committed it.
func (c *Cluster) sendCall(ctx context.Context, storeID string, call *protos.StoreCall) (any, error) {
	for {
		st := c.clusterState()
		owner := c.ownerOf(storeID)
		left := st.leftSignal()
		type result struct {
			res any
			err error
		}
		done := make(chan result, 1)
		go func() {
			res, err := st.c.Request(storeID, KindStore, call, cluster.WithTimeout(budgetLeft(ctx)))
			done <- result{res, err}
		}()
	wait:
		select {
		case r := <-done:
			return r.res, r.err
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-left:
			now := c.ownerOf(storeID)
			if now == owner || now == "" {
				left = st.leftSignal()
				goto wait
			}
			c.log.Warn("the node a call went to left the cluster: sending the call again to the store's new node",
				"method", callName(call), "store", storeID, "from", owner, "to", now)
			if now == st.c.ActorSystem.Address() {
				// A copy: the request to the lost node may still read
				// the call, and running it here may change its event.
				return c.serve(ctx, proto.Clone(call).(*protos.StoreCall)), nil
			}
		}
	}
}

// serveCall runs a call another node routed to this one, within this
// node's request timeout: the call carries no deadline of its sender's.
// It never panics: a panic while it serves the call answers an internal
// error (recoverReply).
func (c *Cluster) serveCall(call *protos.StoreCall) *protos.StoreCallReply {
	return c.serve(context.Background(), call)
}

// serve runs call, which another node routed here or which this node
// sent to a node that left (sendCall), within the budget of budget: the
// deadline of the sending call's context, or else this node's request
// timeout. Nothing else of budget reaches the call: its cancellation
// does not cut the call short midway, as for an actor (callContext).
func (c *Cluster) serve(budget context.Context, call *protos.StoreCall) (rep *protos.StoreCallReply) {
	defer c.recoverReply(callName(call), &rep)
	ctx := otel.GetTextMapPropagator().Extract(context.Background(), propagation.MapCarrier(call.Trace))
	ctx = context.WithValue(ctx, routedKey{}, true)
	if a := call.GetActor(); a != nil {
		ctx = kassa.WithActor(ctx, callActor(a))
	}
	if d, ok := budget.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	ctx, cancel := withBudget(ctx, c.cfg.RequestTimeout)
	defer cancel()
	if call.RequestId == "" {
		return c.runCall(ctx, call)
	}
	ctx = kassa.WithRequest(ctx, kassa.Request{ID: call.RequestId, Fingerprint: call.Fingerprint})
	key := call.StoreId + "/" + call.RequestId + "/" + call.Fingerprint
	return c.calls.once(ctx, key, c.cfg.Clock.Now(), func() *protos.StoreCallReply {
		return c.runCall(ctx, call)
	})
}

// runCall runs a routed call, checked as the sending node's own path
// checks it (wire.go), and answers its result or its error; a panic, an
// internal error (so that the call's memo entry is answered too).
func (c *Cluster) runCall(ctx context.Context, call *protos.StoreCall) (rep *protos.StoreCallReply) {
	defer c.recoverReply(callName(call), &rep)
	// Refused while this node is halted; and the store's grain is
	// activated here, should the call have come by another way than
	// the grain (sendCall runs it here when its node left).
	if _, err := c.remoteStore(ctx, call.StoreId); err != nil {
		return errorReply(c, callName(call), err)
	}
	rep, err := c.handler.dispatchCall(ctx, call)
	if err != nil {
		return errorReply(c, callName(call), err)
	}
	return rep
}

// recoverReply, deferred, turns a panic while this node serves a
// routed call into an internal error answer and a log line with the
// stack: a node's call never ends another node's process.
func (c *Cluster) recoverReply(method string, rep **protos.StoreCallReply) {
	if r := recover(); r != nil {
		c.log.Error("a forwarded call panicked", "method", method, "panic", r, "stack", string(debug.Stack()))
		*rep = &protos.StoreCallReply{Code: kassa.Internal, Message: "internal error"}
	}
}

// codeNothingChanged carries kassa.ErrNothingChanged, the one sentinel
// error of the core that is no kassa.Error: an input that came twice.
const codeNothingChanged = "nothing_changed"

// errorReply turns err into a reply. An internal error's cause stays in
// this node's log, as it would on one node.
func errorReply(s *Cluster, method string, err error) *protos.StoreCallReply {
	if errors.Is(err, kassa.ErrNothingChanged) {
		return &protos.StoreCallReply{Code: codeNothingChanged}
	}
	var e *kassa.Error
	if !errors.As(err, &e) {
		s.log.Error("forwarded call failed", "method", method, "err", err)
		return &protos.StoreCallReply{Code: kassa.Internal, Message: "internal error"}
	}
	rep := &protos.StoreCallReply{Code: e.Code, Message: e.Message}
	for _, f := range e.Fields {
		rep.Fields = append(rep.Fields, &protos.FieldErrorDoc{Field: f.Field, Message: f.Message})
	}
	return rep
}

// replyError is the error a reply carries, nil when it carries none.
func replyError(rep *protos.StoreCallReply) error {
	switch rep.Code {
	case "":
		return nil
	case codeNothingChanged:
		return kassa.ErrNothingChanged
	}
	e := &kassa.Error{Code: rep.Code, Message: rep.Message}
	for _, f := range rep.Fields {
		e.Fields = append(e.Fields, kassa.FieldError{Field: f.GetField(), Message: f.GetMessage()})
	}
	return e
}
