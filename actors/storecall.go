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
// one typed message per command in its oneof, the documents it carries
// and returns mirrored field by field (wireenc.go, wiredec.go), the
// request id, fingerprint and trace context in the envelope. Each
// command of the Service has one body, which starts with route: when
// another node runs the store, route sends the call there and answers
// its reply; else the body runs on. The node that runs the store decodes
// the call (Service.dispatchCall) and runs the same body, where route
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

// route sends the call that call makes, about storeID, to the node
// that runs the store when that is another node, and reads the result
// from its reply with value; ok says whether it did (or failed to find
// where the store runs: err says why). The caller makes the call's
// command; the router sets the envelope. On a single node, and on the
// node that runs the store, it makes no call.
func route[T any](ctx context.Context, r router, storeID string, call func() *protos.StoreCall, value func(*protos.StoreCallReply) (T, error)) (out T, ok bool, err error) {
	remote, err := r.remoteStore(ctx, storeID)
	if err != nil || !remote {
		return out, err != nil, err
	}
	c := call()
	rep, err := r.routeCall(ctx, storeID, c)
	if err != nil {
		return out, true, err
	}
	out, err = value(rep)
	if err != nil {
		return out, true, fmt.Errorf("cluster call %s: decode reply: %w", callName(c), err)
	}
	return out, true, nil
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

// callName names call's command, for logs: "create_invoice", "top_up", ….
func callName(call *protos.StoreCall) string {
	m := call.ProtoReflect()
	if f := m.WhichOneof(m.Descriptor().Oneofs().ByName("call")); f != nil {
		return string(f.Name())
	}
	return "none"
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

// dispatchCall runs a call another node sent (Cluster.serveCall) on
// this node, which runs its store: it checks that the call is whole
// (checkCall), decodes the call's command and runs the command's body.
// A call that lacks a part or does not decode is an invalid_request.
// The bodies validate their input themselves; the two internal
// commands, CreateStore and Command, get the checks of wire.go first.
func (s *Service) dispatchCall(ctx context.Context, call *protos.StoreCall) (*protos.StoreCallReply, error) {
	if err := checkCall(call); err != nil {
		return nil, err
	}
	id := call.StoreId
	switch c := call.Call.(type) {
	case *protos.StoreCall_CreateStore:
		st, err := storeIn(c.CreateStore.GetStore())
		if err != nil {
			return nil, decodeError(call, err)
		}
		if st.ID != id {
			return nil, kassa.Errorf(kassa.Invalid, "create_store from another node for store %q in a call about %q", st.ID, id)
		}
		if err := s.checkRoutedStore(st); err != nil {
			return nil, err
		}
		return storeReply(s.createStore(ctx, st))
	case *protos.StoreCall_TopUp:
		return transactionReply(s.TopUp(ctx, id, kassa.Sats(c.TopUp.GetAmountSat()), c.TopUp.GetReference()))
	case *protos.StoreCall_CreateInvoice:
		r, err := invoiceRequestIn(c.CreateInvoice.GetInvoice())
		if err != nil {
			return nil, decodeError(call, err)
		}
		return invoiceReply(s.CreateInvoice(ctx, id, r))
	case *protos.StoreCall_PayPaymentRequest:
		p := c.PayPaymentRequest
		return invoiceReply(s.PayPaymentRequest(ctx, id, p.GetPaymentRequestId(), p.GetSession()))
	case *protos.StoreCall_Command:
		ev := c.Command.GetEvent()
		if err := s.checkRoutedEvent(ctx, id, c.Command.GetInvoiceId(), ev); err != nil {
			return nil, err
		}
		return invoiceReply(s.rt.command(ctx, id, c.Command.GetInvoiceId(), ev))
	case *protos.StoreCall_CreatePaymentRequest:
		in, err := paymentRequestInputIn(c.CreatePaymentRequest.GetInput())
		if err != nil {
			return nil, decodeError(call, err)
		}
		return paymentRequestReply(s.CreatePaymentRequest(ctx, id, in))
	case *protos.StoreCall_UpdatePaymentRequest:
		in, err := paymentRequestInputIn(c.UpdatePaymentRequest.GetInput())
		if err != nil {
			return nil, decodeError(call, err)
		}
		return paymentRequestReply(s.UpdatePaymentRequest(ctx, id, c.UpdatePaymentRequest.GetPaymentRequestId(), in))
	case *protos.StoreCall_ArchivePaymentRequest:
		return noReply(s.ArchivePaymentRequest(ctx, id, c.ArchivePaymentRequest.GetPaymentRequestId()))
	case *protos.StoreCall_CreateWebhook:
		return webhookReply(s.CreateWebhook(ctx, id, webhookInputIn(c.CreateWebhook.GetInput())))
	case *protos.StoreCall_UpdateWebhook:
		return webhookReply(s.UpdateWebhook(ctx, id, c.UpdateWebhook.GetWebhookId(), webhookInputIn(c.UpdateWebhook.GetInput())))
	case *protos.StoreCall_DeleteWebhook:
		return noReply(s.DeleteWebhook(ctx, id, c.DeleteWebhook.GetWebhookId()))
	case *protos.StoreCall_Redeliver:
		return deliveryReply(s.Redeliver(ctx, id, c.Redeliver.GetWebhookId(), c.Redeliver.GetDeliveryId()))
	case *protos.StoreCall_UpdateStore:
		return storeReply(s.UpdateStore(ctx, id, storeUpdateIn(c.UpdateStore.GetUpdate())))
	case *protos.StoreCall_CreateApiKey:
		return apiKeyReply(s.CreateAPIKey(ctx, id, c.CreateApiKey.GetLabel(), permissionsIn(c.CreateApiKey.GetPermissions())...))
	case *protos.StoreCall_DeleteApiKey:
		return noReply(s.DeleteAPIKey(ctx, id, c.DeleteApiKey.GetKeyId()))
	case *protos.StoreCall_RevealApiKey:
		return apiKeyReply(s.RevealAPIKey(ctx, id, c.RevealApiKey.GetKeyId(), c.RevealApiKey.GetBy()))
	}
	return nil, kassa.Errorf(kassa.Invalid, "a call from another node without a command this node knows")
}

// The replies of the commands, by their result.

func storeReply(st *kassa.Store, err error) (*protos.StoreCallReply, error) {
	if err != nil {
		return nil, err
	}
	return &protos.StoreCallReply{Value: &protos.StoreCallReply_Store{Store: storeOut(st)}}, nil
}

func transactionReply(t *kassa.Transaction, err error) (*protos.StoreCallReply, error) {
	if err != nil {
		return nil, err
	}
	return &protos.StoreCallReply{Value: &protos.StoreCallReply_Transaction{Transaction: transactionOut(t)}}, nil
}

func invoiceReply(inv *kassa.Invoice, err error) (*protos.StoreCallReply, error) {
	if err != nil {
		return nil, err
	}
	return &protos.StoreCallReply{Value: &protos.StoreCallReply_Invoice{Invoice: invoiceOut(inv)}}, nil
}

func paymentRequestReply(p *kassa.PaymentRequest, err error) (*protos.StoreCallReply, error) {
	if err != nil {
		return nil, err
	}
	return &protos.StoreCallReply{Value: &protos.StoreCallReply_PaymentRequest{PaymentRequest: paymentRequestOut(p)}}, nil
}

func webhookReply(w *kassa.Webhook, err error) (*protos.StoreCallReply, error) {
	if err != nil {
		return nil, err
	}
	return &protos.StoreCallReply{Value: &protos.StoreCallReply_Webhook{Webhook: webhookOut(w)}}, nil
}

func deliveryReply(d *kassa.Delivery, err error) (*protos.StoreCallReply, error) {
	if err != nil {
		return nil, err
	}
	return &protos.StoreCallReply{Value: &protos.StoreCallReply_Delivery{Delivery: deliveryOut(d)}}, nil
}

func apiKeyReply(k *kassa.APIKey, err error) (*protos.StoreCallReply, error) {
	if err != nil {
		return nil, err
	}
	return &protos.StoreCallReply{Value: &protos.StoreCallReply_ApiKey{ApiKey: apiKeyOut(k)}}, nil
}

func noReply(err error) (*protos.StoreCallReply, error) {
	if err != nil {
		return nil, err
	}
	return &protos.StoreCallReply{}, nil
}

// The results read back from the replies: a reply without the result
// its command returns is an error.

var errNoResult = errors.New("the reply carries no result")

func storeResult(rep *protos.StoreCallReply) (*kassa.Store, error) {
	if rep.GetStore() == nil {
		return nil, errNoResult
	}
	return storeIn(rep.GetStore())
}

func transactionResult(rep *protos.StoreCallReply) (*kassa.Transaction, error) {
	if rep.GetTransaction() == nil {
		return nil, errNoResult
	}
	return transactionIn(rep.GetTransaction())
}

func invoiceResult(rep *protos.StoreCallReply) (*kassa.Invoice, error) {
	if rep.GetInvoice() == nil {
		return nil, errNoResult
	}
	return invoiceIn(rep.GetInvoice())
}

func paymentRequestResult(rep *protos.StoreCallReply) (*kassa.PaymentRequest, error) {
	if rep.GetPaymentRequest() == nil {
		return nil, errNoResult
	}
	return paymentRequestIn(rep.GetPaymentRequest())
}

func webhookResult(rep *protos.StoreCallReply) (*kassa.Webhook, error) {
	if rep.GetWebhook() == nil {
		return nil, errNoResult
	}
	return webhookIn(rep.GetWebhook())
}

func deliveryResult(rep *protos.StoreCallReply) (*kassa.Delivery, error) {
	if rep.GetDelivery() == nil {
		return nil, errNoResult
	}
	return deliveryIn(rep.GetDelivery())
}

func apiKeyResult(rep *protos.StoreCallReply) (*kassa.APIKey, error) {
	if rep.GetApiKey() == nil {
		return nil, errNoResult
	}
	k := apiKeyIn(new(wireReader), rep.GetApiKey())
	return &k, nil
}

func noResult(*protos.StoreCallReply) (struct{}, error) { return struct{}{}, nil }

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
