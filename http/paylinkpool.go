package http

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/kassapay/kassa"
)

// A pay link under a flood (docs/decisions.md, "Rate limits of the public
// pages"):
// strangers who click Pay from many addresses use up the link's payment
// bucket, and a real customer must still get an invoice. Two things keep
// the link open:
//
//   - A customer who clicked before carries a signed cookie naming the
//     link and the invoice it got; a click that presents it resumes that
//     invoice while it is open, without touching any bucket.
//   - Once the link's bucket is empty, a new customer is handed one of
//     the link's recent invoices that nobody has paid yet instead of a
//     429; the invoices the strangers made are the ones handed out.

// maxPoolInvoices bounds the recent invoices remembered per pay link, and
// maxPoolLinks the pay links remembered.
const (
	maxPoolInvoices = 64
	maxPoolLinks    = 4096
)

// payLinkPool remembers the recent invoices of each pay link the Pay
// button made, and how often each was handed out since.
type payLinkPool struct {
	mu    sync.Mutex
	links map[string][]pooledInvoice
	// making counts the invoices of each link being made right now: a
	// customer who finds the bucket empty and no invoice to hand out
	// waits for them rather than be refused at the start of a flood.
	making map[string]int
}

// started and finished count an invoice of link being made.
func (p *payLinkPool) started(link string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.making == nil {
		p.making = map[string]int{}
	}
	p.making[link]++
}

func (p *payLinkPool) finished(link string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.making[link]--; p.making[link] <= 0 {
		delete(p.making, link)
	}
}

// busy reports whether an invoice of link is being made.
func (p *payLinkPool) busy(link string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.making[link] > 0
}

// pooledInvoice is one recent invoice of a pay link.
type pooledInvoice struct {
	id        string
	expiresAt time.Time
	handouts  int
}

// add remembers inv as a recent invoice of pay link link.
func (p *payLinkPool) add(link string, inv *kassa.Invoice) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.links == nil {
		p.links = map[string][]pooledInvoice{}
	}
	if _, ok := p.links[link]; !ok && len(p.links) >= maxPoolLinks {
		for k := range p.links { // forget an arbitrary link
			delete(p.links, k)
			break
		}
	}
	list := append(p.links[link], pooledInvoice{id: inv.ID, expiresAt: inv.ExpiresAt})
	if len(list) > maxPoolInvoices {
		list = append([]pooledInvoice(nil), list[len(list)-maxPoolInvoices:]...)
	}
	p.links[link] = list
}

// candidates returns the ids of the link's invoices unexpired at now,
// least handed out first, and forgets the expired ones.
func (p *payLinkPool) candidates(link string, now time.Time) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.links[link][:0]
	for _, e := range p.links[link] {
		if now.Before(e.expiresAt) {
			list = append(list, e)
		}
	}
	if len(list) == 0 {
		delete(p.links, link)
		return nil
	}
	p.links[link] = list
	ids := make([]string, 0, len(list))
	for handouts := 0; len(ids) < len(list); handouts++ {
		for i := len(list) - 1; i >= 0; i-- { // newest first among equals
			if list[i].handouts == handouts {
				ids = append(ids, list[i].id)
			}
		}
	}
	return ids
}

// handedOut counts one more handout of invoice id of link.
func (p *payLinkPool) handedOut(link, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.links[link] {
		if p.links[link][i].id == id {
			p.links[link][i].handouts++
		}
	}
}

// payLinkTicket is what the pay-link cookie says: the customer's session
// and, once it got one, the pay link and invoice it was sent to.
type payLinkTicket struct {
	Session, Link, Invoice string
}

// minTicketKey is the shortest Deps.TicketKey taken.
const minTicketKey = 32

// NewTicketKey returns a fresh key for the pay-link ticket's signature
// (Deps.TicketKey). A cluster makes it once and keeps it in its shared
// store (cmd/kassa), so that every node signs and checks with it.
func NewTicketKey() []byte {
	key := make([]byte, minTicketKey)
	_, _ = rand.Read(key)
	return key
}

// sign returns the signature of the ticket's fields.
func (s *server) signTicket(t payLinkTicket) string {
	mac := hmac.New(sha256.New, s.cookieKey)
	mac.Write([]byte(t.Session + "\x00" + t.Link + "\x00" + t.Invoice))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:16])
}

// readTicket reads the pay-link cookie: a session alone (SESSION, as
// every cookie was before tickets named invoices) or
// SESSION.LINK.INVOICE.SIGNATURE. A forged or damaged one reads as none.
func (s *server) readTicket(r *http.Request) (payLinkTicket, bool) {
	c, err := r.Cookie(payLinkSessionCookie)
	if err != nil {
		return payLinkTicket{}, false
	}
	parts := strings.Split(c.Value, ".")
	if len(parts[0]) != 32 || !kassa.ValidID(parts[0]) {
		return payLinkTicket{}, false
	}
	t := payLinkTicket{Session: parts[0]}
	if len(parts) == 1 {
		return t, true
	}
	if len(parts) != 4 || !kassa.ValidID(parts[1]) || !kassa.ValidID(parts[2]) {
		return payLinkTicket{}, false
	}
	t.Link, t.Invoice = parts[1], parts[2]
	if !hmac.Equal([]byte(parts[3]), []byte(s.signTicket(t))) {
		return payLinkTicket{Session: t.Session}, true
	}
	return t, true
}

// writeTicket sets the pay-link cookie to t, signed.
func (s *server) writeTicket(w http.ResponseWriter, t payLinkTicket) {
	value := t.Session
	if t.Invoice != "" {
		value += "." + t.Link + "." + t.Invoice + "." + s.signTicket(t)
	}
	http.SetCookie(w, &http.Cookie{
		Name:     payLinkSessionCookie,
		Value:    value,
		Path:     "/payment-requests/",
		MaxAge:   24 * 60 * 60,
		HttpOnly: true,
		Secure:   strings.HasPrefix(s.publicURL, "https://"),
		SameSite: http.SameSiteLaxMode,
	})
}

// openInvoiceOf returns invoice id when it still waits for the payment of
// pay link p: the link's, New and unexpired. Partly paid counts: the
// customer completes it.
func (s *server) openInvoiceOf(r *http.Request, p *kassa.PaymentRequest, id string, unpaid bool) *kassa.Invoice {
	if id == "" {
		return nil
	}
	inv, err := s.Reader.Invoice(r.Context(), id)
	if err != nil || inv.StoreID != p.StoreID || inv.PaymentLinkID != p.ID ||
		inv.Status != kassa.InvoiceNew || !s.now().Before(inv.ExpiresAt) {
		return nil
	}
	if unpaid && inv.TotalPaid() > 0 {
		return nil
	}
	return inv
}

// handOut returns a recent invoice of pay link p that nobody has paid
// yet, for a new customer while the link's bucket is empty; nil when
// there is none.
func (s *server) handOut(r *http.Request, p *kassa.PaymentRequest) *kassa.Invoice {
	deadline := time.Now().Add(handOutWait)
	for {
		for _, id := range s.payLinkPool.candidates(p.ID, s.now()) {
			if inv := s.openInvoiceOf(r, p, id, true); inv != nil {
				s.payLinkPool.handedOut(p.ID, id)
				return inv
			}
		}
		if !s.payLinkPool.busy(p.ID) || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-r.Context().Done():
			return nil
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// handOutWait bounds how long a click waits for the invoices of a link
// being made when there is none to hand out yet.
const handOutWait = 5 * time.Second
