package actors

import (
	"context"
	"strconv"

	"github.com/kassapay/kassa"
)

// A create that comes with a request id (kassa.RequestFrom: the id a
// routing node gave the call, or the client's Idempotency-Key)
// records the id in its own commit (putRequest); a repeat of the id, on
// this node or any other, before or after a restart, answers what the
// first created (onceOnly). Two activations of a store that run one
// request at once (a node lost in the middle of a create) commit it
// once: the journal refuses the second record (kassa.ErrRequestDone),
// and the loser answers the winner's result.

// onceOnly runs the create run unless ctx's request id is recorded for
// the store already, in which case it answers the recorded result
// (answer reads it by id). A create that failed is looked up once more:
// another activation may have recorded the request meanwhile.
func onceOnly[T any](ctx context.Context, s *Service, storeID, kind string,
	answer func(ctx context.Context, resultID string) (T, error), run func() (T, error)) (T, error) {
	req := kassa.RequestFrom(ctx)
	rr, ok := s.cfg.Reader.(kassa.RequestReader)
	if req.ID == "" || !ok {
		return run()
	}
	done := func() (out T, found bool, err error) {
		rec, err := rr.Request(ctx, storeID, req.ID)
		if kassa.ErrorCode(err) == kassa.NotFound {
			return out, false, nil
		}
		if err != nil {
			return out, false, err
		}
		if rec.Kind != kind || rec.Fingerprint != req.Fingerprint {
			return out, true, kassa.Errorf(kassa.Conflict, "this request id (or Idempotency-Key) was already used for a different request")
		}
		out, err = answer(ctx, rec.ResultID)
		return out, true, err
	}
	if out, found, err := done(); found || err != nil {
		return out, err
	}
	out, err := run()
	if err != nil {
		if again, found, derr := done(); found && derr == nil {
			s.log.Info("request done by another activation; answering its result", "store", storeID, "request", req.ID, "kind", kind)
			return again, nil
		} else if found {
			return again, derr
		}
	}
	return out, err
}

// putRequest records ctx's request id in b as the create of kind that
// made resultID; without a request id it does nothing.
func putRequest(ctx context.Context, b kassa.Batch, storeID, kind, resultID string) {
	req := kassa.RequestFrom(ctx)
	if rb, ok := b.(kassa.RequestBatch); ok && req.ID != "" {
		rb.PutRequest(kassa.RequestRecord{StoreID: storeID, ID: req.ID, Kind: kind, ResultID: resultID, Fingerprint: req.Fingerprint})
	}
}

// The answers of repeated creates: what the first created, read by id.

func (s *Service) answerInvoice(ctx context.Context, id string) (*kassa.Invoice, error) {
	return s.cfg.Reader.Invoice(ctx, id)
}

func (s *Service) answerStore(ctx context.Context, id string) (*kassa.Store, error) {
	return s.cfg.Reader.Store(ctx, id)
}

func (s *Service) answerTopUp(ctx context.Context, id string) (*kassa.Transaction, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return nil, err
	}
	return s.cfg.Reader.Transaction(ctx, n)
}

func (s *Service) answerWebhook(ctx context.Context, id string) (*kassa.Webhook, error) {
	return s.cfg.Reader.Webhook(ctx, id)
}

func (s *Service) answerPaymentRequest(ctx context.Context, id string) (*kassa.PaymentRequest, error) {
	return s.cfg.Reader.PaymentRequest(ctx, id)
}

// answerAPIKey finds the key among its store's; a key deleted since is
// NotFound.
func (s *Service) answerAPIKey(storeID string) func(context.Context, string) (*kassa.APIKey, error) {
	return func(ctx context.Context, id string) (*kassa.APIKey, error) {
		st, err := s.cfg.Reader.Store(ctx, storeID)
		if err != nil {
			return nil, err
		}
		for _, k := range st.APIKeys {
			if k.ID == id {
				return &k, nil
			}
		}
		return nil, kassa.Errorf(kassa.NotFound, "API key not found")
	}
}
