package actors

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/protos"
)

// The domain documents read back from the typed cluster calls
// (wireenc.go writes them). A value the Go type cannot hold (a decimal
// that does not parse, a status out of range) is an error, as it was
// when the calls carried JSON.

// wireReader reads the fields of one document and keeps the first
// error.
type wireReader struct{ err error }

func (r *wireReader) fail(field, what string) {
	if r.err == nil {
		r.err = fmt.Errorf("decode %s: %s", field, what)
	}
}

func (r *wireReader) time(ts *timestamppb.Timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	if err := ts.CheckValid(); err != nil {
		r.fail("time", err.Error())
		return time.Time{}
	}
	return ts.AsTime()
}

func (r *wireReader) decimal(field, s string) decimal.Decimal {
	d, err := decimal.NewFromString(s)
	if err != nil {
		r.fail(field, err.Error())
	}
	return d
}

func (r *wireReader) uint8(field string, v uint32) uint8 {
	if v > math.MaxUint8 {
		r.fail(field, "out of range")
	}
	return uint8(v)
}

func (r *wireReader) method(field string, v uint32) kassa.PaymentMethod {
	if v > math.MaxUint16 {
		r.fail(field, "out of range")
	}
	return kassa.PaymentMethod(v)
}

func (r *wireReader) methods(field string, vs []uint32) []kassa.PaymentMethod {
	if vs == nil {
		return nil
	}
	out := make([]kassa.PaymentMethod, len(vs))
	for i, v := range vs {
		out[i] = r.method(field, v)
	}
	return out
}

func eventTypesIn(ts []string) []kassa.EventType {
	if ts == nil {
		return nil
	}
	out := make([]kassa.EventType, len(ts))
	for i, t := range ts {
		out[i] = kassa.EventType(t)
	}
	return out
}

// nonNil is s, or an empty list for none.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// metadataIn is the merchant's metadata: none for an empty or null one.
func metadataIn(b []byte) json.RawMessage {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	return json.RawMessage(b)
}

func storeIn(d *protos.StoreDoc) (*kassa.Store, error) {
	if d == nil {
		return nil, nil
	}
	var r wireReader
	s := &kassa.Store{
		ID: d.Id, Name: d.Name, Currency: kassa.Currency(d.Currency),
		PercentFee: r.decimal("percentFee", d.PercentFee), UnderpaymentTolerance: r.decimal("underpaymentTolerance", d.UnderpaymentTolerance),
		WalletMinSendable: kassa.MSat(d.WalletMinSendableMsat), WalletMaxSendable: kassa.MSat(d.WalletMaxSendableMsat),
		LightningAddress: d.LightningAddress, Xpub: d.Xpub, XpubType: d.XpubType,
		NextAddressIndex: d.NextAddressIndex, FreeAddressIndexes: d.FreeAddressIndexes,
		ConfirmationsRequired: d.ConfirmationsRequired, RatePrimary: d.RatePrimary, RateFallback: d.RateFallback,
		CreditLimit: kassa.Sats(d.CreditLimitSat), MaxInvoiceAmount: kassa.Sats(d.MaxInvoiceAmountSat),
		OnchainMinAmount: kassa.Sats(d.OnchainMinAmountSat), ForwardFeeMax: kassa.Sats(d.ForwardFeeMaxSat),
		LogoURL: d.LogoUrl, BrandColor: d.BrandColor, DefaultRedirectURL: d.DefaultRedirectUrl, DefaultLanguage: d.DefaultLanguage,
		CreatedAt: r.time(d.CreatedAt),
	}
	if d.ForwardFeePercent != nil {
		p := r.decimal("forwardFeePercent", *d.ForwardFeePercent)
		s.ForwardFeePercent = &p
	}
	// A store's key list, an invoice's methods and a webhook's events
	// are never nil, so that their JSON is a list (proto3 does not tell
	// an empty list from none).
	s.APIKeys = make([]kassa.APIKey, len(d.ApiKeys))
	for i, k := range d.ApiKeys {
		s.APIKeys[i] = apiKeyIn(&r, k)
	}
	for _, t := range d.TopUpRefs {
		s.TopUpRefs = append(s.TopUpRefs, kassa.TopUpRef{Reference: t.GetReference(), TransactionID: t.GetTransactionId()})
	}
	return s, r.err
}

func apiKeyIn(r *wireReader, d *protos.APIKeyDoc) kassa.APIKey {
	return kassa.APIKey{ID: d.GetId(), Label: d.GetLabel(), Key: d.GetKey(), CreatedAt: r.time(d.GetCreatedAt()), Permissions: permissionsIn(d.GetPermissions())}
}

// permissionsIn are permissions as they crossed the wire, unchecked: a
// command checks them where it runs.
func permissionsIn(ss []string) kassa.Permissions {
	if len(ss) == 0 {
		return nil
	}
	out := make(kassa.Permissions, len(ss))
	for i, p := range ss {
		out[i] = kassa.Permission(p)
	}
	return out
}

