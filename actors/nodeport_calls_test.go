package actors

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/protos"
)

// callFields are the fields of StoreCall's oneof call: one a command.
func callFields() []protoreflect.FieldDescriptor {
	o := (&protos.StoreCall{}).ProtoReflect().Descriptor().Oneofs().ByName("call")
	out := make([]protoreflect.FieldDescriptor, o.Fields().Len())
	for i := range out {
		out[i] = o.Fields().Get(i)
	}
	return out
}

// emptyCall is a call about storeID whose command fd is the empty
// message, as a node sends it with a command field of length 0.
func emptyCall(storeID string, fd protoreflect.FieldDescriptor) *protos.StoreCall {
	c := &protos.StoreCall{StoreId: storeID, RequestId: kassa.NewID("req_")}
	m := c.ProtoReflect()
	m.Set(fd, protoreflect.ValueOfMessage(m.NewField(fd).Message()))
	return c
}

// TestEmptyStoreCallsAnswerAnError: each command of a StoreCall sent
// empty (no input, no id, no amount), as a node with a valid
// certificate can send it, is refused when the call is decoded: the
// caller gets an invalid_request naming the command and the missing
// part, at once, and the node lives on. So are a call without a
// command, one with a nil command, and one about no store. Before, an
// empty CreateWebhook or CreateInvoice panicked the node, and an empty
// CreatePaymentRequest waited 10 s for the store actor it had crashed.
func TestEmptyStoreCallsAnswerAnError(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Now()))
	st := h.createStore("0", "0")
	calls := map[string]*protos.StoreCall{
		"no command":    {StoreId: st.ID, RequestId: "req_none"},
		"no store":      {RequestId: "req_nostore", Call: &protos.StoreCall_CreateApiKey{CreateApiKey: &protos.CreateAPIKeyCall{Label: "x"}}},
		"nil webhook":   {StoreId: st.ID, Call: &protos.StoreCall_CreateWebhook{}},
		"nil pay link":  {StoreId: st.ID, Call: &protos.StoreCall_CreatePaymentRequest{}},
		"nil update":    {StoreId: st.ID, Call: &protos.StoreCall_UpdateStore{}},
		"nil create st": {StoreId: st.ID, Call: &protos.StoreCall_CreateStore{}},
	}
	for _, fd := range callFields() {
		calls[string(fd.Name())] = emptyCall(st.ID, fd)
	}
	for name, call := range calls {
		// As the wire carries it.
		b, err := proto.Marshal(call)
		if err != nil {
			t.Fatal(err)
		}
		got := new(protos.StoreCall)
		if err := proto.Unmarshal(b, got); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(name, "nil ") {
			got = call // a nil command does not travel; a node's own code could make one
		}
		rep := h.sys.Cluster.serveCall(got)
		if rep.Code != kassa.Invalid {
			t.Errorf("%s: answered %q %q, want %s", name, rep.Code, rep.Message, kassa.Invalid)
			continue
		}
		if want := callName(got); want != "none" && !strings.Contains(rep.Message, want) {
			t.Errorf("%s: message %q does not name the command %s", name, rep.Message, want)
		}
	}
	// The node lives, and its store actor answers.
	h.invoice("10", kassa.EUR)
	if _, err := h.sys.Service.CreatePaymentRequest(context.Background(), st.ID, &kassa.PaymentRequestInput{Title: "Still here", Amount: decimal.NewFromInt(5), HasAmount: true, Currency: kassa.EUR}); err != nil {
		t.Fatal(err)
	}
}

// TestCommandTableCoversEveryCommand: every command of StoreCall has a
// row in the table, and each part the row names is a field of the
// command (commandTable panics on one that is not).
func TestCommandTableCoversEveryCommand(t *testing.T) {
	for _, fd := range callFields() {
		h, ok := commands[fd.Name()]
		if !ok {
			t.Errorf("command %s has no row in the command table", fd.Name())
			continue
		}
		for _, p := range h.parts {
			if fd.Message().Fields().ByName(p) == nil {
				t.Errorf("command %s: the table names part %s, which it does not have", fd.Name(), p)
			}
		}
	}
	if len(commands) != len(callFields()) {
		t.Errorf("the command table has %d rows for %d commands", len(commands), len(callFields()))
	}
}

