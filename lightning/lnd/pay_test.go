package lnd_test

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc/routerrpc"
)

// updates returns a payment stream that yields ps, then ends.
func updates(ps ...*lnrpc.Payment) func() (*lnrpc.Payment, error) {
	return func() (*lnrpc.Payment, error) {
		if len(ps) == 0 {
			return nil, errors.New("stream closed")
		}
		p := ps[0]
		ps = ps[1:]
		return p, nil
	}
}

func TestPayInvoice(t *testing.T) {
	hash := hex.EncodeToString(hashOf(1))
	var sent *routerrpc.SendPaymentRequest
	rpc := &fakeRPC{sendPayment: func(_ context.Context, r *routerrpc.SendPaymentRequest) (func() (*lnrpc.Payment, error), error) {
		sent = r
		return updates(
			&lnrpc.Payment{PaymentHash: hash, Status: lnrpc.Payment_IN_FLIGHT},
			&lnrpc.Payment{PaymentHash: hash, Status: lnrpc.Payment_SUCCEEDED, FeeMsat: 1234},
		), nil
	}}
	n := newNode(t, rpc, openDB(t), nil)
	p, err := n.PayInvoice(context.Background(), "lnbcrt…", 5000, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != kassa.PaymentSucceeded || p.FeeMSat != 1234 || p.PaymentHash != hash {
		t.Fatalf("payment %+v", p)
	}
	if sent.FeeLimitMsat != 5000 || sent.TimeoutSeconds != 30 || sent.PaymentRequest != "lnbcrt…" {
		t.Fatalf("SendPaymentV2 got %v", sent)
	}

	rpc.sendPayment = func(context.Context, *routerrpc.SendPaymentRequest) (func() (*lnrpc.Payment, error), error) {
		return updates(&lnrpc.Payment{PaymentHash: hash, Status: lnrpc.Payment_FAILED, FailureReason: lnrpc.PaymentFailureReason_FAILURE_REASON_NO_ROUTE}), nil
	}
	p, err = n.PayInvoice(context.Background(), "lnbcrt…", 0, time.Second)
	if err != nil || p.Status != kassa.PaymentFailed || p.Failure != "no_route" {
		t.Fatalf("failed payment: %+v %v", p, err)
	}

	// A stream that breaks says nothing of the outcome: an error, so the
	// caller tracks the payment rather than paying again.
	rpc.sendPayment = func(context.Context, *routerrpc.SendPaymentRequest) (func() (*lnrpc.Payment, error), error) {
		return updates(&lnrpc.Payment{PaymentHash: hash, Status: lnrpc.Payment_IN_FLIGHT}), nil
	}
	if _, err := n.PayInvoice(context.Background(), "lnbcrt…", 0, time.Second); err == nil {
		t.Fatal("a broken stream gave an outcome")
	}
}

func TestTrackPayment(t *testing.T) {
	hash := hex.EncodeToString(hashOf(2))
	rpc := &fakeRPC{trackPayment: func(context.Context, []byte) (func() (*lnrpc.Payment, error), error) {
		return updates(&lnrpc.Payment{PaymentHash: hash, Status: lnrpc.Payment_SUCCEEDED, FeeMsat: 7}), nil
	}}
	n := newNode(t, rpc, openDB(t), nil)
	if p, err := n.TrackPayment(context.Background(), hash); err != nil || p.Status != kassa.PaymentSucceeded || p.FeeMSat != 7 {
		t.Fatalf("succeeded: %+v %v", p, err)
	}
	rpc.trackPayment = func(context.Context, []byte) (func() (*lnrpc.Payment, error), error) {
		return nil, errors.New("rpc error: code = NotFound desc = payment isn't initiated")
	}
	if p, err := n.TrackPayment(context.Background(), hash); err != nil || p.Status != kassa.PaymentUnknown {
		t.Fatalf("never sent: %+v %v", p, err)
	}
	rpc.trackPayment = func(context.Context, []byte) (func() (*lnrpc.Payment, error), error) {
		return nil, errors.New("rpc error: code = Unavailable desc = connection refused")
	}
	if _, err := n.TrackPayment(context.Background(), hash); err == nil {
		t.Fatal("an unreachable lnd must not look like a payment never sent")
	}
}

// EstimateFee asks lnd for a route to the payee, with its route hints,
// for the amount: no invoice is needed.
func TestEstimateFeeToAPayee(t *testing.T) {
	node := "02" + strings.Repeat("ab", 32)
	hop := "03" + strings.Repeat("cd", 32)
	var asked *lnrpc.QueryRoutesRequest
	rpc := &fakeRPC{queryRoutes: func(_ context.Context, r *lnrpc.QueryRoutesRequest) (*lnrpc.QueryRoutesResponse, error) {
		asked = r
		return &lnrpc.QueryRoutesResponse{Routes: []*lnrpc.Route{{TotalFeesMsat: 43_210}}}, nil
	}}
	n := newNode(t, rpc, openDB(t), nil)
	payee := kassa.Payee{Node: node, FinalCLTVDelta: 80, RouteHints: [][]kassa.HopHint{{{NodeID: hop, ChannelID: 7, FeeBaseMSat: 1000, FeeProportionalMillionths: 100, CLTVExpiryDelta: 40}}}}
	fee, err := n.EstimateFee(context.Background(), payee, 21_000_000, 50_000)
	if err != nil || fee != 43_210 {
		t.Fatalf("fee %d, %v", fee, err)
	}
	if asked.PubKey != node || asked.AmtMsat != 21_000_000 || asked.FinalCltvDelta != 80 || asked.FeeLimit.GetFixedMsat() != 50_000 ||
		len(asked.RouteHints) != 1 || asked.RouteHints[0].HopHints[0].NodeId != hop || asked.RouteHints[0].HopHints[0].ChanId != 7 {
		t.Fatalf("QueryRoutes asked %v", asked)
	}
	if _, err := n.EstimateFee(context.Background(), payee, 21_000_000, 40_000); err == nil {
		t.Fatal("a route above the fee limit was accepted")
	}
}

// TestSendReady: lnd can send when it answers, is synced to the chain
// and has an active channel; otherwise SendReady says why, Unavailable.
func TestSendReady(t *testing.T) {
	for _, c := range []struct {
		res  *lnrpc.GetInfoResponse
		err  error
		want string
	}{
		{res: &lnrpc.GetInfoResponse{SyncedToChain: true, NumActiveChannels: 1}},
		{res: &lnrpc.GetInfoResponse{SyncedToChain: true, NumInactiveChannels: 2}, want: "no active channel (2 inactive"},
		{res: &lnrpc.GetInfoResponse{NumActiveChannels: 1}, want: "not synced"},
		{err: errors.New("rpc error: code = Unavailable desc = connection refused"), want: "unreachable"},
	} {
		rpc := &fakeRPC{getInfo: func(context.Context) (*lnrpc.GetInfoResponse, error) { return c.res, c.err }}
		err := newNode(t, rpc, openDB(t), nil).SendReady(context.Background())
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v, want ready", c.res, err)
		case c.want != "" && (kassa.ErrorCode(err) != kassa.Unavailable || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v, %v: %v, want Unavailable saying %q", c.res, c.err, err, c.want)
		}
	}
}
