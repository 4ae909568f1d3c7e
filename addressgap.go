package kassa

import "context"

// WalletGapLimit is how many consecutive unused addresses a wallet
// scans past the last used one before it stops looking (BIP 44's
// default, which most wallets keep): a store whose xpub hands out more
// than that in a row without a payment has payments a wallet restored
// from the xpub does not see until its gap limit is raised.
const WalletGapLimit = 20

// MaxWalletGapLimit bounds Store.WalletGapLimit.
const MaxWalletGapLimit = 1000

// GapLimit is the gap limit of the store's wallet: WalletGapLimit unless
// the merchant set another.
func (s *Store) GapLimit() int64 {
	if s.WalletGapLimit > 0 {
		return int64(s.WalletGapLimit)
	}
	return WalletGapLimit
}

// addressGapScan bounds how many of a store's newest invoices
// StoreAddressGap reads.
const addressGapScan = 1000

// AddressGap is how far a store's xpub addresses run ahead of the last
// one paid.
type AddressGap struct {
	// Unused counts the derivation indexes handed out above the highest
	// one that received an on-chain payment (every index handed out
	// when none did).
	Unused int64
	// Limit is the gap limit of the store's wallet (Store.GapLimit).
	Limit int64
	// Partial says that none of the newest invoices read (addressGapScan)
	// received an on-chain payment and older ones were not read: Unused
	// counts every index handed out, an upper bound of the gap.
	Partial bool
}

// Warn says the gap is within a quarter of the limit, or past it: time
// to raise the wallet's gap limit before a payment falls beyond it.
func (g AddressGap) Warn() bool { return g.Unused >= g.Limit-g.Limit/4 }

// StoreAddressGap reads how many of st's xpub addresses were handed out
// since the last one paid on-chain: the store's highest index handed
// out (NextAddressIndex−1) less the highest index, among its newest
// invoices, that received an on-chain payment not dropped. An index
// that received anything is never handed out again ("Addresses" in
// docs/decisions.md), and indexes are handed out in rising order except
// for released unpaid ones, so the newest invoices hold the highest
// paid index unless every recent payment went to a reused lower index;
// then the gap read is larger than the wallet's, which warns early
// rather than late. A store that never handed out an address has no
// gap.
func StoreAddressGap(ctx context.Context, r Reader, st *Store) (AddressGap, error) {
	g := AddressGap{Limit: st.GapLimit()}
	if st.NextAddressIndex == 0 {
		return g, nil
	}
	highest := int64(st.NextAddressIndex) - 1
	paid := int64(-1)
	next, err := r.Invoices(ctx, st.ID, ListQuery{Limit: addressGapScan}, func(inv *Invoice) error {
		if inv.DerivationIndex == nil || int64(*inv.DerivationIndex) <= paid {
			return nil
		}
		for _, p := range inv.Payments {
			if p.Method == MethodOnchain && !p.Dropped {
				paid = int64(*inv.DerivationIndex)
				break
			}
		}
		return nil
	})
	if err != nil {
		return g, err
	}
	g.Unused = highest - paid
	g.Partial = paid < 0 && next != ""
	return g, nil
}
