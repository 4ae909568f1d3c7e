package kassa

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// refundMap is a RefundReader over maps: the domain reads what the
// test puts, and nothing else.
type refundMap struct {
	pulls   map[string]*PullPayment
	payouts map[string]*Payout
}

func (m *refundMap) PullPayment(_ context.Context, id string) (*PullPayment, error) {
	if pp, ok := m.pulls[id]; ok {
		c := *pp
		return &c, nil
	}
	return nil, Errorf(NotFound, "pull payment not found")
}

func (m *refundMap) Payout(_ context.Context, id string) (*Payout, error) {
	if p, ok := m.payouts[id]; ok {
		c := *p
		return &c, nil
	}
	return nil, Errorf(NotFound, "payout not found")
}

func (m *refundMap) PayoutsToSend(context.Context, func(*Payout) error) error { return nil }

// TestFiatClaimSameSatsApprovedEitherWay: a claim in fiat approved
// automatically at its claim and the same claim approved by the
// merchant at the same rate are converted to the same satoshis, the
// ceiling of the claim at that rate.
func TestFiatClaimSameSatsApprovedEitherWay(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rate := decimal.RequireFromString("43210.57")
	claimed := decimal.RequireFromString("12.34")
	want, err := ToSats(claimed, EUR, rate)
	if err != nil {
		t.Fatal(err)
	}
	approvedBy := func(auto bool) *Payout {
		t.Helper()
		st := &Store{ID: "st_1", Currency: EUR}
		if auto {
			st.RefundAutoApproveMax = 1_000_000
		}
		pp, err := NewPullPayment("pp_1", st.ID, PullPaymentInput{Amount: decimal.NewFromInt(100), Currency: EUR}, now)
		if err != nil {
			t.Fatal(err)
		}
		r := &refundMap{pulls: map[string]*PullPayment{pp.ID: pp}, payouts: map[string]*Payout{}}
		dest := Destination{Kind: DestinationLNURL, Address: "customer@example.com"}
		claim := &RefundCommand{PayoutID: "po_1", Claim: &RefundClaim{PullPaymentID: pp.ID, Destination: dest, Amount: claimed, Rate: rate, At: now}}
		ch, err := claim.Decide(ctx, st, 10_000_000, r)
		if err != nil {
			t.Fatal(err)
		}
		if auto {
			return ch.Payout
		}
		if ch.Payout.State != PayoutAwaitingApproval {
			t.Fatalf("claim without automatic approval: %+v", ch.Payout)
		}
		r.payouts[ch.Payout.ID] = ch.Payout
		approve := &RefundCommand{PayoutID: ch.Payout.ID, Approve: &RefundApproval{Rate: rate, At: now}}
		if ch, err = approve.Decide(ctx, st, 10_000_000, r); err != nil {
			t.Fatal(err)
		}
		return ch.Payout
	}
	auto, merchant := approvedBy(true), approvedBy(false)
	for _, p := range []*Payout{auto, merchant} {
		if p.State != PayoutApproved || p.Amount != want || !p.Rate.Equal(rate) {
			t.Errorf("payout %+v: want approved, %d sat at %s", p, want, rate)
		}
	}
	if auto.Amount != merchant.Amount || auto.FeeLimit != merchant.FeeLimit {
		t.Fatalf("automatic approval %d sat (fee limit %d), the merchant's %d sat (fee limit %d)", auto.Amount, auto.FeeLimit, merchant.Amount, merchant.FeeLimit)
	}
}
