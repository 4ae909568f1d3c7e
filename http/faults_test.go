package http

import (
	"context"
	"net/http"

	"github.com/kassapay/kassa"
)

// The wrappers below stand between the handler and the real service so
// that a test can make a call fail. They hold plain fields and no rules:
// a nil field calls the real service.
var (
	_ kassa.Reader         = (*faultyReader)(nil)
	_ kassa.InvoiceService = (*faultyInvoices)(nil)
	_ kassa.WebhookService = (*faultyWebhooks)(nil)

	_ kassa.PaymentRequestService = (*faultyPayLinks)(nil)
	_ kassa.WebhookClient         = (*webhookClient)(nil)
)

// faultyReader is storage's reader, with injectable failures.
type faultyReader struct {
	kassa.Reader
	// storeByAPIKey, when set, answers every key look-up.
	storeByAPIKey func(key string) (*kassa.Store, error)
	// listItem, when set, is called before each item of Invoices,
	// Transactions and Deliveries with its index; an error stops the list.
	listItem func(i int) error
}

func (r *faultyReader) StoreByAPIKey(ctx context.Context, key string) (*kassa.Store, error) {
	if r.storeByAPIKey != nil {
		return r.storeByAPIKey(key)
	}
	return r.Reader.StoreByAPIKey(ctx, key)
}

// items passes fn through listItem.
func items[T any](listItem func(int) error, fn func(T) error) func(T) error {
	if listItem == nil {
		return fn
	}
	i := 0
	return func(v T) error {
		if err := listItem(i); err != nil {
			return err
		}
		i++
		return fn(v)
	}
}

func (r *faultyReader) Invoices(ctx context.Context, storeID string, q kassa.ListQuery, fn func(*kassa.Invoice) error) (string, error) {
	return r.Reader.Invoices(ctx, storeID, q, items(r.listItem, fn))
}

func (r *faultyReader) Transactions(ctx context.Context, storeID string, q kassa.ListQuery, fn func(*kassa.Transaction) error) (string, error) {
	return r.Reader.Transactions(ctx, storeID, q, items(r.listItem, fn))
}

func (r *faultyReader) Deliveries(ctx context.Context, webhookID string, q kassa.ListQuery, fn func(*kassa.Delivery) error) (string, error) {
	return r.Reader.Deliveries(ctx, webhookID, q, items(r.listItem, fn))
}

// faultyInvoices is the actors' invoice service; err, when set, is what
// CreateInvoice answers instead.
type faultyInvoices struct {
	kassa.InvoiceService
	err error
	// lostReply, when set, is answered after the create ran: the node
	// that ran it died before its reply came back.
	lostReply error
}

func (f *faultyInvoices) CreateInvoice(ctx context.Context, storeID string, r *kassa.InvoiceRequest) (*kassa.Invoice, error) {
	if f.err != nil {
		return nil, f.err
	}
	inv, err := f.InvoiceService.CreateInvoice(ctx, storeID, r)
	if err == nil && f.lostReply != nil {
		return nil, f.lostReply
	}
	return inv, err
}

// faultyPayLinks is the actors' pay-link service; payErr, when set, is
// what PayPaymentRequest answers instead.
type faultyPayLinks struct {
	kassa.PaymentRequestService
	payErr error
}

func (f *faultyPayLinks) PayPaymentRequest(ctx context.Context, storeID, id, session string) (*kassa.Invoice, error) {
	if f.payErr != nil {
		return nil, f.payErr
	}
	return f.PaymentRequestService.PayPaymentRequest(ctx, storeID, id, session)
}

// faultyWebhooks is the actors' webhook service; err, when set, is what
// every call answers instead.
type faultyWebhooks struct {
	kassa.WebhookService
	err error
}

func (f *faultyWebhooks) CreateWebhook(ctx context.Context, storeID string, in *kassa.WebhookInput) (*kassa.Webhook, error) {
	if f.err != nil {
		return nil, f.err
	}
	return f.WebhookService.CreateWebhook(ctx, storeID, in)
}

func (f *faultyWebhooks) UpdateWebhook(ctx context.Context, storeID, id string, in *kassa.WebhookInput) (*kassa.Webhook, error) {
	if f.err != nil {
		return nil, f.err
	}
	return f.WebhookService.UpdateWebhook(ctx, storeID, id, in)
}

func (f *faultyWebhooks) DeleteWebhook(ctx context.Context, storeID, id string) error {
	if f.err != nil {
		return f.err
	}
	return f.WebhookService.DeleteWebhook(ctx, storeID, id)
}

func (f *faultyWebhooks) Redeliver(ctx context.Context, storeID, webhookID, deliveryID string) (*kassa.Delivery, error) {
	if f.err != nil {
		return nil, f.err
	}
	return f.WebhookService.Redeliver(ctx, storeID, webhookID, deliveryID)
}

// webhookClient is the actors' connection to merchants' URLs: the real
// egress client's URL check, and what validate and deliver say for the
// network (nil: the URL accepts, the receiver answers 200).
type webhookClient struct {
	check interface{ CheckURL(string) error }
	// validate answers the registration check of a URL.
	validate func(url string) error
	// deliver answers a delivery.
	deliver func(url string, body []byte) kassa.WebhookAttempt
}

func (c *webhookClient) CheckURL(rawURL string) error { return c.check.CheckURL(rawURL) }

func (c *webhookClient) Validate(_ context.Context, rawURL string) error {
	if c.validate != nil {
		return c.validate(rawURL)
	}
	return nil
}

func (c *webhookClient) Deliver(_ context.Context, rawURL string, _ http.Header, body []byte) kassa.WebhookAttempt {
	if c.deliver != nil {
		return c.deliver(rawURL, body)
	}
	return kassa.WebhookAttempt{StatusCode: 200, OK: true}
}
