package actors

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/protos"
)

// createCall is one kind of forwarded create: its call with request id
// req, and how many things of its kind the store has.
type createCall struct {
	method string
	args   func() *protos.StoreCall // the command
	count  func(t *testing.T, r kassa.Reader, storeID string) int
}

func createCalls() []createCall {
	invoices := func(t *testing.T, r kassa.Reader, storeID string) int {
		n := 0
		if _, err := r.Invoices(context.Background(), storeID, kassa.ListQuery{}, func(*kassa.Invoice) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	return []createCall{
		{"CreateInvoice", func() *protos.StoreCall {
			return &protos.StoreCall{Call: &protos.StoreCall_CreateInvoice{CreateInvoice: &protos.CreateInvoiceCall{
				Invoice: toDoc[*protos.InvoiceRequestDoc](&kassa.InvoiceRequest{Amount: decimal.NewFromInt(5000), HasAmount: true, Currency: kassa.SATS, OrderID: "order-1"})}}}
		}, invoices},
		{"TopUp", func() *protos.StoreCall {
			return &protos.StoreCall{Call: &protos.StoreCall_TopUp{TopUp: &protos.TopUpCall{AmountSat: 10_000}}}
		},
			func(t *testing.T, r kassa.Reader, storeID string) int {
				n := 0
				if _, err := r.Transactions(context.Background(), storeID, kassa.ListQuery{}, func(tx *kassa.Transaction) error {
					if tx.Type == kassa.TransactionTopUp {
						n++
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				return n
			}},
		{"CreateWebhook", func() *protos.StoreCall {
			return &protos.StoreCall{Call: &protos.StoreCall_CreateWebhook{CreateWebhook: &protos.CreateWebhookCall{
				Input: toDoc[*protos.WebhookInputDoc](&kassa.WebhookInput{URL: "https://shop.example/hook"})}}}
		}, func(t *testing.T, r kassa.Reader, storeID string) int {
			n := 0
			if err := r.Webhooks(context.Background(), storeID, func(*kassa.Webhook) error { n++; return nil }); err != nil {
				t.Fatal(err)
			}
			return n
		}},
		{"CreateAPIKey", func() *protos.StoreCall {
			return &protos.StoreCall{Call: &protos.StoreCall_CreateApiKey{CreateApiKey: &protos.CreateAPIKeyCall{Label: "plugin"}}}
		},
			func(t *testing.T, r kassa.Reader, storeID string) int {
				st, err := r.Store(context.Background(), storeID)
				if err != nil {
					t.Fatal(err)
				}
				return len(st.APIKeys) - 1 // the store's first key
			}},
		{"CreatePaymentRequest", func() *protos.StoreCall {
			return &protos.StoreCall{Call: &protos.StoreCall_CreatePaymentRequest{CreatePaymentRequest: &protos.CreatePaymentRequestCall{
				Input: toDoc[*protos.PaymentRequestInputDoc](&kassa.PaymentRequestInput{Title: "Donation", Amount: decimal.NewFromInt(2000), HasAmount: true, Currency: kassa.SATS})}}}
		}, func(t *testing.T, r kassa.Reader, storeID string) int {
			n := 0
			if err := r.PaymentRequests(context.Background(), storeID, func(*kassa.PaymentRequest) error { n++; return nil }); err != nil {
				t.Fatal(err)
			}
			return n
		}},
	}
}

// call is c as the forwarding node sends it, with request id req.
func (c createCall) call(t *testing.T, storeID, req string) *protos.StoreCall {
	t.Helper()
	call := c.args()
	call.StoreId, call.RequestId = storeID, req
	return call
}

// resultID is the id of what a reply says was created.
func resultID(t *testing.T, rep *protos.StoreCallReply) string {
	t.Helper()
	if rep.Code != "" {
		t.Fatalf("call answered %s: %s", rep.Code, rep.Message)
	}
	// The id field of the document the reply carries.
	m := rep.ProtoReflect()
	f := m.WhichOneof(m.Descriptor().Oneofs().ByName("value"))
	if f == nil {
		t.Fatalf("reply %v carries no document", rep)
	}
	doc := m.Get(f).Message()
	id := doc.Get(doc.Descriptor().Fields().ByName("id")).Interface()
	if s := fmt.Sprint(id); s == "" || s == "0" {
		t.Fatalf("reply %v names no id", rep)
	}
	return fmt.Sprint(id)
}

// TestCreateOnceAcrossActivations: the node that runs a store commits a
// forwarded create and dies before its reply goes out; the forwarding
// node sends the call again, with the same request id, to the store's
// next node (another System over the same storage). That node answers
// what the first created, and nothing is created twice: one invoice per
// create request, one top-up, webhook, API key and pay link. Before, the
// request id lived in the first node's memory only, and the second node
// created a second invoice (whose order id the shop had already seen).
// Both on Pebble (one node restarted) and PostgreSQL (two nodes).
func TestCreateOnceAcrossActivations(t *testing.T) {
	clock := kassatest.NewTestClock(time.Now())
	for _, backend := range []string{"pebble", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			first, second := requestNodes(t, backend, clock)
			st := first.createStore("0", "0")
			for _, c := range createCalls() {
				t.Run(c.method, func(t *testing.T) {
					call := func() *protos.StoreCall { return c.call(t, st.ID, "req_"+c.method) }
					// The reply of the first node is lost with it.
					want := resultID(t, first.sys.Cluster.serveCall(call()))
					got := resultID(t, second.sys.Cluster.serveCall(call()))
					if got != want {
						t.Errorf("the retry on the next node answered %s, the first node created %s", got, want)
					}
					if n := c.count(t, second.sys.Runtime.cfg.Reader, st.ID); n != 1 {
						t.Errorf("one %s request, retried on another node, made %d", c.method, n)
					}
					// Another request id is another create (on the
					// first node, whose actor of the store is current).
					if other := resultID(t, first.sys.Cluster.serveCall(c.call(t, st.ID, "req_other_"+c.method))); other == want {
						t.Errorf("another request id answered the first create %s", want)
					}
				})
			}
		})
	}
}

// requestNodes returns two Systems over one storage: on Pebble the same
// store reopened by a second System (a restart), on PostgreSQL two
// nodes' handles on one schema.
func requestNodes(t *testing.T, backend string, clock *kassatest.TestClock) (a, b *harness) {
	t.Helper()
	if backend == "pebble" {
		db := openMem(t)
		return newHarness(t, db, clock), newHarness(t, db, clock)
	}
	pgA, open := openPG(t, clock)
	pgB := open()
	use := func(j interface {
		kassa.Journal
		kassa.Reader
	}) func(*Config) {
		return func(c *Config) { c.Journal, c.Reader = j, j }
	}
	return newHarnessWith(t, openMem(t), clock, use(pgA)), newHarnessWith(t, openMem(t), clock, use(pgB))
}

// TestCreateOnceWhenActivationsRace: two activations run one request at
// once, and the second looked for the request id before the first
// recorded it: its commit is refused (the request id is recorded), and
// it answers the first one's invoice rather than an error or a second
// invoice.
func TestCreateOnceWhenActivationsRace(t *testing.T) {
	clock := kassatest.NewTestClock(time.Now())
	for _, backend := range []string{"pebble", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			first, second := requestNodes(t, backend, clock)
			st := first.createStore("0", "0")
			c := createCalls()[0]
			var want string
			journal := &faultyJournal{Journal: second.sys.Runtime.cfg.Journal}
			journal.commitErr = func() error {
				// The first activation completes the same request
				// while the second is about to commit.
				journal.commitErr = nil
				want = resultID(t, first.sys.Cluster.serveCall(c.call(t, st.ID, "req_race")))
				return nil
			}
			second.sys.Runtime.cfg.Journal = journal
			got := resultID(t, second.sys.Cluster.serveCall(c.call(t, st.ID, "req_race")))
			if got != want {
				t.Errorf("the losing activation answered %s, the winner created %s", got, want)
			}
			if n := c.count(t, second.sys.Runtime.cfg.Reader, st.ID); n != 1 {
				t.Errorf("one request run by two activations at once made %d invoices", n)
			}
		})
	}
}

// TestRequestIDOfAnotherRequest: a request id reused with another
// fingerprint (an Idempotency-Key sent again with another body) is
// refused with Conflict, on another node too.
func TestRequestIDOfAnotherRequest(t *testing.T) {
	clock := kassatest.NewTestClock(time.Now())
	first, second := requestNodes(t, "postgres", clock)
	st := first.createStore("0", "0")
	req := func(fp string) context.Context {
		return kassa.WithRequest(context.Background(), kassa.Request{ID: kassa.IdempotencyRequestID("key-1"), Fingerprint: fp})
	}
	r := &kassa.InvoiceRequest{Amount: decimal.NewFromInt(5000), HasAmount: true, Currency: kassa.SATS}
	inv, err := first.sys.Service.CreateInvoice(req("a"), st.ID, r)
	if err != nil {
		t.Fatal(err)
	}
	again, err := second.sys.Service.CreateInvoice(req("a"), st.ID, r)
	if err != nil || again.ID != inv.ID {
		t.Fatalf("the same key and fingerprint on another node: %v, %v; want invoice %s", again, err, inv.ID)
	}
	if _, err := second.sys.Service.CreateInvoice(req("b"), st.ID, r); kassa.ErrorCode(err) != kassa.Conflict {
		t.Fatalf("the same key with another fingerprint: %v, want Conflict", err)
	}
	if n := createCalls()[0].count(t, second.sys.Runtime.cfg.Reader, st.ID); n != 1 {
		t.Errorf("%d invoices, want 1", n)
	}
}
