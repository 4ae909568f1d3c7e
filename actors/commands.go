package actors

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/protos"
)

// The cluster commands: each is one field of StoreCall's oneof call
// (protos/storecall.proto), named by the field. A command value
// (command[Req, Rep]) is its wire half: the request message, the parts
// a call must carry and the reply's document. The sending node routes a
// call by it (command.route), from the body of the Service method that
// runs the command. The table below binds each command to the handler
// that runs it on the store's node; the table refuses a call that lacks
// a part before any handler runs, so a handler never sees a missing
// input. TestCommandTableCoversEveryCommand fails on a field of the
// oneof the table does not list.

// command is a cluster command whose request is the message Req and
// whose result, read back from the reply, is Rep.
type command[Req proto.Message, Rep any] struct {
	name protoreflect.Name
	// parts are the fields of Req a call must carry: a document
	// present, an id, amount or label not empty.
	parts  []protoreflect.Name
	result result[Rep]
}

// result is how a command's result travels in its reply.
type result[R any] struct {
	put func(R) *protos.StoreCallReply
	get func(*protos.StoreCallReply) (R, error)
}

var (
	callOneof  = (&protos.StoreCall{}).ProtoReflect().Descriptor().Oneofs().ByName("call")
	replyOneof = (&protos.StoreCallReply{}).ProtoReflect().Descriptor().Oneofs().ByName("value")
)

// errNoResult: a reply without the result its command returns.
var errNoResult = errors.New("the reply carries no result")

// carried is the result carried as document D in the reply's field
// field.
func carried[T any, D proto.Message](field protoreflect.Name) result[*T] {
	fd := replyOneof.Fields().ByName(field)
	if fd == nil {
		panic(fmt.Sprintf("StoreCallReply has no result %s", field))
	}
	return result[*T]{
		put: func(v *T) *protos.StoreCallReply {
			rep := &protos.StoreCallReply{}
			if d := toDoc[D](v).ProtoReflect(); d.IsValid() {
				rep.ProtoReflect().Set(fd, protoreflect.ValueOfMessage(d))
			}
			return rep
		},
		get: func(rep *protos.StoreCallReply) (*T, error) {
			m := rep.ProtoReflect()
			if !m.Has(fd) {
				return nil, errNoResult
			}
			return fromDoc[T](m.Get(fd).Message().Interface().(D))
		},
	}
}

// The results of the commands.
var (
	storeResult          = carried[kassa.Store, *protos.StoreDoc]("store")
	transactionResult    = carried[kassa.Transaction, *protos.TransactionDoc]("transaction")
	invoiceResult        = carried[kassa.Invoice, *protos.InvoiceDoc]("invoice")
	paymentRequestResult = carried[kassa.PaymentRequest, *protos.PaymentRequestDoc]("payment_request")
	webhookResult        = carried[kassa.Webhook, *protos.WebhookDoc]("webhook")
	deliveryResult       = carried[kassa.Delivery, *protos.DeliveryDoc]("delivery")
	apiKeyResult         = carried[kassa.APIKey, *protos.APIKeyDoc]("api_key")
	refundChangeResult   = carried[kassa.RefundChange, *protos.RefundChangeDoc]("refund_change")
	// noResult: a delete or an archive answers nothing but its error.
	noResult = result[struct{}]{
		put: func(struct{}) *protos.StoreCallReply { return &protos.StoreCallReply{} },
		get: func(*protos.StoreCallReply) (struct{}, error) { return struct{}{}, nil },
	}
)

