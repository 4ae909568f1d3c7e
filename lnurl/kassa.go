package lnurl

import (
	"context"

	"github.com/kassapay/kassa"
)

// Addresses is a Client as the core consumes it (actors.LightningAddresses).
type Addresses struct{ *Client }

// PayRequest fetches address's pay request.
func (a Addresses) PayRequest(ctx context.Context, address string) (kassa.PayRequest, error) {
	p, err := a.FetchPayRequest(ctx, address)
	if err != nil {
		return kassa.PayRequest{}, err
	}
	return kassa.PayRequest{Callback: p.Callback, MinSendable: p.MinSendable, MaxSendable: p.MaxSendable, Metadata: p.Metadata, CommentAllowed: p.CommentAllowed}, nil
}

// Invoice asks for and checks an invoice of amount.
func (a Addresses) Invoice(ctx context.Context, p kassa.PayRequest, amount kassa.MSat, comment string) (kassa.AddressInvoice, error) {
	inv, err := a.Client.Invoice(ctx, &PayRequest{Callback: p.Callback, MinSendable: p.MinSendable, MaxSendable: p.MaxSendable, Metadata: p.Metadata, CommentAllowed: p.CommentAllowed}, amount, comment)
	if err != nil {
		return kassa.AddressInvoice{}, err
	}
	return kassa.AddressInvoice{PaymentRequest: inv.PaymentRequest, PaymentHash: inv.PaymentHash, Amount: inv.Amount, Payee: inv.Payee}, nil
}
