package persistence

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
)

// The search index holds, for each invoice and each of its search terms
// (kassa.Invoice.SearchTerms), the key
//
//	isr/<store>\0<field><term>\0<createdMs:8><id>
//
// with no value. Terms never contain 0x00 (kassa.FoldSearch), so the
// first 0x00 after the field ends the term. PutInvoice writes the keys
// in the invoice's own batch and deletes those of terms that changed,
// so the index never disagrees with the snapshots.

// The field bytes of the search index.
const (
	fieldOrderID = 'o'
	fieldEmail   = 'e'
	fieldID      = 'i'
)

func searchPrefix(store string, field byte) []byte {
	return key("isr/", str(store), sepb, []byte{field})
}

func searchKey(store string, field byte, term string, created time.Time, id string) []byte {
	return key("isr/", str(store), sepb, []byte{field}, str(term), sepb, ms(created), str(id))
}

// searchKeys returns the search index keys of inv.
func searchKeys(inv *kassa.Invoice) [][]byte {
	t := inv.SearchTerms()
	var out [][]byte
	for _, f := range []struct {
		field byte
		term  string
	}{{fieldOrderID, t.OrderID}, {fieldEmail, t.Email}, {fieldID, t.ID}} {
		if f.term != "" {
			out = append(out, searchKey(inv.StoreID, f.field, f.term, inv.CreatedAt, inv.ID))
		}
	}
	return out
}

// putSearchKeys writes inv's search keys and deletes prev's that inv
// no longer has.
func (b *Batch) putSearchKeys(inv, prev *kassa.Invoice) {
	next := searchKeys(inv)
	var old [][]byte
	if prev != nil {
		old = searchKeys(prev)
	}
	for _, k := range old {
		if !slices.ContainsFunc(next, func(n []byte) bool { return bytes.Equal(n, k) }) {
			b.del(k)
		}
	}
	for _, k := range next {
		if !slices.ContainsFunc(old, func(o []byte) bool { return bytes.Equal(o, k) }) {
			b.set(k, nil)
		}
	}
}

// SearchInvoices calls fn for the store's invoices that q finds, newest
// first. It reads the keys of the matching terms only: an exact search
// reads at most a page of keys per field, a prefix search every key of
// the terms with that prefix (keeping the newest page of them).
func (d *DB) SearchInvoices(ctx context.Context, storeID string, q kassa.SearchQuery, fn func(*kassa.Invoice) error) (string, error) {
	text, err := q.Folded()
	if err != nil {
		return "", err
	}
	// Positions are a key's <createdMs:8><id>: they order invoices as
	// the store's list does, and a cursor is one, base64.
	lower, upper := []byte(nil), []byte(nil)
	if !q.From.IsZero() {
		lower = ms(q.From.Truncate(time.Second))
	}
	if !q.To.IsZero() {
		upper = ms(q.To.Truncate(time.Second).Add(time.Second))
	}
	if q.Cursor != "" {
		after, err := base64.RawURLEncoding.DecodeString(q.Cursor)
		if err != nil || len(after) < 8 {
			return "", errBadCursor
		}
		if upper == nil || bytes.Compare(after, upper) < 0 {
			upper = after
		}
	}
	in := func(pos []byte) bool {
		return (lower == nil || bytes.Compare(pos, lower) >= 0) && (upper == nil || bytes.Compare(pos, upper) < 0)
	}
	found := &newest{limit: q.Limit, seen: map[string]bool{}}
	if err := d.enter(); err != nil {
		return "", err
	}
	fields := q.Fields()
	for _, f := range []struct {
		field byte
		in    kassa.SearchField
	}{{fieldOrderID, kassa.SearchOrderID}, {fieldEmail, kassa.SearchEmail}, {fieldID, kassa.SearchID}} {
		if fields&f.in == 0 {
			continue
		}
		if err := d.searchField(ctx, searchPrefix(storeID, f.field), text, q.Exact, lower, upper, in, found); err != nil {
			d.leave()
			return "", err
		}
	}
	d.leave()
	page := found.sorted()
	next := ""
	if q.Limit > 0 && len(page) > q.Limit {
		page = page[:q.Limit]
		next = base64.RawURLEncoding.EncodeToString(page[len(page)-1])
	}
	for _, pos := range page {
		inv, err := d.Invoice(ctx, string(pos[8:]))
		if err != nil {
			return "", err
		}
		if err := fn(inv); err != nil {
			return "", err
		}
	}
	return next, nil
}

