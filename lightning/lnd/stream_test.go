package lnd_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/kassapay/kassa/lightning/lnd"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc"
)

// streamServer is invoiceServer with an invoice stream that sends
// updates and then waits for the client to go.
type streamServer struct {
	*invoiceServer
	updates []*lnrpc.Invoice
	from    chan uint64
}

func (s *streamServer) SubscribeInvoices(in *lnrpc.InvoiceSubscription, stream grpc.ServerStreamingServer[lnrpc.Invoice]) error {
	s.from <- in.SettleIndex
	for _, u := range s.updates {
		if err := stream.Send(u); err != nil {
			return err
		}
	}
	<-stream.Context().Done()
	return nil
}

// TestInvoiceStreamGivesSettles streams lnd's kinds of invoice updates
// over real gRPC: the receive function of lnd.Dial's connection gives
// the settles with a settle index, each equal to what lnd sent, in
// order, and none of the other updates (an added invoice, an accepted
// HTLC, a cancel), which the watcher drops.
func TestInvoiceStreamGivesSettles(t *testing.T) {
	t.Parallel()
	features := map[uint32]*lnrpc.Feature{9: {Name: "tlv-onion", IsRequired: true, IsKnown: true}, 14: {Name: "payment-addr", IsKnown: true}}
	hints := []*lnrpc.RouteHint{{HopHints: []*lnrpc.HopHint{{NodeId: "02ab", ChanId: 7, FeeBaseMsat: 1000, CltvExpiryDelta: 40}}}}
	open := &lnrpc.Invoice{Memo: "Shop order 42", RHash: []byte("hash-open-000000000000000000000"), ValueMsat: 1_000_000, Value: 1000,
		CreationDate: 1_700_000_000, PaymentRequest: "lnbcrt10u1pexample", Expiry: 900, CltvExpiry: 80, RouteHints: hints,
		AddIndex: 41, State: lnrpc.Invoice_OPEN, Features: features, PaymentAddr: make([]byte, 32)}
	settled := proto.Clone(open).(*lnrpc.Invoice)
	settled.RHash, settled.AddIndex = []byte("hash-settled-000000000000000000"), 40
	settled.State, settled.SettleIndex, settled.SettleDate = lnrpc.Invoice_SETTLED, 7, 1_700_000_100
	settled.AmtPaidMsat, settled.AmtPaidSat, settled.RPreimage = 1_000_000, 1000, []byte("preimage")
	settled.Htlcs = []*lnrpc.InvoiceHTLC{{ChanId: 7, HtlcIndex: 3, AmtMsat: 1_000_000, State: lnrpc.InvoiceHTLCState_SETTLED}}
	accepted := proto.Clone(open).(*lnrpc.Invoice)
	accepted.State = lnrpc.Invoice_ACCEPTED
	canceled := proto.Clone(open).(*lnrpc.Invoice)
	canceled.State = lnrpc.Invoice_CANCELED
	unindexed := proto.Clone(settled).(*lnrpc.Invoice) // a settle lnd gave no index: the watcher drops it
	unindexed.SettleIndex = 0
	second := proto.Clone(settled).(*lnrpc.Invoice)
	second.RHash, second.SettleIndex, second.AmtPaidMsat = []byte("hash-second-0000000000000000000"), 8, 2_500_000

	ss := &streamServer{from: make(chan uint64, 1), updates: []*lnrpc.Invoice{open, accepted, settled, canceled, unindexed, open, second}}
	target, _, _ := startGRPCLndWith(t, func(is *invoiceServer) lnrpc.LightningServer {
		ss.invoiceServer = is
		return ss
	})
	rpc, err := lnd.Dial(target)
	if err != nil {
		t.Fatal(err)
	}
	defer rpc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	recv, err := rpc.SubscribeInvoices(ctx, 6)
	if err != nil {
		t.Fatal(err)
	}
	if from := <-ss.from; from != 6 {
		t.Errorf("subscribed from settle index %d, want 6", from)
	}
	for _, want := range []*lnrpc.Invoice{settled, second} {
		got, err := recv()
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, want) {
			t.Errorf("received %v\nwant %v", got, want)
		}
	}
	cancel()
	if got, err := recv(); err == nil {
		t.Errorf("received %v after the last settle, want the stream's end", got)
	}
}