// The commands.
var (
	cmdCreateStore           = command[*protos.CreateStoreCall, *kassa.Store]{"create_store", parts("store"), storeResult}
	cmdTopUp                 = command[*protos.TopUpCall, *kassa.Transaction]{"top_up", parts("amount_sat"), transactionResult}
	cmdCreateInvoice         = command[*protos.CreateInvoiceCall, *kassa.Invoice]{"create_invoice", parts("invoice"), invoiceResult}
	cmdPayPaymentRequest     = command[*protos.PayPaymentRequestCall, *kassa.Invoice]{"pay_payment_request", parts("payment_request_id"), invoiceResult}
	cmdInvoiceCommand        = command[*protos.InvoiceCommandCall, *kassa.Invoice]{"command", parts("invoice_id", "event"), invoiceResult}
	cmdCreatePaymentRequest  = command[*protos.CreatePaymentRequestCall, *kassa.PaymentRequest]{"create_payment_request", parts("input"), paymentRequestResult}
	cmdUpdatePaymentRequest  = command[*protos.UpdatePaymentRequestCall, *kassa.PaymentRequest]{"update_payment_request", parts("payment_request_id", "input"), paymentRequestResult}
	cmdArchivePaymentRequest = command[*protos.ArchivePaymentRequestCall, struct{}]{"archive_payment_request", parts("payment_request_id"), noResult}
	cmdCreateWebhook         = command[*protos.CreateWebhookCall, *kassa.Webhook]{"create_webhook", parts("input"), webhookResult}
	cmdUpdateWebhook         = command[*protos.UpdateWebhookCall, *kassa.Webhook]{"update_webhook", parts("webhook_id", "input"), webhookResult}
	cmdDeleteWebhook         = command[*protos.DeleteWebhookCall, struct{}]{"delete_webhook", parts("webhook_id"), noResult}
	cmdRedeliver             = command[*protos.RedeliverCall, *kassa.Delivery]{"redeliver", parts("webhook_id", "delivery_id"), deliveryResult}
	cmdUpdateStore           = command[*protos.UpdateStoreCall, *kassa.Store]{"update_store", parts("update"), storeResult}
	cmdCreateAPIKey          = command[*protos.CreateAPIKeyCall, *kassa.APIKey]{"create_api_key", parts("label"), apiKeyResult}
	cmdDeleteAPIKey          = command[*protos.DeleteAPIKeyCall, struct{}]{"delete_api_key", parts("key_id"), noResult}
	cmdRevealAPIKey          = command[*protos.RevealAPIKeyCall, *kassa.APIKey]{"reveal_api_key", parts("key_id"), apiKeyResult}
	cmdChangeRefunds         = command[*protos.ChangeRefundsCall, *kassa.RefundChange]{"change_refunds", parts("command"), refundChangeResult}
	cmdChangeMembers         = command[*protos.ChangeMembersCall, *kassa.Store]{"change_members", parts("change"), storeResult}
)

func parts(names ...protoreflect.Name) []protoreflect.Name { return names }

