//go:build itest

package itest

import (
	"context"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"github.com/kassapay/kassa/internal/crashpoint"
	"github.com/kassapay/kassa/kassatest/harness"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc"
)

// TestRefundKilledJustAfterSendingOnLnd: Kassa (built with crash points)
// is killed with SIGKILL just after lnd answered the refund payout's
// payment, before Kassa recorded its outcome. Restarted, Kassa asks lnd
// what became of the recorded payment hash and completes the payout:
// the customer's invoice paid once, the balance and the ledger debited
// once.
func TestRefundKilledJustAfterSendingOnLnd(t *testing.T) {
	t.Parallel()
	e := newRefundEnv(t)
	ctx := context.Background()
	inv := e.paidInvoice(20_000)
	res, err := e.customer.Client.AddInvoice(ctx, &lnrpc.Invoice{Value: 20_000, Memo: "my refund", Expiry: 3600})
	if err != nil {
		t.Fatal(err)
	}
	before, lines := e.balance(), first(e.ledger())
	po := e.claim(inv, res.PaymentRequest)

	e.kassa.Stop()
	crashing := harness.KassaProcess{Bin: harness.CrashpointKassaBin(t), Dir: e.kassa.Data, Args: append([]string{"--dev"}, e.args...),
		Env: []string{crashpoint.Env + "=" + crashpoint.PaymentSent}}.Start(t)
	go func() { // the server may die before it answers
		req, _ := http.NewRequest("POST", crashing.URL+e.base()+"/payouts/"+po.ID+"/approve", nil)
		req.Header.Set("Authorization", "token "+e.key)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}()
	select {
	case <-crashing.Done():
	case <-time.After(2 * time.Minute):
		t.Fatal("kassa did not die once the payment was sent")
	}
	e.kassa = harness.StartKassa(t, e.kassa.Data, e.args...)
	done := e.waitFinal(po.ID)
	if done.PaymentHash != hex.EncodeToString(res.RHash) || !e.customerSettled(done.PaymentHash) {
		t.Fatalf("payout %+v: the customer's invoice %x is not the one paid", done, res.RHash)
	}
	e.checkPaidOnce(done, before, lines)
}
