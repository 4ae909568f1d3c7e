package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
)

// SearchInvoices calls fn for the store's invoices that q finds, newest
// first. The terms are the columns order_key and email_key (written with
// the row: PutInvoice), each under an index by store; an id is found by
// the primary key (ids are lower case, as their folded text). A prefix
// is the range [text, successor(text)) in the columns' "C" collation,
// which orders as the Pebble store does (bytes of UTF-8).
func (d *DB) SearchInvoices(ctx context.Context, storeID string, q kassa.SearchQuery, fn func(*kassa.Invoice) error) (string, error) {
	text, err := q.Folded()
	if err != nil {
		return "", err
	}
	lower, upper := pageBounds(q.ListQuery)
	cMs, cID := upper, ""
	if q.Cursor != "" {
		m, raw, err := parseCursor(q.Cursor)
		if err != nil {
			return "", err
		}
		if m < upper {
			cMs, cID = m, string(raw)
		}
	}
	args := []any{storeID, lower, cMs, cID, text}
	match := func(col string) string {
		if q.Exact {
			return col + " = $5"
		}
		if succ, ok := kassa.SearchSuccessor(text); ok {
			if len(args) == 5 {
				args = append(args, succ)
			}
			return "(" + col + " >= $5 AND " + col + " < $6)"
		}
		return col + " >= $5"
	}
	var or []string
	fields := q.Fields()
	if fields&kassa.SearchOrderID != 0 {
		or = append(or, match("order_key"))
	}
	if fields&kassa.SearchEmail != 0 {
		or = append(or, match("email_key"))
	}
	if fields&kassa.SearchID != 0 {
		or = append(or, match("id"))
	}
	limit := ""
	if q.Limit > 0 {
		limit = " LIMIT " + strconv.Itoa(q.Limit+1)
	}
	// Without a cursor, (created_ms, id) < (upper, '') keeps every row
	// created before upper.
	rows, err := d.pool.Query(ctx, `SELECT created_ms, id, doc FROM invoices
		WHERE store_id = $1 AND created_ms >= $2 AND (created_ms, id) < ($3, $4) AND (`+strings.Join(or, " OR ")+`)
		ORDER BY created_ms DESC, id DESC`+limit, args...)
	if err != nil {
		return "", fmt.Errorf("postgres: search invoices: %w", down(err))
	}
	defer rows.Close()
	var n, lastMs int64
	var lastID string
	for rows.Next() {
		if q.Limit > 0 && n == int64(q.Limit) {
			return cursor(lastMs, []byte(lastID)), nil
		}
		var doc []byte
		if err := rows.Scan(&lastMs, &lastID, &doc); err != nil {
			return "", fmt.Errorf("postgres: search invoices: %w", down(err))
		}
		var inv kassa.Invoice
		if err := format.Unmarshal(doc, &inv); err != nil {
			return "", fmt.Errorf("postgres: decode invoice %s: %w", lastID, err)
		}
		if err := fn(&inv); err != nil {
			return "", err
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("postgres: search invoices: %w", down(err))
	}
	return "", nil
}
