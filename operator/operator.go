// Package operator is the operator's page: the live actors by kind, an
// invoice's event journal with timestamps and trace ids, and the webhook
// deliveries and Lightning forwards still pending. It is an http.Handler
// that trusts its caller: mount it only behind operator authentication
// (the admin API's token, or the dashboard's operator accounts). It
// answers HTML, or JSON to a request that accepts application/json.
//
//	GET  /                 overview: actors, pending deliveries, forwards
//	GET  /invoices/{id}    one invoice's journal
//
// Paths are relative: mount it with http.StripPrefix.
package operator

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/actors"
	"github.com/kassapay/kassa/protos"
	"github.com/kassapay/kassa/telemetry"
)

// Deps are what the page reads. Only Reader and Journal are required.
type Deps struct {
	Reader  kassa.Reader
	Journal interface {
		Events(ctx context.Context, s kassa.Stream, after uint64, fn func(seq uint64, event []byte) error) error
	}
	// Actors describe the live actors (actors.Runtime, actors.Forwarder).
	Actors []interface{ ActorStats() []actors.ActorStat }
	// Forwards lists open forwards; nil when nothing is forwarded.
	Forwards kassa.ForwardStore
	Clock    kassa.Clock
}

// MaxListed bounds the pending deliveries and forwards a page lists.
const MaxListed = 500

//go:embed page.html
var pageFS embed.FS

var page = template.Must(template.New("page.html").Funcs(template.FuncMap{
	"time": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05.000Z")
	},
}).ParseFS(pageFS, "page.html"))

type handler struct {
	d   Deps
	mux *http.ServeMux
}

// New returns the operator page's handler.
func New(d Deps) http.Handler {
	if d.Clock == nil {
		d.Clock = kassa.SystemClock{}
	}
	h := &handler{d: d, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /{$}", h.overview)
	h.mux.HandleFunc("GET /invoices/{id}", h.invoice)
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "" {
		r.URL.Path = "/"
	}
	w.Header().Set("Cache-Control", "no-store")
	h.mux.ServeHTTP(w, r)
}

// Overview is the state of the service for its operator.
type Overview struct {
	At         time.Time          `json:"at"`
	Actors     []actors.ActorStat `json:"actors"`
	Deliveries []PendingDelivery  `json:"pendingDeliveries"`
	Forwards   []PendingForward   `json:"pendingForwards"`
	Queued     int                `json:"queuedTransfers"`
	Truncated  bool               `json:"truncated,omitempty"`
	Invoice    *Journal           `json:"invoice,omitempty"`
	Errors     []string           `json:"errors,omitempty"`
}

// PendingDelivery is a webhook delivery still in the outbox.
type PendingDelivery struct {
	ID        string    `json:"id"`
	WebhookID string    `json:"webhookId"`
	StoreID   string    `json:"storeId"`
	InvoiceID string    `json:"invoiceId"`
	Type      string    `json:"type"`
	Attempt   int       `json:"attempt"`
	LastError string    `json:"lastError,omitempty"`
	NotBefore time.Time `json:"notBefore,omitzero"`
	CreatedAt time.Time `json:"createdAt"`
	TraceID   string    `json:"traceId,omitempty"`
}

// PendingForward is a Lightning forward not yet paid.
type PendingForward struct {
	ID        string     `json:"id"`
	StoreID   string     `json:"storeId"`
	Amount    kassa.MSat `json:"amountMsat"`
	Attempts  int        `json:"attempts"`
	LastError string     `json:"lastError,omitempty"`
	NextTry   time.Time  `json:"nextTry"`
	CreatedAt time.Time  `json:"createdAt"`
}

// Journal is an invoice's events in order.
type Journal struct {
	InvoiceID string  `json:"invoiceId"`
	StoreID   string  `json:"storeId"`
	Status    string  `json:"status"`
	Events    []Event `json:"events"`
}

// Event is one journaled event of an invoice.
type Event struct {
	Seq     uint64    `json:"seq"`
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	TraceID string    `json:"traceId,omitempty"`
}

func (h *handler) overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	o := Overview{At: h.d.Clock.Now().UTC()}
	for _, a := range h.d.Actors {
		o.Actors = append(o.Actors, a.ActorStats()...)
	}
	var ids []string
	err := h.d.Reader.PendingDeliveries(ctx, func(_, id string) error {
		if len(ids) == MaxListed {
			o.Truncated = true
			return errStop
		}
		ids = append(ids, id)
		return nil
	})
	if err != nil && err != errStop {
		o.Errors = append(o.Errors, "pending deliveries: "+kassa.ErrorMessage(err))
	}
	for _, id := range ids {
		d, err := h.d.Reader.Delivery(ctx, id)
		if err != nil {
			continue // sent and pruned meanwhile
		}
		o.Deliveries = append(o.Deliveries, PendingDelivery{
			ID: d.ID, WebhookID: d.WebhookID, StoreID: d.StoreID, InvoiceID: d.InvoiceID, Type: string(d.Type),
			Attempt: d.Attempt, LastError: d.Error, NotBefore: d.NotBefore, CreatedAt: d.CreatedAt,
			TraceID: telemetry.TraceID(d.TraceParent),
		})
	}
	if h.d.Forwards != nil {
		if err := h.forwards(ctx, &o); err != nil {
			o.Errors = append(o.Errors, "forwards: "+kassa.ErrorMessage(err))
		}
	}
	h.write(w, r, o)
}