// commands is the table: every command and the handler that runs it on
// the store's node, with the call's store id and its request, which
// carries every part the command names. A handler that cannot decode a
// document answers undecodable(err).
var commands = commandTable(
	handle(cmdCreateStore, func(ctx context.Context, s *Service, id string, c *protos.CreateStoreCall) (*kassa.Store, error) {
		st, err := fromDoc[kassa.Store](c.Store)
		if err != nil {
			return nil, undecodable(err)
		}
		if st.ID != id {
			return nil, kassa.Errorf(kassa.Invalid, "create_store from another node for store %q in a call about %q", st.ID, id)
		}
		if err := s.checkRoutedStore(st); err != nil {
			return nil, err
		}
		return s.createStore(ctx, st)
	}),
	handle(cmdTopUp, func(ctx context.Context, s *Service, id string, c *protos.TopUpCall) (*kassa.Transaction, error) {
		return s.TopUp(ctx, id, kassa.Sats(c.AmountSat), c.Reference)
	}),
	handle(cmdCreateInvoice, func(ctx context.Context, s *Service, id string, c *protos.CreateInvoiceCall) (*kassa.Invoice, error) {
		r, err := fromDoc[kassa.InvoiceRequest](c.Invoice)
		if err != nil {
			return nil, undecodable(err)
		}
		return s.CreateInvoice(ctx, id, r)
	}),
	handle(cmdPayPaymentRequest, func(ctx context.Context, s *Service, id string, c *protos.PayPaymentRequestCall) (*kassa.Invoice, error) {
		return s.PayPaymentRequest(ctx, id, c.PaymentRequestId, c.Session)
	}),
	handle(cmdInvoiceCommand, func(ctx context.Context, s *Service, id string, c *protos.InvoiceCommandCall) (*kassa.Invoice, error) {
		if err := s.checkRoutedEvent(ctx, id, c.InvoiceId, c.Event); err != nil {
			return nil, err
		}
		return s.rt.command(ctx, id, c.InvoiceId, c.Event)
	}),
	handle(cmdCreatePaymentRequest, func(ctx context.Context, s *Service, id string, c *protos.CreatePaymentRequestCall) (*kassa.PaymentRequest, error) {
		in, err := fromDoc[kassa.PaymentRequestInput](c.Input)
		if err != nil {
			return nil, undecodable(err)
		}
		return s.CreatePaymentRequest(ctx, id, in)
	}),
	handle(cmdUpdatePaymentRequest, func(ctx context.Context, s *Service, id string, c *protos.UpdatePaymentRequestCall) (*kassa.PaymentRequest, error) {
		in, err := fromDoc[kassa.PaymentRequestInput](c.Input)
		if err != nil {
			return nil, undecodable(err)
		}
		return s.UpdatePaymentRequest(ctx, id, c.PaymentRequestId, in)
	}),
	handle(cmdArchivePaymentRequest, func(ctx context.Context, s *Service, id string, c *protos.ArchivePaymentRequestCall) (struct{}, error) {
		return struct{}{}, s.ArchivePaymentRequest(ctx, id, c.PaymentRequestId)
	}),
	handle(cmdCreateWebhook, func(ctx context.Context, s *Service, id string, c *protos.CreateWebhookCall) (*kassa.Webhook, error) {
		in, err := fromDoc[kassa.WebhookInput](c.Input)
		if err != nil {
			return nil, undecodable(err)
		}
		return s.CreateWebhook(ctx, id, in)
	}),
	handle(cmdUpdateWebhook, func(ctx context.Context, s *Service, id string, c *protos.UpdateWebhookCall) (*kassa.Webhook, error) {
		in, err := fromDoc[kassa.WebhookInput](c.Input)
		if err != nil {
			return nil, undecodable(err)
		}
		return s.UpdateWebhook(ctx, id, c.WebhookId, in)
	}),
	handle(cmdDeleteWebhook, func(ctx context.Context, s *Service, id string, c *protos.DeleteWebhookCall) (struct{}, error) {
		return struct{}{}, s.DeleteWebhook(ctx, id, c.WebhookId)
	}),
	handle(cmdRedeliver, func(ctx context.Context, s *Service, id string, c *protos.RedeliverCall) (*kassa.Delivery, error) {
		return s.Redeliver(ctx, id, c.WebhookId, c.DeliveryId)
	}),
	handle(cmdUpdateStore, func(ctx context.Context, s *Service, id string, c *protos.UpdateStoreCall) (*kassa.Store, error) {
		u, err := fromDoc[kassa.StoreUpdate](c.Update)
		if err != nil {
			return nil, undecodable(err)
		}
		// No fields: a full update, as a node that predates them sends.
		var only []kassa.StoreField
		for _, f := range c.Fields {
			only = append(only, kassa.StoreField(f))
		}
		return s.UpdateStore(ctx, id, *u, only...)
	}),
	handle(cmdCreateAPIKey, func(ctx context.Context, s *Service, id string, c *protos.CreateAPIKeyCall) (*kassa.APIKey, error) {
		// Permissions as they crossed the wire, unchecked:
		// CreateAPIKey checks them.
		perms := make([]kassa.Permission, len(c.Permissions))
		for i, p := range c.Permissions {
			perms[i] = kassa.Permission(p)
		}
		return s.CreateAPIKey(ctx, id, c.Label, perms...)
	}),
	handle(cmdDeleteAPIKey, func(ctx context.Context, s *Service, id string, c *protos.DeleteAPIKeyCall) (struct{}, error) {
		return struct{}{}, s.DeleteAPIKey(ctx, id, c.KeyId)
	}),
	handle(cmdRevealAPIKey, func(ctx context.Context, s *Service, id string, c *protos.RevealAPIKeyCall) (*kassa.APIKey, error) {
		return s.RevealAPIKey(ctx, id, c.KeyId, c.By)
	}),
	handle(cmdChangeRefunds, func(ctx context.Context, s *Service, id string, c *protos.ChangeRefundsCall) (*kassa.RefundChange, error) {
		cmd, err := fromDoc[kassa.RefundCommand](c.Command)
		if err != nil {
			return nil, undecodable(err)
		}
		return s.ChangeRefunds(ctx, id, cmd)
	}),
	handle(cmdChangeMembers, func(ctx context.Context, s *Service, id string, c *protos.ChangeMembersCall) (*kassa.Store, error) {
		ch, err := fromDoc[kassa.MemberChange](c.Change)
		if err != nil {
			return nil, undecodable(err)
		}
		return s.ChangeMembers(ctx, id, *ch)
	}),
)

// route sends the call req of c, about storeID, to the node that runs
// the store when that is another node, and reads its result from the
// reply; ok says whether it did (or failed to find where the store
// runs: err says why). req makes the request only when the call is
// routed. On a single node, and on the node that runs the store, it
// makes no call.
func (c command[Req, Rep]) route(ctx context.Context, r router, storeID string, req func() Req) (out Rep, ok bool, err error) {
	remote, err := r.remoteStore(ctx, storeID)
	if err != nil || !remote {
		return out, err != nil, err
	}
	rep, err := r.routeCall(ctx, storeID, c.call(req()))
	if err != nil {
		return out, true, err
	}
	out, err = c.result.get(rep)
	if err != nil {
		return out, true, fmt.Errorf("cluster call %s: decode reply: %w", c.name, err)
	}
	return out, true, nil
}

