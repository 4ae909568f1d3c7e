package actors

import (
	"context"
	"strings"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/protos"
)

// A call that arrives from another node is checked again here, as the
// path that sent it checks it on its own node: the node port is
// authenticated (mutual TLS), but a node that holds the cluster
// certificate should still be able to send only what a node's own code
// sends (docs/decisions.md, "An authenticated node port"). The command
// bodies that Service.dispatchCall runs (TopUp, CreateInvoice, …)
// validate their input themselves, on whichever node they run; the two
// internal ones, createStore and command, get their checks here.

// maxClockSkew bounds how far ahead of this node's clock another node
// may date a new store.
const maxClockSkew = 5 * time.Minute

// checkRoutedStore checks a routed CreateStore: the store must be
// one that CreateStore or CreateStoreOnce makes, with valid settings, a
// fresh API key and nothing else (no extra keys, credit limit, address
// index or top-up references).
func (s *Service) checkRoutedStore(st *kassa.Store) error {
	if st == nil || !kassa.ValidID(st.ID) {
		return kassa.Errorf(kassa.Invalid, "CreateStore from another node without a valid store")
	}
	settings := kassa.StoreSettings{
		Name: st.Name, Currency: st.Currency, PercentFee: st.PercentFee, UnderpaymentTolerance: st.UnderpaymentTolerance,
		Xpub: st.Xpub, XpubType: st.XpubType, LightningAddress: st.LightningAddress,
		ConfirmationsRequired: st.ConfirmationsRequired, RatePrimary: st.RatePrimary, RateFallback: st.RateFallback,
		MaxInvoiceAmount: st.MaxInvoiceAmount, OnchainMinAmount: st.OnchainMinAmount,
		ForwardFeePercent: st.ForwardFeePercent, ForwardFeeMax: st.ForwardFeeMax,
		LogoURL: st.LogoURL, BrandColor: st.BrandColor,
	}
	if err := settings.Validate(); err != nil {
		return err
	}
	if err := s.checkRateProviders(settings.RatePrimary, settings.RateFallback); err != nil {
		return err
	}
	if x, ok := s.cfg.Chain.(interface{ CheckXpub(xpub, typ string) error }); ok && settings.Xpub != "" {
		if err := x.CheckXpub(settings.Xpub, settings.XpubType); err != nil {
			return kassa.InvalidFields([]kassa.FieldError{{Field: "xpub", Message: kassa.ErrorMessage(err)}})
		}
	}
	if st.CreatedAt.IsZero() || st.CreatedAt.After(s.cfg.Clock.Now().Add(maxClockSkew)) {
		return kassa.Errorf(kassa.Invalid, "CreateStore from another node with creation time %s", st.CreatedAt)
	}
	if len(st.APIKeys) != 1 {
		return kassa.Errorf(kassa.Invalid, "CreateStore from another node with %d API keys, want the one new key", len(st.APIKeys))
	}
	k := st.APIKeys[0]
	if k.Label != "default" || !strings.HasPrefix(k.ID, "key_") || !kassa.ValidID(k.ID) || len(k.Key) != 64 || !k.CreatedAt.Equal(st.CreatedAt) {
		return kassa.Errorf(kassa.Invalid, "CreateStore from another node with an API key a new store does not have")
	}
	min, max := st.WalletMinSendable, st.WalletMaxSendable
	if st.LightningAddress == "" && (min != kassa.DefaultWalletMinSendable || max != kassa.DefaultWalletMaxSendable) ||
		min < 1 || min > max || max > kassa.MaxSats.MSat() {
		return kassa.Errorf(kassa.Invalid, "CreateStore from another node with wallet bounds %d to %d msat", min, max)
	}
	// Everything else is what NewStore makes of these settings.
	want := kassa.NewStore(st.ID, settings, st.CreatedAt)
	want.APIKeys = st.APIKeys
	want.WalletMinSendable, want.WalletMaxSendable = min, max
	if !st.Equal(want) {
		return kassa.Errorf(kassa.Invalid, "CreateStore from another node carries fields a new store does not have")
	}
	return nil
}

// checkRoutedEvent checks a routed invoice command: only the
// inputs that watchers, timers and the merchant's "mark invalid" send,
// about an invoice of the store, shaped as they shape them. A payment
// must name what the watcher found it by (the invoice's address, its
// Lightning payment hash). The time of an input is this node's: a
// deadline cannot be brought forward by a clock, or a message, from
// elsewhere; a Lightning settle keeps lnd's settle time, never later
// than now.
func (s *Service) checkRoutedEvent(ctx context.Context, storeID, invoiceID string, ev *protos.InvoiceEvent) error {
	if !kassa.ValidID(invoiceID) {
		return kassa.Errorf(kassa.Invalid, "invoice command from another node without a valid invoice id")
	}
	inv, err := s.cfg.Reader.Invoice(ctx, invoiceID)
	if kassa.ErrorCode(err) == kassa.NotFound || err == nil && inv.StoreID != storeID {
		return kassa.Errorf(kassa.NotFound, "invoice not found")
	}
	if err != nil {
		return err
	}
	now := s.cfg.Clock.Now().UTC()
	bad := func(what string) error {
		return kassa.Errorf(kassa.Invalid, "invoice command from another node: %s", what)
	}
	switch k := ev.Kind.(type) {
	case *protos.InvoiceEvent_PaymentObserved:
		p := k.PaymentObserved
		if p == nil || p.Id == "" || p.Txid == "" || p.AmountSat <= 0 || kassa.Sats(p.AmountSat) > kassa.MaxSats ||
			p.Confirmations < 0 || p.NetworkFeeSat < 0 || p.FeeRate < 0 || p.BlockHeight < 0 {
			return bad("a payment without its id, transaction or a positive amount")
		}
		if id, err := s.cfg.Reader.InvoiceIDByAddress(ctx, p.Destination); err != nil || id != invoiceID {
			return bad("a payment to an address that is not the invoice's")
		}
		ev.AtUnixNano = now.UnixNano()
	case *protos.InvoiceEvent_PaymentDropped:
		if k.PaymentDropped == nil || k.PaymentDropped.PaymentId == "" {
			return bad("a dropped payment without its id")
		}
		ev.AtUnixNano = now.UnixNano()
	case *protos.InvoiceEvent_LightningPaid:
		p := k.LightningPaid
		if p == nil || p.PaymentHash == "" || p.AmountMsat <= 0 || kassa.MSat(p.AmountMsat) > kassa.MaxSats.MSat() {
			return bad("a Lightning payment without its hash or a positive amount")
		}
		if id, err := s.cfg.Reader.InvoiceIDByPaymentHash(ctx, p.PaymentHash); err != nil || id != invoiceID {
			return bad("a Lightning payment of a hash that is not the invoice's")
		}
		at := time.Unix(0, ev.AtUnixNano)
		if at.After(now) {
			at = now
		}
		if at.Before(inv.CreatedAt) {
			at = inv.CreatedAt
		}
		ev.AtUnixNano = at.UnixNano()
	case *protos.InvoiceEvent_ExpiryReached, *protos.InvoiceEvent_MonitoringEnded, *protos.InvoiceEvent_MarkedInvalid, *protos.InvoiceEvent_Archived:
		ev.AtUnixNano = now.UnixNano()
	default:
		return bad("an input no node sends")
	}
	return nil
}
