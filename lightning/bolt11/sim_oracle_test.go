package bolt11_test

// The simulated Lightning node (lightning/sim) encodes its invoices with
// this package; these tests decode them with lnd's zpay32, the oracle
// this package's tests use, so that only this test binary links it.

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/lightningnetwork/lnd/lnwire"
	"github.com/lightningnetwork/lnd/zpay32"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	lnsim "github.com/kassapay/kassa/lightning/sim"
)

var simEpoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// startedSim returns a simulated node made by New on a test clock 700 ms
// past simEpoch, started with a handler that accepts every event.
func startedSim(t *testing.T) *lnsim.Node {
	t.Helper()
	n, err := lnsim.New(kassatest.NewTestClock(simEpoch.Add(700 * time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(t.Context(), func(context.Context, kassa.LightningEvent) error { return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func createSim(t *testing.T, n *lnsim.Node, amount kassa.MSat, memo string, expiry time.Duration) kassa.LightningInvoice {
	t.Helper()
	inv, err := n.CreateInvoice(context.Background(), amount, memo, expiry)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func decodeWithZpay32(t *testing.T, request string) *zpay32.Invoice {
	t.Helper()
	d, err := zpay32.Decode(request, &chaincfg.RegressionNetParams)
	if err != nil {
		t.Fatalf("decode %s: %v", request, err)
	}
	return d
}

func TestSimulatedNodeInvoicesDecodeWithZpay32(t *testing.T) {
	n := startedSim(t)
	tests := []struct {
		name         string
		amount       kassa.MSat
		expiry, want time.Duration
		prefix       string
	}{
		{"whole sats", 12_345_000, 15 * time.Minute, 15 * time.Minute, "lnbcrt123450n1"},
		{"millisatoshis", 1_001, time.Minute, time.Minute, "lnbcrt10010p1"},
		{"amountless", 0, 90 * time.Second, 90 * time.Second, "lnbcrt1"},
		{"default expiry", 5_000, 0, time.Hour, "lnbcrt50n1"},
		{"expiry rounded up", 5_000, 1500 * time.Millisecond, 2 * time.Second, "lnbcrt50n1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := createSim(t, n, tt.amount, "Order #42 – café", tt.expiry)
			if !strings.HasPrefix(inv.PaymentRequest, tt.prefix) {
				t.Errorf("request %s does not start with %s", inv.PaymentRequest, tt.prefix)
			}
			d := decodeWithZpay32(t, inv.PaymentRequest)
			switch {
			case tt.amount == 0 && d.MilliSat != nil:
				t.Errorf("amountless invoice carries %d msat", *d.MilliSat)
			case tt.amount != 0 && (d.MilliSat == nil || *d.MilliSat != lnwire.MilliSatoshi(tt.amount)):
				t.Errorf("amount %v, want %d msat", d.MilliSat, tt.amount)
			}
			if got := hex.EncodeToString(d.PaymentHash[:]); got != inv.PaymentHash || len(got) != 64 {
				t.Errorf("payment hash %s, want %s", got, inv.PaymentHash)
			}
			if d.Expiry() != tt.want {
				t.Errorf("expiry %s, want %s", d.Expiry(), tt.want)
			}
			if d.Description == nil || *d.Description != "Order #42 – café" {
				t.Errorf("description %v", d.Description)
			}
			if !d.Timestamp.Equal(simEpoch) {
				t.Errorf("timestamp %s, want %s", d.Timestamp, simEpoch)
			}
			if hex.EncodeToString(d.Destination.SerializeCompressed()) != n.PubKey() {
				t.Errorf("signed by %x, want node %s", d.Destination.SerializeCompressed(), n.PubKey())
			}
			if d.PaymentAddr.IsNone() {
				t.Error("no payment secret")
			}
			if !d.Features.HasFeature(lnwire.PaymentAddrRequired) || !d.Features.HasFeature(lnwire.TLVOnionPayloadRequired) {
				t.Errorf("features %v", d.Features)
			}
			if d.MinFinalCLTVExpiry() != lnsim.FinalCLTVDelta {
				t.Errorf("min final CLTV %d", d.MinFinalCLTVExpiry())
			}
		})
	}
}

func TestSimulatedNodeFitsMemo(t *testing.T) {
	n := startedSim(t)
	memo := strings.Repeat("€", 300) + "\xff" // 901 bytes, one invalid
	d := decodeWithZpay32(t, createSim(t, n, 1000, memo, time.Minute).PaymentRequest)
	got := *d.Description
	if len(got) > lnsim.MaxMemoBytes || !utf8.ValidString(got) || !strings.HasPrefix(memo, got) {
		t.Fatalf("description of %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	if len(got) != 213*3 {
		t.Fatalf("description cut to %d bytes, want 639", len(got))
	}
	d = decodeWithZpay32(t, createSim(t, n, 1000, "", time.Minute).PaymentRequest)
	if d.Description == nil || *d.Description != "" {
		t.Fatalf("empty memo gave description %v", d.Description)
	}
}