func storeUpdateIn(d *protos.StoreUpdateDoc) kassa.StoreUpdate {
	return kassa.StoreUpdate{
		Name: d.Name, Currency: kassa.Currency(d.Currency), LightningAddress: d.LightningAddress,
		Xpub: d.Xpub, XpubType: d.XpubType, ConfirmationsRequired: d.ConfirmationsRequired,
		OnchainMinAmount: kassa.Sats(d.OnchainMinAmountSat), LogoURL: d.LogoUrl, BrandColor: d.BrandColor,
		DefaultRedirectURL: d.DefaultRedirectUrl, DefaultLanguage: d.DefaultLanguage,
	}
}

func invoiceRequestIn(d *protos.InvoiceRequestDoc) (*kassa.InvoiceRequest, error) {
	if d == nil {
		return nil, nil
	}
	var r wireReader
	req := &kassa.InvoiceRequest{
		Amount: r.decimal("amount", d.Amount), HasAmount: d.HasAmount, Currency: kassa.Currency(d.Currency),
		EnabledMethods: r.methods("enabledMethods", d.EnabledMethods), BuyerEmail: d.BuyerEmail,
		RedirectURL: d.RedirectUrl, RedirectAutomatically: d.RedirectAutomatically, OrderID: d.OrderId,
		WalletMessage: d.WalletMessage, Metadata: metadataIn(d.Metadata), ReferralCode: d.ReferralCode,
		PaymentLinkID: d.PaymentLinkId, Language: d.Language,
	}
	return req, r.err
}

func paymentIn(r *wireReader, d *protos.PaymentDoc) kassa.Payment {
	return kassa.Payment{
		ID: d.GetId(), Method: r.method("method", d.GetMethod()), TxID: d.GetTxid(), Vout: d.GetVout(),
		Amount: kassa.Sats(d.GetAmountSat()), AmountMSat: kassa.MSat(d.GetAmountMsat()), Destination: d.GetDestination(),
		Confirmations: d.GetConfirmations(), NetworkFee: kassa.Sats(d.GetNetworkFeeSat()), FeeRate: kassa.Sats(d.GetFeeRate()),
		ReplaceByFee: d.GetReplaceByFee(), Dropped: d.GetDropped(), ReceivedAt: r.time(d.GetReceivedAt()),
		Accounted: d.GetAccounted(), BlockHeight: d.GetBlockHeight(),
	}
}

func invoiceIn(d *protos.InvoiceDoc) (*kassa.Invoice, error) {
	if d == nil {
		return nil, nil
	}
	var r wireReader
	inv := &kassa.Invoice{
		ID: d.Id, StoreID: d.StoreId, PaymentLinkID: d.PaymentLinkId, TerminalName: d.TerminalName,
		Status: kassa.InvoiceStatus(r.uint8("status", d.Status)), AdditionalStatus: kassa.AdditionalStatus(r.uint8("additionalStatus", d.AdditionalStatus)),
		Amount: kassa.Sats(d.AmountSat), InvoiceAmount: r.decimal("invoiceAmount", d.InvoiceAmount),
		Currency: kassa.Currency(d.Currency), StoreCurrency: kassa.Currency(d.StoreCurrency),
		ExchangeRate: r.decimal("exchangeRate", d.ExchangeRate), RequestRate: r.decimal("requestRate", d.RequestRate),
		OrderID: d.OrderId, BuyerEmail: d.BuyerEmail, RedirectURL: d.RedirectUrl,
		RedirectAutomatically: d.RedirectAutomatically, WalletMessage: d.WalletMessage,
		ReferralCode: d.ReferralCode, Metadata: metadataIn(d.Metadata), EnabledMethods: nonNil(r.methods("enabledMethods", d.EnabledMethods)), Language: d.Language,
		OnchainUnavailableReason: d.OnchainUnavailableReason, OnchainAddress: d.OnchainAddress,
		DerivationIndex: d.DerivationIndex, LightningInvoice: d.LightningInvoice, PaymentHash: d.PaymentHash,
		PercentFee: r.decimal("percentFee", d.PercentFee), Tolerance: r.decimal("tolerance", d.Tolerance),
		ConfirmationsRequired: d.ConfirmationsRequired,
		CreatedAt:             r.time(d.CreatedAt), UpdatedAt: r.time(d.UpdatedAt),
		ExpiresAt: r.time(d.ExpiresAt), MonitorUntil: r.time(d.MonitorUntil),
		SettledAt: r.time(d.SettledAt), SettledBy: r.method("settledBy", d.SettledBy),
		MonitoringDone: d.MonitoringDone, SettlementReverted: d.SettlementReverted,
	}
	for _, p := range d.Payments {
		inv.Payments = append(inv.Payments, paymentIn(&r, p))
	}
	return inv, r.err
}

