package actors

import (
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/protos"
)

// The domain documents as the typed cluster calls carry them
// (protos/cluster.proto); wiredec.go reads them back. Every field of the
// Go type is carried: wirecodec_test.go fills each one and fails on a
// field forgotten here.

// timestampOf carries t; nil for the zero time.
func timestampOf(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// decimalString carries d exactly, as its JSON did.
func decimalString(d decimal.Decimal) string { return d.String() }

func methodsOut(ms []kassa.PaymentMethod) []uint32 {
	if ms == nil {
		return nil
	}
	out := make([]uint32, len(ms))
	for i, m := range ms {
		out[i] = uint32(m)
	}
	return out
}

func eventTypesOut(ts []kassa.EventType) []string {
	if ts == nil {
		return nil
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

func storeOut(s *kassa.Store) *protos.StoreDoc {
	if s == nil {
		return nil
	}
	d := &protos.StoreDoc{
		Id: s.ID, Name: s.Name, Currency: string(s.Currency),
		PercentFee: decimalString(s.PercentFee), UnderpaymentTolerance: decimalString(s.UnderpaymentTolerance),
		WalletMinSendableMsat: int64(s.WalletMinSendable), WalletMaxSendableMsat: int64(s.WalletMaxSendable),
		LightningAddress: s.LightningAddress, Xpub: s.Xpub, XpubType: s.XpubType,
		NextAddressIndex: s.NextAddressIndex, FreeAddressIndexes: s.FreeAddressIndexes,
		ConfirmationsRequired: s.ConfirmationsRequired, RatePrimary: s.RatePrimary, RateFallback: s.RateFallback,
		CreditLimitSat: int64(s.CreditLimit), MaxInvoiceAmountSat: int64(s.MaxInvoiceAmount),
		OnchainMinAmountSat: int64(s.OnchainMinAmount), ForwardFeeMaxSat: int64(s.ForwardFeeMax),
		LogoUrl: s.LogoURL, BrandColor: s.BrandColor, DefaultRedirectUrl: s.DefaultRedirectURL, DefaultLanguage: s.DefaultLanguage,
		DefaultRedirectAutomatically: s.DefaultRedirectAutomatically,
		RefundAutoApproveMaxSat:      int64(s.RefundAutoApproveMax), CreatedAt: timestampOf(s.CreatedAt),
	}
	if s.ForwardFeePercent != nil {
		p := decimalString(*s.ForwardFeePercent)
		d.ForwardFeePercent = &p
	}
	for i := range s.APIKeys {
		d.ApiKeys = append(d.ApiKeys, apiKeyOut(&s.APIKeys[i]))
	}
	for _, r := range s.TopUpRefs {
		d.TopUpRefs = append(d.TopUpRefs, &protos.TopUpRefDoc{Reference: r.Reference, TransactionId: r.TransactionID})
	}
	return d
}

func apiKeyOut(k *kassa.APIKey) *protos.APIKeyDoc {
	if k == nil {
		return nil
	}
	return &protos.APIKeyDoc{Id: k.ID, Label: k.Label, Key: k.Key, CreatedAt: timestampOf(k.CreatedAt), Permissions: permissionStrings(k.Permissions)}
}

func storeUpdateOut(u *kassa.StoreUpdate) *protos.StoreUpdateDoc {
	return &protos.StoreUpdateDoc{
		Name: u.Name, Currency: string(u.Currency), LightningAddress: u.LightningAddress,
		Xpub: u.Xpub, XpubType: u.XpubType, ConfirmationsRequired: u.ConfirmationsRequired,
		OnchainMinAmountSat: int64(u.OnchainMinAmount), LogoUrl: u.LogoURL, BrandColor: u.BrandColor,
		DefaultRedirectUrl: u.DefaultRedirectURL, DefaultLanguage: u.DefaultLanguage,
		DefaultRedirectAutomatically: u.DefaultRedirectAutomatically,
		RefundAutoApproveMaxSat:      int64(u.RefundAutoApproveMax),
	}
}

func invoiceRequestOut(r *kassa.InvoiceRequest) *protos.InvoiceRequestDoc {
	if r == nil {
		return nil
	}
	return &protos.InvoiceRequestDoc{
		Amount: decimalString(r.Amount), HasAmount: r.HasAmount, Currency: string(r.Currency),
		EnabledMethods: methodsOut(r.EnabledMethods), BuyerEmail: r.BuyerEmail, RedirectUrl: r.RedirectURL,
		RedirectAutomatically: r.RedirectAutomatically, OrderId: r.OrderID, WalletMessage: r.WalletMessage,
		Metadata: r.Metadata, ReferralCode: r.ReferralCode, PaymentLinkId: r.PaymentLinkID, Language: r.Language,
		ConfirmationsRequired: r.ConfirmationsRequired, ExpiryNs: int64(r.Expiry),
	}
}

func paymentOut(p *kassa.Payment) *protos.PaymentDoc {
	return &protos.PaymentDoc{
		Id: p.ID, Method: uint32(p.Method), Txid: p.TxID, Vout: p.Vout, AmountSat: int64(p.Amount),
		AmountMsat: int64(p.AmountMSat), Destination: p.Destination, Confirmations: p.Confirmations,
		NetworkFeeSat: int64(p.NetworkFee), FeeRate: int64(p.FeeRate), ReplaceByFee: p.ReplaceByFee,
		Dropped: p.Dropped, ReceivedAt: timestampOf(p.ReceivedAt), Accounted: p.Accounted, BlockHeight: p.BlockHeight,
	}
}

func invoiceOut(inv *kassa.Invoice) *protos.InvoiceDoc {
	if inv == nil {
		return nil
	}
	d := &protos.InvoiceDoc{
		Id: inv.ID, StoreId: inv.StoreID, PaymentLinkId: inv.PaymentLinkID, TerminalName: inv.TerminalName,
		Status: uint32(inv.Status), AdditionalStatus: uint32(inv.AdditionalStatus),
		AmountSat: int64(inv.Amount), InvoiceAmount: decimalString(inv.InvoiceAmount),
		Currency: string(inv.Currency), StoreCurrency: string(inv.StoreCurrency),
		ExchangeRate: decimalString(inv.ExchangeRate), RequestRate: decimalString(inv.RequestRate),
		OrderId: inv.OrderID, BuyerEmail: inv.BuyerEmail, RedirectUrl: inv.RedirectURL,
		RedirectAutomatically: inv.RedirectAutomatically, WalletMessage: inv.WalletMessage,
		ReferralCode: inv.ReferralCode, Metadata: inv.Metadata, EnabledMethods: methodsOut(inv.EnabledMethods), Language: inv.Language,
		OnchainUnavailableReason: inv.OnchainUnavailableReason, OnchainAddress: inv.OnchainAddress,
		DerivationIndex: inv.DerivationIndex, LightningInvoice: inv.LightningInvoice, PaymentHash: inv.PaymentHash,
		PercentFee: decimalString(inv.PercentFee), Tolerance: decimalString(inv.Tolerance),
		ConfirmationsRequired: inv.ConfirmationsRequired,
		CreatedAt:             timestampOf(inv.CreatedAt), UpdatedAt: timestampOf(inv.UpdatedAt),
		ExpiresAt: timestampOf(inv.ExpiresAt), MonitorUntil: timestampOf(inv.MonitorUntil),
		SettledAt: timestampOf(inv.SettledAt), SettledBy: uint32(inv.SettledBy),
		MonitoringDone: inv.MonitoringDone, SettlementReverted: inv.SettlementReverted, Archived: inv.Archived,
	}
	for i := range inv.Payments {
		d.Payments = append(d.Payments, paymentOut(&inv.Payments[i]))
	}
	return d
}

func paymentRequestInputOut(in *kassa.PaymentRequestInput) *protos.PaymentRequestInputDoc {
	if in == nil {
		return nil
	}
	return &protos.PaymentRequestInputDoc{
		Amount: decimalString(in.Amount), HasAmount: in.HasAmount, Title: in.Title, Currency: string(in.Currency),
		OrderId: in.OrderID, Description: in.Description, RedirectUrl: in.RedirectURL,
		CustomerEmail: in.CustomerEmail, Discount: decimalString(in.Discount), InternalNote: in.InternalNote,
		ExpiryDate: timestampOf(in.ExpiryDate),
	}
}

func paymentRequestOut(p *kassa.PaymentRequest) *protos.PaymentRequestDoc {
	if p == nil {
		return nil
	}
	return &protos.PaymentRequestDoc{
		Id: p.ID, StoreId: p.StoreID, Amount: decimalString(p.Amount), Title: p.Title, Currency: string(p.Currency),
		OrderId: p.OrderID, Description: p.Description, RedirectUrl: p.RedirectURL, CustomerEmail: p.CustomerEmail,
		Discount: decimalString(p.Discount), InternalNote: p.InternalNote, ExpiryDate: timestampOf(p.ExpiryDate),
		Archived: p.Archived, PaidInvoiceId: p.PaidInvoiceID,
		CreatedAt: timestampOf(p.CreatedAt), UpdatedAt: timestampOf(p.UpdatedAt),
	}
}

func webhookInputOut(in *kassa.WebhookInput) *protos.WebhookInputDoc {
	if in == nil {
		return nil
	}
	return &protos.WebhookInputDoc{
		Url: in.URL, Events: eventTypesOut(in.Events), EventsGiven: in.EventsGiven, Secret: in.Secret,
		Enabled: in.Enabled, AutomaticRedelivery: in.AutomaticRedelivery, Format: string(in.Format),
	}
}

func webhookOut(w *kassa.Webhook) *protos.WebhookDoc {
	if w == nil {
		return nil
	}
	return &protos.WebhookDoc{
		Id: w.ID, StoreId: w.StoreID, Url: w.URL, Secret: w.Secret, Events: eventTypesOut(w.Events),
		Enabled: w.Enabled, AutomaticRedelivery: w.AutomaticRedelivery,
		CreatedAt: timestampOf(w.CreatedAt), UpdatedAt: timestampOf(w.UpdatedAt), Format: string(w.Format),
	}
}

func deliveryOut(d *kassa.Delivery) *protos.DeliveryDoc {
	if d == nil {
		return nil
	}
	return &protos.DeliveryDoc{
		Id: d.ID, WebhookId: d.WebhookID, StoreId: d.StoreID, InvoiceId: d.InvoiceID, Type: string(d.Type),
		Payload: d.Payload, Headers: d.Headers, Status: uint32(d.Status), StatusCode: int64(d.StatusCode),
		ResponseBody: d.ResponseBody, DurationNanos: int64(d.Duration), Error: d.Error, EventId: d.EventID,
		RedeliveryOf: d.RedeliveryOf, Attempt: int64(d.Attempt), NotBefore: timestampOf(d.NotBefore),
		OutboxSeq: d.OutboxSeq, TraceParent: d.TraceParent, CreationTrace: d.CreationTrace,
		CreatedAt: timestampOf(d.CreatedAt), SentAt: timestampOf(d.SentAt),
	}
}

func transactionOut(t *kassa.Transaction) *protos.TransactionDoc {
	if t == nil {
		return nil
	}
	return &protos.TransactionDoc{
		Id: t.ID, StoreId: t.StoreID, InvoiceId: t.InvoiceID, Type: uint32(t.Type), Status: uint32(t.Status),
		AmountSat: int64(t.Amount), FullAmountSat: int64(t.FullAmount), FeeAmountSat: int64(t.FeeAmount),
		RoutingFeeSat: int64(t.RoutingFee), AmountInPreferredCurrency: decimalString(t.AmountInPreferredCurrency),
		Currency: string(t.Currency), Rate: decimalString(t.Rate), DepositMethod: uint32(t.DepositMethod),
		Hash: t.Hash, Comment: t.Comment, CreatedAt: timestampOf(t.CreatedAt),
	}
}
