package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence"
	"github.com/kassapay/kassa/protos"
)

// The search part measures a store's reads at the size of a shop with a
// million orders: invoices written in bulk through the storage port
// (kassa.Batch, as the invoice actors write them: the created event and
// the snapshot with its indexes), every one with its own order id and
// buyer e-mail, then searches by order id and by e-mail and the first
// page of the store's list, each timed alone. The invoices are copies of
// one invoice made by the real `kassa serve`, with a fresh id, order
// id, e-mail, address and Lightning invoice each (random text, which
// compresses as badly as the real thing).

// searchBatch is how many invoices one bulk batch writes.
const searchBatch = 2_000

// searchProbes is how many searches of each kind are timed.
const searchProbes = 1_000

func benchSearch(ctx context.Context, n int) error {
	tmp, bin, cleanup, err := workspace("search")
	if err != nil {
		return err
	}
	defer cleanup()
	data := filepath.Join(tmp, "kassa-data")
	tmpl, err := templateInvoice(bin, data)
	if err != nil {
		return err
	}
	dir := filepath.Join(data, "pebble")
	db, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		return err
	}
	inv, _, err := db.InvoiceSnapshot(ctx, tmpl)
	if err == nil {
		if doc, jerr := json.Marshal(inv); jerr == nil {
			fmt.Fprintf(os.Stderr, "search: each invoice is a copy of one of %d bytes as JSON (Lightning invoice %d, address %d)\n",
				len(doc), len(inv.LightningInvoice), len(inv.OnchainAddress))
		}
		start := time.Now()
		if err = writeInvoices(ctx, db, inv, n); err == nil {
			fmt.Fprintf(os.Stderr, "search: %d invoices written in %v\n", n, time.Since(start).Round(time.Second))
			start = time.Now()
			err = db.CompactAll(ctx)
			fmt.Fprintf(os.Stderr, "search: compacted in %v\n", time.Since(start).Round(time.Second))
		}
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	used, err := dirSize(dir)
	if err != nil {
		return err
	}
	bench("search_store_invoices", float64(n), "invoices")
	bench("search_disk_per_invoice_bytes", float64(used)/float64(n), "B")
	if db, err = persistence.Open(dir, persistence.Options{}); err != nil {
		return err
	}
	defer db.Close()

	store := inv.StoreID
	page := kassa.ListQuery{Limit: 50}
	probe := func(text string, in kassa.SearchField) (time.Duration, error) {
		began := time.Now()
		found := 0
		_, err := db.SearchInvoices(ctx, store, kassa.SearchQuery{ListQuery: page, Text: text, In: in}, func(*kassa.Invoice) error {
			found++
			return nil
		})
		took := time.Since(began)
		if err == nil && found == 0 {
			err = fmt.Errorf("search %q found nothing", text)
		}
		return took, err
	}
	var byOrder, byEmail, list []time.Duration
	cpuBefore := cpuTime(0)
	for range searchProbes {
		i := randN(n)
		// Order ids in another case and cut short: the search folds case
		// and matches prefixes.
		d, err := probe(strings.ToLower(benchOrderID(i))[:10], kassa.SearchOrderID)
		if err != nil {
			return err
		}
		byOrder = append(byOrder, d)
		if d, err = probe(strings.ToUpper(benchEmail(randN(n))), kassa.SearchEmail); err != nil {
			return err
		}
		byEmail = append(byEmail, d)
	}
	searchCPU := cpuTime(0) - cpuBefore
	cpuBefore = cpuTime(0)
	for range 200 {
		began := time.Now()
		found := 0
		if _, err := db.Invoices(ctx, store, page, func(*kassa.Invoice) error { found++; return nil }); err != nil {
			return err
		}
		list = append(list, time.Since(began))
		if found != page.Limit {
			return fmt.Errorf("first page holds %d invoices, not %d", found, page.Limit)
		}
	}
	listCPU := cpuTime(0) - cpuBefore
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	// CPU time per read holds under load, where wall-clock tails do not.
	bench("search_cpu_us", float64(searchCPU)/float64(time.Microsecond)/float64(2*searchProbes), "µs")
	bench("list_first_page_cpu_us", float64(listCPU)/float64(time.Microsecond)/200, "µs")
	bench("search_orderid_p99_ms", ms(percentile(byOrder, 0.99)), "ms")
	bench("search_email_p99_ms", ms(percentile(byEmail, 0.99)), "ms")
	bench("list_first_page_ms", ms(percentile(list, 0.99)), "ms")
	return nil
}