// TestEmptyCommandReachesNoHandler: for every command of StoreCall, a
// call whose command is the empty message, or that lacks any one of
// the parts its row names, is refused by the table with one
// invalid_request naming the command and the part, and its handler
// does not run (a handler that ran would get a nil Service here). The
// call with every part (the positive control) passes the check.
func TestEmptyCommandReachesNoHandler(t *testing.T) {
	for _, fd := range callFields() {
		h, ok := commands[fd.Name()]
		if !ok {
			t.Errorf("command %s has no row in the command table", fd.Name())
			continue
		}
		if len(h.parts) == 0 {
			t.Errorf("command %s names no part it needs", fd.Name())
		}
		// A document the row does not require would reach its handler
		// as nil.
		docs := fd.Message().Fields()
		for i := 0; i < docs.Len(); i++ {
			if f := docs.Get(i); f.Message() != nil && !f.IsList() && !f.IsMap() && !slices.Contains(h.parts, f.Name()) {
				t.Errorf("command %s: document %s is not among its required parts", fd.Name(), f.Name())
			}
		}
		call := emptyCall("st_1", fd)
		if rep, err := (*Service)(nil).dispatchCall(context.Background(), call); err == nil || kassa.ErrorCode(err) != kassa.Invalid ||
			!strings.Contains(err.Error(), string(fd.Name())) {
			t.Errorf("empty %s: answered %v, %v; want one invalid_request naming it", fd.Name(), rep, err)
		}
		// Each part missing alone.
		full := func() protoreflect.Message {
			c := emptyCall("st_1", fd)
			cmd := c.ProtoReflect().Get(fd).Message()
			for _, p := range h.parts {
				pf := cmd.Descriptor().Fields().ByName(p)
				switch {
				case pf.Message() != nil:
					cmd.Set(pf, protoreflect.ValueOfMessage(cmd.NewField(pf).Message()))
				case pf.Kind() == protoreflect.StringKind:
					cmd.Set(pf, protoreflect.ValueOfString("x"))
				case pf.Kind() == protoreflect.Int64Kind:
					cmd.Set(pf, protoreflect.ValueOfInt64(1))
				default:
					t.Fatalf("command %s: no value for part %s of kind %s", fd.Name(), p, pf.Kind())
				}
			}
			return c.ProtoReflect()
		}
		for _, p := range h.parts {
			m := full()
			cmd := m.Get(fd).Message()
			cmd.Clear(cmd.Descriptor().Fields().ByName(p))
			_, _, err := checkCall(m.Interface().(*protos.StoreCall))
			if want := fmt.Sprintf("%s from another node without its %s", fd.Name(), p); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s without %s: %v, want %q", fd.Name(), p, err, want)
			}
		}
		if _, _, err := checkCall(full().Interface().(*protos.StoreCall)); err != nil {
			t.Errorf("%s with every part: %v", fd.Name(), err)
		}
	}
}

// callHandlerFunc is a callHandler made of a function.
type callHandlerFunc func(context.Context, *protos.StoreCall) (*protos.StoreCallReply, error)

func (f callHandlerFunc) dispatchCall(ctx context.Context, c *protos.StoreCall) (*protos.StoreCallReply, error) {
	return f(ctx, c)
}