func (h *handler) forwards(ctx context.Context, o *Overview) error {
	stores, err := h.d.Forwards.ForwardingStores(ctx)
	if err != nil {
		return err
	}
	for _, id := range stores {
		err := h.d.Forwards.OpenForwards(ctx, id, func(f *kassa.Forward) error {
			if len(o.Forwards) == MaxListed {
				o.Truncated = true
				return nil
			}
			o.Forwards = append(o.Forwards, PendingForward{
				ID: f.ID, StoreID: f.StoreID, Amount: f.Amount, Attempts: f.Attempts, LastError: f.LastError,
				NextTry: f.NextTry, CreatedAt: f.CreatedAt,
			})
			return nil
		})
		if err != nil {
			return err
		}
		if err := h.d.Forwards.QueuedTransfers(ctx, id, func(kassa.QueuedTransfer) error { o.Queued++; return nil }); err != nil {
			return err
		}
	}
	return nil
}

// errStop ends an iteration early.
var errStop = fmt.Errorf("stop")

func (h *handler) invoice(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	if !kassa.ValidID(id) {
		h.fail(w, r, http.StatusNotFound, "invoice not found")
		return
	}
	inv, err := h.d.Reader.Invoice(ctx, id)
	if err != nil {
		if kassa.ErrorCode(err) == kassa.NotFound {
			h.fail(w, r, http.StatusNotFound, "invoice not found")
			return
		}
		h.fail(w, r, http.StatusInternalServerError, kassa.ErrorMessage(err))
		return
	}
	j := &Journal{InvoiceID: inv.ID, StoreID: inv.StoreID, Status: inv.Status.String()}
	err = h.d.Journal.Events(ctx, kassa.Stream{Kind: kassa.KindInvoice, ID: id}, 0, func(seq uint64, data []byte) error {
		var ev protos.InvoiceEvent
		if err := proto.Unmarshal(data, &ev); err != nil {
			return err
		}
		j.Events = append(j.Events, Event{Seq: seq, At: time.Unix(0, ev.AtUnixNano).UTC(), Kind: kindOf(&ev),
			TraceID: telemetry.TraceID(ev.TraceParent)})
		return nil
	})
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, "read the journal: "+kassa.ErrorMessage(err))
		return
	}
	h.write(w, r, Overview{At: h.d.Clock.Now().UTC(), Invoice: j})
}

// kindOf names the event's kind as the journal's protobuf does, e.g.
// LightningPaid.
func kindOf(ev *protos.InvoiceEvent) string {
	name := fmt.Sprintf("%T", ev.GetKind())
	return strings.TrimPrefix(name, "*protos.InvoiceEvent_")
}

// wantsJSON reports whether the caller asked for JSON.
func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json") || r.URL.Query().Get("format") == "json"
}

func (h *handler) write(w http.ResponseWriter, r *http.Request, o Overview) {
	if wantsJSON(r) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(o)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	if err := page.Execute(w, o); err != nil {
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
	}
}

func (h *handler) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if wantsJSON(r) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]string{"message": msg})
		return
	}
	http.Error(w, msg, status)
}
