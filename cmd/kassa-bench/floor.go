package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
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

// runFloor serves a floor: chi, Pebble, one synced write per request.
// With -work it also does, per request, what every invoice creation must
// do whatever the service's design: decode the request, sign one BOLT11
// request with lightning/bolt11 (the simulated node's code), make one
// on-chain address (the simulated chain's code, for a store like the
// bench store), render the two QR PNGs (the qr package), and encode the
// invoice as JSON, which is also what it writes.
func runFloor(args []string) error {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	dir := fs.String("data", "", "Pebble directory")
	listen := fs.String("listen", "127.0.0.1:0", "listen address")
	work := fs.Bool("work", false, "also do the work every invoice creation requires")
	debug := fs.String("debug-listen", "", "serve Go's pprof profiles on this address (off when empty)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	db, err := pebble.Open(*dir, &pebble.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	var w *requiredWork
	if *work {
		if w, err = newRequiredWork(); err != nil {
			return err
		}
	}
	r := floorHandler(db, w)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	if *debug != "" {
		// The same profiles as kassa serve's --debug-listen, so that
		// -profile compares the two servers' CPU alike.
		dl, err := net.Listen("tcp", *debug)
		if err != nil {
			return err
		}
		defer dl.Close()
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		go http.Serve(dl, mux)
	}
	// The bench stops a floor with SIGINT: handle it, since a process
	// started from a background job inherits SIGINT ignored and would
	// never exit (the bench then waited for it forever).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	srv := &http.Server{Handler: r}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// floorHandler is a floor's HTTP handler: with w, the work floor's.
func floorHandler(db *pebble.DB, w *requiredWork) http.Handler {
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
			out := floorBuffers.Get().(*bytes.Buffer)
			defer func() {
				out.Reset()
				floorBuffers.Put(out)
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

// requiredWork is the work-floor's share of an invoice creation.
type requiredWork struct {
	node  *lnsim.Node
	chain *chainsim.Chain
	store *kassa.Store
	rate  decimal.Decimal
}

func newRequiredWork() (*requiredWork, error) {
	node, err := lnsim.New(kassa.SystemClock{})
	if err != nil {
		return nil, err
	}
	// The bench store: no xpub, so the simulated chain hands out the
	// address of a new key, as it does for Kassa in the same run.
	store := &kassa.Store{ID: "floor", Name: "Bench", Currency: kassa.EUR}
	return &requiredWork{node: node, chain: chainsim.New(kassa.SystemClock{}), store: store, rate: decimal.NewFromInt(87_000)}, nil
}

// floorInvoice is the answer of the work floor: the create-invoice
// fields, QR codes included.
type floorInvoice struct {
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
func (w *requiredWork) create(ctx context.Context, id string, body []byte, out *bytes.Buffer) error {
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
	inv := floorInvoice{ID: id, StoreID: w.store.ID, Status: "New", Amount: sats, OrderID: req.OrderID,
		Currency: req.Currency, EnabledPaymentMethods: []string{"BTC", "Lightning"}, Metadata: req.Metadata,
		LightningInvoice: ln.PaymentRequest, OnchainAddress: addr, WalletMessage: "",
		CreatedAt: strconv.FormatInt(time.Now().Unix(), 10), CheckoutLink: "http://127.0.0.1/checkout/" + id, BIP21: uri}
	inv.QRCodes.LightningQR, inv.QRCodes.BitcoinQR = codes.Lightning, codes.Bitcoin
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	return enc.Encode(inv)
}

// floorBuffers are the work floor's answer buffers.
var floorBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}