// TestStoreCallPanicAnswersInternal: a panic while a node serves a
// forwarded call answers the call with an internal error and leaves a
// log line with the stack; the node lives on, and the call's request id
// runs again on a retry. Before, a panic in the store grain's goroutine
// ended the process.
func TestStoreCallPanicAnswersInternal(t *testing.T) {
	var logs kassatest.LogBuffer
	h := newHarnessWith(t, openMem(t), kassatest.NewTestClock(time.Now()), func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	st := h.createStore("0", "0")
	handler := h.sys.Cluster.handler
	panics := true
	h.sys.Cluster.handler = callHandlerFunc(func(ctx context.Context, c *protos.StoreCall) (*protos.StoreCallReply, error) {
		if panics {
			panic("boom")
		}
		return handler.dispatchCall(ctx, c)
	})
	call := &protos.StoreCall{StoreId: st.ID, RequestId: "req_boom", Call: &protos.StoreCall_CreateApiKey{CreateApiKey: &protos.CreateAPIKeyCall{Label: "boom"}}}
	if rep := h.sys.Cluster.serveCall(proto.Clone(call).(*protos.StoreCall)); rep.Code != kassa.Internal || rep.Message != "internal error" {
		t.Fatalf("a panicking call answered %v, want %s", rep, kassa.Internal)
	}
	if out := logs.String(); !strings.Contains(out, "a forwarded call panicked") || !strings.Contains(out, "goroutine") {
		t.Errorf("no log line with the panic and its stack: %s", out)
	}
	panics = false
	if rep := h.sys.Cluster.serveCall(call); rep.Code != "" || rep.GetApiKey().GetLabel() != "boom" {
		t.Fatalf("the call again after its panic: %v", rep)
	}
}

// TestClusterNodePortSurvivesEmptyCalls sends, through a node's port
// with a node certificate, an empty CreateWebhook, CreateInvoice and
// CreatePaymentRequest to a store's grain: each is answered with an
// invalid_request, and the node lives on. Before, the first one ended
// the node's process. Skipped in the fast tier (skipRemoteUnderRace).
func TestClusterNodePortSurvivesEmptyCalls(t *testing.T) {
	t.Parallel()
	dir := clusterCerts(t, 2)
	h, addr := tlsNode(t, dir, 1)
	st := h.createStore("0", "0")
	peer := loadNodeTLS(t, dir, 2)
	node := remoteClient(t, grpc.WithTransportCredentials(credentials.NewTLS(peer.Client)), grpc.Creds(credentials.NewTLS(peer.Server)))
	for _, call := range []*protos.StoreCall{
		{StoreId: st.ID, RequestId: "req_1", Call: &protos.StoreCall_CreateWebhook{CreateWebhook: &protos.CreateWebhookCall{}}},
		{StoreId: st.ID, RequestId: "req_2", Call: &protos.StoreCall_CreateInvoice{CreateInvoice: &protos.CreateInvoiceCall{}}},
		{StoreId: st.ID, RequestId: "req_3", Call: &protos.StoreCall_CreatePaymentRequest{CreatePaymentRequest: &protos.CreatePaymentRequestCall{}}},
	} {
		rep, err := remoteStoreCall(node, addr, call, controlBudget(t))
		if err != nil {
			t.Fatalf("%s: %v", callName(call), err)
		}
		if rep.Code != kassa.Invalid {
			t.Errorf("%s: answered %v, want %s", callName(call), rep, kassa.Invalid)
		}
	}
	if err := remoteTopUp(node, addr, st.ID, 1234, controlBudget(t)); err != nil {
		t.Fatalf("the node after the empty calls: %v", err)
	}
}

// TestBackgroundTaskPanicIsLogged: a goroutine that another node's
// messages start (goRecovered) logs a panic with its stack, and the
// process lives on.
func TestBackgroundTaskPanicIsLogged(t *testing.T) {
	var logs kassatest.LogBuffer
	h := newHarnessWith(t, openMem(t), kassatest.NewTestClock(time.Now()), func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	h.sys.Runtime.goRecovered("test task", func() { panic("boom") })
	eventually(t, "the panic's log line", func() bool {
		out := logs.String()
		return strings.Contains(out, "a background task panicked") && strings.Contains(out, "test task") && strings.Contains(out, "goroutine")
	})
}