// searchField adds to found the positions in [lower, upper) of the terms
// under prefix that start with text (are text, when exact).
func (d *DB) searchField(ctx context.Context, prefix []byte, text string, exact bool, lower, upper []byte, in func([]byte) bool, found *newest) error {
	start := key(string(prefix), str(text))
	end := prefixEnd(start)
	if exact {
		// One term: its keys are in time order, the newest last.
		term := key(string(start), sepb)
		start, end = term, prefixEnd(term)
		if lower != nil {
			start = key(string(term), lower)
		}
		if upper != nil {
			end = key(string(term), upper)
		}
	}
	it, err := d.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: start, UpperBound: end})
	if err != nil {
		return err
	}
	defer it.Close()
	for valid := it.Last(); valid; valid = it.Prev() {
		rest := it.Key()[len(prefix):]
		i := bytes.IndexByte(rest, sep)
		if i < 0 || len(rest)-i-1 < 8 {
			return fmt.Errorf("malformed search key %q", it.Key())
		}
		pos := rest[i+1:]
		if !in(pos) {
			continue
		}
		if !found.add(pos) && exact {
			break // the rest of this term's keys are older still
		}
	}
	return it.Error()
}

// newest keeps the newest limit+1 positions added (all when limit is
// zero), each once: a min-heap whose least is evicted.
type newest struct {
	limit int
	pos   [][]byte
	seen  map[string]bool
}

func (h *newest) Len() int           { return len(h.pos) }
func (h *newest) Less(i, j int) bool { return bytes.Compare(h.pos[i], h.pos[j]) < 0 }
func (h *newest) Swap(i, j int)      { h.pos[i], h.pos[j] = h.pos[j], h.pos[i] }
func (h *newest) Push(x any)         { h.pos = append(h.pos, x.([]byte)) }
func (h *newest) Pop() any {
	x := h.pos[len(h.pos)-1]
	h.pos = h.pos[:len(h.pos)-1]
	return x
}

// add offers pos; it reports false when pos is older than every one
// kept of a full page, so that no older one can be kept either.
func (h *newest) add(pos []byte) bool {
	if h.seen[string(pos)] {
		return true
	}
	full := h.limit > 0 && len(h.pos) == h.limit+1
	if full && bytes.Compare(pos, h.pos[0]) <= 0 {
		return false
	}
	p := append([]byte(nil), pos...)
	h.seen[string(p)] = true
	if full {
		delete(h.seen, string(h.pos[0]))
		h.pos[0] = p
		heap.Fix(h, 0)
		return true
	}
	heap.Push(h, p)
	return true
}

// sorted returns the positions kept, newest first.
func (h *newest) sorted() [][]byte {
	out := slices.Clone(h.pos)
	slices.SortFunc(out, func(a, b []byte) int { return bytes.Compare(b, a) })
	return out
}

// searchIndexVersion is the version of the search index's keys; a store
// whose "ver/search" is older is indexed again at Open.
const searchIndexVersion = 1

var searchVersionKey = []byte("ver/search")

// indexSearch builds the search index of the invoices of a store written
// before it had one, once: at Open, before any other write, it walks
// every invoice snapshot and writes its search keys in batches, logging
// its progress, then records the version. A crash on the way leaves the
// version unwritten and the walk starts again at the next Open (its
// writes are idempotent).
func (d *DB) indexSearch(ctx context.Context, log *slog.Logger) error {
	v, err := d.get(searchVersionKey)
	if err != nil {
		return err
	}
	if len(v) == 8 && binary.BigEndian.Uint64(v) >= searchIndexVersion {
		return nil
	}
	start := time.Now()
	b := d.db.NewBatch()
	defer func() { b.Close() }()
	n := 0
	flush := func() error {
		err := guarded(func() error { return b.Commit(pebble.NoSync) })
		b.Close()
		b = d.db.NewBatch()
		return err
	}
	err = d.scanPrefix(ctx, []byte("inv/"), func(id, v []byte) error {
		if len(v) < 8 {
			return fmt.Errorf("malformed invoice snapshot %q", id)
		}
		var inv kassa.Invoice
		if err := format.Unmarshal(v[8:], &inv); err != nil {
			return fmt.Errorf("decode invoice %s: %w", id, err)
		}
		for _, k := range searchKeys(&inv) {
			if err := b.Set(k, nil, nil); err != nil {
				return err
			}
		}
		n++
		if n%indexBatch == 0 {
			if err := flush(); err != nil {
				return err
			}
			if n%(100*indexBatch) == 0 {
				log.Info("store: indexing invoices for search", "invoices", n, "elapsed", time.Since(start).Round(time.Millisecond))
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("index invoices for search: %w", err)
	}
	if err := b.Set(searchVersionKey, u64(searchIndexVersion), nil); err != nil {
		return err
	}
	if err := guarded(func() error { return b.Commit(pebble.Sync) }); err != nil {
		return fmt.Errorf("index invoices for search: %w", err)
	}
	if n > 0 {
		log.Info("store: indexed invoices for search", "invoices", n, "elapsed", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// indexBatch is how many invoices one batch of indexSearch indexes.
const indexBatch = 1000