// templateInvoice starts kassa on data, makes a store and one invoice
// with an order id and a buyer e-mail, stops kassa and returns the
// invoice's id.
func templateInvoice(bin, data string) (string, error) {
	k, err := startKassa(bin, data)
	if err != nil {
		return "", err
	}
	defer k.stop()
	if _, _, err := k.createStore(); err != nil {
		return "", err
	}
	body := `{"amount":"12.50","currency":"EUR","orderId":"ORD-0000000","buyerEmail":"buyer0@example.com","metadata":{"sku":"A1"}}`
	req, _ := http.NewRequest("POST", k.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", k.key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var created struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(res.Body).Decode(&created); err != nil || res.StatusCode != 200 || created.ID == "" {
		return "", fmt.Errorf("template invoice: status %d, %v", res.StatusCode, err)
	}
	return created.ID, nil
}

func benchOrderID(i int) string { return fmt.Sprintf("ORD-%07d", i) }
func benchEmail(i int) string   { return fmt.Sprintf("buyer%d@example.com", i) }

// writeInvoices writes n copies of tmpl in batches, oldest first, one
// second apart, ending now.
func writeInvoices(ctx context.Context, db *persistence.DB, tmpl *kassa.Invoice, n int) error {
	end := time.Now().UTC()
	b := db.NewBatch()
	inBatch := 0
	began := time.Now()
	for i := range n {
		inv := *tmpl
		inv.ID = kassa.NewID("")
		inv.OrderID = benchOrderID(i)
		inv.BuyerEmail = benchEmail(i)
		inv.CreatedAt = end.Add(-time.Duration(n-i) * time.Second)
		inv.ExpiresAt = inv.CreatedAt.Add(tmpl.ExpiresAt.Sub(tmpl.CreatedAt))
		if inv.OnchainAddress != "" {
			inv.OnchainAddress = randomLike(inv.OnchainAddress, 8)
		}
		if inv.LightningInvoice != "" {
			inv.LightningInvoice = randomLike(inv.LightningInvoice, 8)
		}
		ev, err := proto.Marshal(&protos.InvoiceEvent{AtUnixNano: inv.CreatedAt.UnixNano(),
			TraceParent: "00-" + strings.Repeat("0", 32) + "-" + strings.Repeat("0", 16) + "-01",
			Kind:        &protos.InvoiceEvent_Created{Created: &protos.InvoiceCreated{}}})
		if err != nil {
			return err
		}
		b.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: inv.ID}, 1, ev)
		b.PutInvoice(&inv, nil, 1)
		if inBatch++; inBatch == searchBatch || i == n-1 {
			if err := db.Commit(ctx, b); err != nil {
				return err
			}
			b, inBatch = db.NewBatch(), 0
		}
		if done := i + 1; done%100_000 == 0 {
			fmt.Fprintf(os.Stderr, "  %d invoices in %v\n", done, time.Since(began).Round(time.Second))
		}
	}
	return nil
}

const randomAlphabet = "023456789acdefghjklmnpqrstuvwxyz"

// randomLike keeps s's first keep characters and replaces the rest with
// random characters of the bech32 alphabet.
func randomLike(s string, keep int) string {
	if len(s) <= keep {
		return s
	}
	buf := make([]byte, len(s)-keep)
	_, _ = rand.Read(buf)
	for i, c := range buf {
		buf[i] = randomAlphabet[int(c)%len(randomAlphabet)]
	}
	return s[:keep] + string(buf)
}

func randN(n int) int {
	v, _ := rand.Int(rand.Reader, big.NewInt(int64(n)))
	return int(v.Int64())
}