// call is the StoreCall that carries req; the router sets its envelope.
func (c command[Req, Rep]) call(req Req) *protos.StoreCall {
	call := &protos.StoreCall{}
	call.ProtoReflect().Set(callOneof.Fields().ByName(c.name), protoreflect.ValueOfMessage(req.ProtoReflect()))
	return call
}

// handler is a row of the table: a command whatever its types.
type handler struct {
	name  protoreflect.Name
	parts []protoreflect.Name
	// run decodes the request, which check passed, runs the command
	// and answers its reply.
	run func(ctx context.Context, s *Service, storeID string, req protoreflect.Message) (*protos.StoreCallReply, error)
}

// handle binds command c to the function that runs it.
func handle[Req proto.Message, Rep any](c command[Req, Rep], f func(ctx context.Context, s *Service, storeID string, req Req) (Rep, error)) handler {
	return handler{name: c.name, parts: c.parts, run: func(ctx context.Context, s *Service, storeID string, req protoreflect.Message) (*protos.StoreCallReply, error) {
		out, err := f(ctx, s, storeID, req.Interface().(Req))
		if err != nil {
			return nil, err
		}
		return c.result.put(out), nil
	}}
}

// commandTable indexes the handlers by name. A part that is not a field
// of its command's request, or a name that is not a field of the
// oneof, is a programming error and panics at start.
func commandTable(hs ...handler) map[protoreflect.Name]handler {
	t := make(map[protoreflect.Name]handler, len(hs))
	for _, h := range hs {
		fd := callOneof.Fields().ByName(h.name)
		if fd == nil {
			panic(fmt.Sprintf("StoreCall has no command %s", h.name))
		}
		for _, p := range h.parts {
			if fd.Message().Fields().ByName(p) == nil {
				panic(fmt.Sprintf("command %s has no part %s", h.name, p))
			}
		}
		if _, dup := t[h.name]; dup {
			panic(fmt.Sprintf("command %s listed twice", h.name))
		}
		t[h.name] = h
	}
	return t
}

// errUndecodable marks a document of a call that does not decode.
type errUndecodable struct{ err error }

func (e errUndecodable) Error() string { return e.err.Error() }

// undecodable is the error of a handler whose request carries a
// document that does not decode (a decimal that does not parse, a time
// or status out of range).
func undecodable(err error) error { return errUndecodable{err} }

// dispatchCall runs a call another node sent (Cluster.serveCall) on
// this node, which runs its store: the table checks that the call is
// whole (checkCall) and runs the command's handler. A call that lacks a
// part or does not decode is an invalid_request naming the command. The
// Service methods validate their input themselves; the two internal
// commands, create_store and command, get the checks of wire.go first.
func (s *Service) dispatchCall(ctx context.Context, call *protos.StoreCall) (*protos.StoreCallReply, error) {
	h, req, err := checkCall(call)
	if err != nil {
		return nil, err
	}
	rep, err := h.run(ctx, s, call.StoreId, req)
	if e, bad := err.(errUndecodable); bad {
		return nil, kassa.Errorf(kassa.Invalid, "%s from another node: %v", h.name, e.err)
	}
	return rep, err
}

// checkCall checks that a call another node sent is whole: it names a
// store, carries a command of the table, and each part the command
// lists. It answers the command's handler and request, or an
// invalid_request naming the command and what is missing.
func checkCall(call *protos.StoreCall) (handler, protoreflect.Message, error) {
	m := call.ProtoReflect()
	fd := m.WhichOneof(callOneof)
	if fd == nil {
		return handler{}, nil, kassa.Errorf(kassa.Invalid, "a call from another node without a command this node knows")
	}
	name := fd.Name()
	h, known := commands[name]
	req := m.Get(fd).Message()
	if !known || !req.IsValid() {
		return handler{}, nil, kassa.Errorf(kassa.Invalid, "%s from another node: a command this node does not know", name)
	}
	if call.StoreId == "" {
		return handler{}, nil, kassa.Errorf(kassa.Invalid, "%s from another node without its store_id", name)
	}
	fields := req.Descriptor().Fields()
	for _, p := range h.parts {
		if !req.Has(fields.ByName(p)) {
			return handler{}, nil, kassa.Errorf(kassa.Invalid, "%s from another node without its %s", name, p)
		}
	}
	return h, req, nil
}

// callName names call's command, for logs: "create_invoice", "top_up", ….
func callName(call *protos.StoreCall) string {
	m := call.ProtoReflect()
	if f := m.WhichOneof(callOneof); f != nil {
		return string(f.Name())
	}
	return "none"
}
