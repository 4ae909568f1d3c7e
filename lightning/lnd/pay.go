package lnd

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/btcsuite/btcd/chaincfg"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/lightning/bolt11"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc/routerrpc"
)

// PayInvoice pays paymentRequest with routerrpc SendPaymentV2, spending
// at most feeLimit on routing (zero allows only routes without fees) and
// waiting at most timeout. An invoice lnd already paid or is paying is
// tracked instead of paid again.
func (n *Node) PayInvoice(ctx context.Context, paymentRequest string, feeLimit kassa.MSat, timeout time.Duration) (kassa.LightningPayment, error) {
	secs := int32((timeout + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 60
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+10*time.Second)
	defer cancel()
	recv, err := n.rpc.SendPayment(ctx, &routerrpc.SendPaymentRequest{
		PaymentRequest: paymentRequest, FeeLimitMsat: int64(feeLimit), TimeoutSeconds: secs, NoInflightUpdates: true,
	})
	if err == nil {
		var p kassa.LightningPayment
		p, err = final(recv)
		if err == nil {
			return p, nil
		}
	}
	if containsAny(err, "already paid", "already exists", "in transition", "already succeeded") {
		hash, herr := paymentHashOf(paymentRequest)
		if herr != nil {
			return kassa.LightningPayment{}, herr
		}
		return n.TrackPayment(ctx, hash)
	}
	return kassa.LightningPayment{}, fmt.Errorf("lnd SendPaymentV2: %w", err)
}

// TrackPayment asks lnd what became of the payment with paymentHash.
func (n *Node) TrackPayment(ctx context.Context, paymentHash string) (kassa.LightningPayment, error) {
	hash, err := hex.DecodeString(paymentHash)
	if err != nil || len(hash) != 32 {
		return kassa.LightningPayment{}, kassa.Errorf(kassa.Invalid, "not a payment hash")
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.CallTimeout)
	defer cancel()
	recv, err := n.rpc.TrackPayment(ctx, hash)
	if err == nil {
		var p kassa.LightningPayment
		if p, err = final(recv); err == nil {
			return p, nil
		}
	}
	if containsAny(err, "payment isn't initiated", "not found", "unable to find payment") {
		return kassa.LightningPayment{PaymentHash: paymentHash, Status: kassa.PaymentUnknown}, nil
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return kassa.LightningPayment{PaymentHash: paymentHash, Status: kassa.PaymentInFlight}, nil
	}
	return kassa.LightningPayment{}, fmt.Errorf("lnd TrackPaymentV2: %w", err)
}

// SendReady asks lnd (GetInfo) whether it can send payments now: it
// answers, is synced to the chain and has an active channel. Just after
// a restart lnd answers payments with no_route or insufficient_balance
// while its channels are inactive; the sender then waits rather than
// fail the payment.
func (n *Node) SendReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.CallTimeout)
	defer cancel()
	res, err := n.rpc.GetInfo(ctx)
	switch {
	case err != nil:
		return kassa.Errorf(kassa.Unavailable, "lnd is unreachable: %s", grpcMessage(err))
	case !res.SyncedToChain:
		return kassa.Errorf(kassa.Unavailable, "lnd is not synced to the chain")
	case res.NumActiveChannels == 0:
		return kassa.Errorf(kassa.Unavailable, "lnd has no active channel (%d inactive, %d pending)", res.NumInactiveChannels, res.NumPendingChannels)
	}
	return nil
}

// final reads payment updates until a final one.
func final(recv func() (*lnrpc.Payment, error)) (kassa.LightningPayment, error) {
	for {
		p, err := recv()
		if errors.Is(err, io.EOF) {
			return kassa.LightningPayment{}, errors.New("payment stream ended without an outcome")
		}
		if err != nil {
			return kassa.LightningPayment{}, err
		}
		out := kassa.LightningPayment{PaymentHash: p.PaymentHash, FeeMSat: kassa.MSat(p.FeeMsat)}
		switch p.Status {
		case lnrpc.Payment_SUCCEEDED:
			out.Status = kassa.PaymentSucceeded
			return out, nil
		case lnrpc.Payment_FAILED:
			out.Status = kassa.PaymentFailed
			out.Failure = strings.ToLower(strings.TrimPrefix(p.FailureReason.String(), "FAILURE_REASON_"))
			return out, nil
		}
	}
}

// EstimateFee asks lnd for a route of amount to payee (with its route
// hints) and returns its fee. It asks the payee for nothing: the forward
// learns the fee before it asks the Lightning address for an invoice.
func (n *Node) EstimateFee(ctx context.Context, payee kassa.Payee, amount, feeLimit kassa.MSat) (kassa.MSat, error) {
	if len(payee.Node) != 66 || amount <= 0 {
		return 0, kassa.Errorf(kassa.Invalid, "no payee or amount to estimate a route fee to")
	}
	cltv := payee.FinalCLTVDelta
	if cltv == 0 {
		cltv = 18 // BOLT11's default min_final_cltv_expiry
	}
	req := &lnrpc.QueryRoutesRequest{
		PubKey:            payee.Node,
		AmtMsat:           int64(amount),
		FinalCltvDelta:    int32(cltv),
		FeeLimit:          &lnrpc.FeeLimit{Limit: &lnrpc.FeeLimit_FixedMsat{FixedMsat: int64(feeLimit)}},
		UseMissionControl: true,
	}
	for _, hint := range payee.RouteHints {
		rh := &lnrpc.RouteHint{}
		for _, h := range hint {
			rh.HopHints = append(rh.HopHints, &lnrpc.HopHint{
				NodeId: h.NodeID, ChanId: h.ChannelID,
				FeeBaseMsat: h.FeeBaseMSat, FeeProportionalMillionths: h.FeeProportionalMillionths,
				CltvExpiryDelta: uint32(h.CLTVExpiryDelta),
			})
		}
		req.RouteHints = append(req.RouteHints, rh)
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.CallTimeout)
	defer cancel()
	res, err := n.rpc.QueryRoutes(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("lnd QueryRoutes: %s", grpcMessage(err))
	}
	if len(res.Routes) == 0 {
		return 0, errors.New("lnd found no route")
	}
	fee := kassa.MSat(res.Routes[0].TotalFeesMsat)
	if fee > feeLimit {
		return 0, fmt.Errorf("the route costs %d msat, above the limit of %d msat", fee, feeLimit)
	}
	return fee, nil
}

// NetParams returns the parameters of a network as lnd names it.
func NetParams(network string) (*chaincfg.Params, error) {
	switch network {
	case "mainnet":
		return &chaincfg.MainNetParams, nil
	case "testnet", "testnet3":
		return &chaincfg.TestNet3Params, nil
	case "signet":
		return &chaincfg.SigNetParams, nil
	case "regtest":
		return &chaincfg.RegressionNetParams, nil
	case "simnet":
		return &chaincfg.SimNetParams, nil
	}
	return nil, fmt.Errorf("unknown network %q", network)
}

func paymentHashOf(paymentRequest string) (string, error) {
	for _, p := range []*chaincfg.Params{&chaincfg.MainNetParams, &chaincfg.TestNet3Params, &chaincfg.SigNetParams, &chaincfg.RegressionNetParams, &chaincfg.SimNetParams} {
		if inv, err := bolt11.Decode(paymentRequest, p); err == nil && inv.PaymentHash != nil {
			return hex.EncodeToString(inv.PaymentHash[:]), nil
		}
	}
	return "", kassa.Errorf(kassa.Invalid, "not a BOLT11 invoice")
}
