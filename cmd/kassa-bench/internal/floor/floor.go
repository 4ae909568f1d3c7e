// Package floor is kassa-bench's floor: the same chi router and Pebble
// with one synced write per create-invoice request, and with Work the
// work floor, which also does what every invoice creation must do
// whatever the service's design (a BOLT11 request, an on-chain address,
// the BIP21 URI, two QR codes, the JSON). kassa-bench serves it as a
// process of its own (kassa-bench floor) and compares Kassa's creates
// with its creates; this package links only what the floor does, so its
// tests and BenchmarkWorkFloor need not link the bench.
package floor

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/go-chi/chi/v5"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	chainsim "github.com/kassapay/kassa/chain/sim"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/qr"
)

// Handler is a floor's HTTP handler: with w, the work floor's.
func Handler(db *pebble.DB, w *Work) http.Handler {
	r := chi.NewRouter()
	r.Post("/api/v1/stores/{storeId}/invoices", func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, 1<<20))
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		var id [16]byte
		rand.Read(id[:])
		key := hex.EncodeToString(id[:])
		value, answer := body, []byte(`{"id":"`+key+`"}`)
		if w != nil {
			// The answer's buffer is kept for the next create, as
			// Kassa's writeJSON keeps its own: Pebble and the
			// ResponseWriter copy what they are given.
			out := buffers.Get().(*bytes.Buffer)
			defer func() {
				out.Reset()
				buffers.Put(out)
			}()
			if err = w.create(r.Context(), key, body, out); err != nil {
				http.Error(rw, err.Error(), http.StatusBadRequest)
				return
			}
			value, answer = out.Bytes(), out.Bytes()
		}
		if err := db.Set([]byte(chi.URLParam(r, "storeId")+"/"+key), value, pebble.Sync); err != nil {
			http.Error(rw, err.Error(), http.StatusInternalServerError)
			return
		}
		// With its Content-Length, as Kassa's writeJSON answers: a
		// large answer is not sent chunked.
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		rw.Write(answer)
	})
	return r
}

// Work is the work floor's share of an invoice creation.
type Work struct {
	node  *lnsim.Node
	chain *chainsim.Chain
	store *kassa.Store
	rate  decimal.Decimal
}

// NewWork returns the work floor's share, over the simulated node and
// chain.
func NewWork() (*Work, error) {
	node, err := lnsim.New(kassa.SystemClock{})
	if err != nil {
		return nil, err
	}
	// The bench store: no xpub, so the simulated chain hands out the
	// address of a new key, as it does for Kassa in the same run.
	store := &kassa.Store{ID: "floor", Name: "Bench", Currency: kassa.EUR}
	return &Work{node: node, chain: chainsim.New(kassa.SystemClock{}), store: store, rate: decimal.NewFromInt(87_000)}, nil
}

// Invoice is the answer of the work floor: the create-invoice
// fields, QR codes included.
type Invoice struct {
	ID                    string          `json:"id"`
	StoreID               string          `json:"storeId"`
	Status                string          `json:"status"`
	Amount                kassa.Sats      `json:"amount"`
	OrderID               string          `json:"orderId"`
	BuyerEmail            string          `json:"buyerEmail"`
	Currency              string          `json:"currency"`
	EnabledPaymentMethods []string        `json:"enabledPaymentMethods"`
	Metadata              json.RawMessage `json:"metadata"`
	LightningInvoice      string          `json:"lightningInvoice"`
	OnchainAddress        string          `json:"onchainAddress"`
	QRCodes               struct {
		LightningQR string `json:"lightningQR"`
		BitcoinQR   string `json:"bitcoinQR"`
	} `json:"qrCodes"`
	RedirectAutomatically bool   `json:"redirectAutomatically"`
	WalletMessage         string `json:"walletMessage"`
	CreatedAt             string `json:"createdAt"`
	CheckoutLink          string `json:"checkoutLink"`
	BIP21                 string `json:"bip21"`
}

// create writes the answer to a create with body, the invoice id, to out.
func (w *Work) create(ctx context.Context, id string, body []byte, out *bytes.Buffer) error {
	var req struct {
		Amount   json.Number     `json:"amount"`
		Currency string          `json:"currency"`
		OrderID  string          `json:"orderId"`
		Metadata json.RawMessage `json:"metadata"`
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&req); err != nil {
		return err
	}
	amount, err := decimal.NewFromString(string(req.Amount))
	if err != nil {
		return err
	}
	sats, err := kassa.ToSats(amount, kassa.EUR, w.rate)
	if err != nil {
		return err
	}
	ln, err := w.node.CreateInvoice(ctx, sats.MSat(), w.store.Name, 15*time.Minute)
	if err != nil {
		return err
	}
	addr, err := w.chain.NewAddress(ctx, w.store, id)
	if err != nil {
		return err
	}
	uri := kassa.BIP21(addr, sats, ln.PaymentRequest, w.store.Name)
	codes, err := qr.InvoiceCodes(ln.PaymentRequest, uri)
	if err != nil {
		return err
	}
	inv := Invoice{ID: id, StoreID: w.store.ID, Status: "New", Amount: sats, OrderID: req.OrderID,
		Currency: req.Currency, EnabledPaymentMethods: []string{"BTC", "Lightning"}, Metadata: req.Metadata,
		LightningInvoice: ln.PaymentRequest, OnchainAddress: addr, WalletMessage: "",
		CreatedAt: strconv.FormatInt(time.Now().Unix(), 10), CheckoutLink: "http://127.0.0.1/checkout/" + id, BIP21: uri}
	inv.QRCodes.LightningQR, inv.QRCodes.BitcoinQR = codes.Lightning, codes.Bitcoin
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	return enc.Encode(inv)
}

// buffers are the work floor's answer buffers.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}