func paymentRequestInputIn(d *protos.PaymentRequestInputDoc) (*kassa.PaymentRequestInput, error) {
	if d == nil {
		return nil, nil
	}
	var r wireReader
	in := &kassa.PaymentRequestInput{
		Amount: r.decimal("amount", d.Amount), HasAmount: d.HasAmount, Title: d.Title, Currency: kassa.Currency(d.Currency),
		OrderID: d.OrderId, Description: d.Description, RedirectURL: d.RedirectUrl,
		CustomerEmail: d.CustomerEmail, Discount: r.decimal("discount", d.Discount), InternalNote: d.InternalNote,
		ExpiryDate: r.time(d.ExpiryDate),
	}
	return in, r.err
}

func paymentRequestIn(d *protos.PaymentRequestDoc) (*kassa.PaymentRequest, error) {
	if d == nil {
		return nil, nil
	}
	var r wireReader
	p := &kassa.PaymentRequest{
		ID: d.Id, StoreID: d.StoreId, Amount: r.decimal("amount", d.Amount), Title: d.Title, Currency: kassa.Currency(d.Currency),
		OrderID: d.OrderId, Description: d.Description, RedirectURL: d.RedirectUrl, CustomerEmail: d.CustomerEmail,
		Discount: r.decimal("discount", d.Discount), InternalNote: d.InternalNote, ExpiryDate: r.time(d.ExpiryDate),
		Archived: d.Archived, PaidInvoiceID: d.PaidInvoiceId,
		CreatedAt: r.time(d.CreatedAt), UpdatedAt: r.time(d.UpdatedAt),
	}
	return p, r.err
}

func webhookInputIn(d *protos.WebhookInputDoc) *kassa.WebhookInput {
	if d == nil {
		return nil
	}
	return &kassa.WebhookInput{
		URL: d.Url, Events: eventTypesIn(d.Events), EventsGiven: d.EventsGiven, Secret: d.Secret,
		Enabled: d.Enabled, AutomaticRedelivery: d.AutomaticRedelivery, Format: kassa.WebhookFormat(d.Format),
	}
}

func webhookIn(d *protos.WebhookDoc) (*kassa.Webhook, error) {
	if d == nil {
		return nil, nil
	}
	var r wireReader
	w := &kassa.Webhook{
		ID: d.Id, StoreID: d.StoreId, URL: d.Url, Secret: d.Secret, Events: nonNil(eventTypesIn(d.Events)),
		Enabled: d.Enabled, AutomaticRedelivery: d.AutomaticRedelivery,
		CreatedAt: r.time(d.CreatedAt), UpdatedAt: r.time(d.UpdatedAt), Format: kassa.WebhookFormat(d.Format),
	}
	return w, r.err
}

func deliveryIn(d *protos.DeliveryDoc) (*kassa.Delivery, error) {
	if d == nil {
		return nil, nil
	}
	var r wireReader
	if d.StatusCode < math.MinInt32 || d.StatusCode > math.MaxInt32 || d.Attempt < math.MinInt32 || d.Attempt > math.MaxInt32 {
		r.fail("delivery", "status code or attempt out of range")
	}
	del := &kassa.Delivery{
		ID: d.Id, WebhookID: d.WebhookId, StoreID: d.StoreId, InvoiceID: d.InvoiceId, Type: kassa.EventType(d.Type),
		Payload: json.RawMessage(d.Payload), Headers: d.Headers, Status: kassa.DeliveryStatus(r.uint8("status", d.Status)),
		StatusCode: int(d.StatusCode), ResponseBody: d.ResponseBody, Duration: time.Duration(d.DurationNanos),
		Error: d.Error, EventID: d.EventId, RedeliveryOf: d.RedeliveryOf, Attempt: int(d.Attempt),
		NotBefore: r.time(d.NotBefore), OutboxSeq: d.OutboxSeq, TraceParent: d.TraceParent,
		CreationTrace: d.CreationTrace, CreatedAt: r.time(d.CreatedAt), SentAt: r.time(d.SentAt),
	}
	return del, r.err
}

func transactionIn(d *protos.TransactionDoc) (*kassa.Transaction, error) {
	if d == nil {
		return nil, nil
	}
	var r wireReader
	t := &kassa.Transaction{
		ID: d.Id, StoreID: d.StoreId, InvoiceID: d.InvoiceId,
		Type: kassa.TransactionType(r.uint8("type", d.Type)), Status: kassa.TransactionStatus(r.uint8("status", d.Status)),
		Amount: kassa.Sats(d.AmountSat), FullAmount: kassa.Sats(d.FullAmountSat), FeeAmount: kassa.Sats(d.FeeAmountSat),
		RoutingFee: kassa.Sats(d.RoutingFeeSat), AmountInPreferredCurrency: r.decimal("amountInPreferredCurrency", d.AmountInPreferredCurrency),
		Currency: kassa.Currency(d.Currency), Rate: r.decimal("rate", d.Rate), DepositMethod: r.method("depositMethod", d.DepositMethod),
		Hash: d.Hash, Comment: d.Comment, CreatedAt: r.time(d.CreatedAt),
	}
	return t, r.err
}
