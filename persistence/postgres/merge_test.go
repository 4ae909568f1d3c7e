package postgres

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// The merged rows of a group go in statements of one of mergedSizes
// rows, largest first, in their order: a group of up to 16 creates is
// one statement per table, one of up to maxMergedRows at most two, and
// a connection prepares a few statements per table, whatever the
// group's size.
func TestMergedStatementSizes(t *testing.T) {
	if got, want := mergedSQL[insertOpenInvoice][1],
		`INSERT INTO open_invoices (invoice_id, store_id, deadline_ms) VALUES ($1, $2, $3), ($4, $5, $6)`; got != want {
		t.Errorf("two-row statement = %q, want %q", got, want)
	}
	if len(mergedSizes) > 24 || mergedSizes[len(mergedSizes)-1] != maxMergedRows {
		t.Errorf("merged statement sizes %v: more than 24, or the largest is not %d", mergedSizes, maxMergedRows)
	}
	for n := 1; n <= 300; n++ {
		var m merger
		var want []any
		for i := range n {
			row := []any{fmt.Sprintf("inv_%d", i), "s1", int64(i)}
			want = append(want, row...)
			if !m.add(insertOpenInvoice, row) {
				t.Fatal("an open row is not merged")
			}
		}
		b := &pgx.Batch{}
		queued := m.queue(b)
		var got []any
		last := maxMergedRows
		for _, q := range b.QueuedQueries {
			rows := len(q.Arguments) / 3
			k := slices.Index(mergedSizes, rows)
			if rows > last || k < 0 || q.SQL != mergedSQL[insertOpenInvoice][k] {
				t.Fatalf("%d rows: a statement of %d rows after one of %d (%q)", n, rows, last, q.SQL)
			}
			last = rows
			got = append(got, q.Arguments...)
		}
		full, rest := n/maxMergedRows, n%maxMergedRows
		most := full + min(rest, 2)
		if rest > 0 && rest <= 16 {
			most = full + 1
		}
		if queued != len(b.QueuedQueries) || queued > most {
			t.Errorf("%d rows: %d statements (queue says %d), want at most %d", n, len(b.QueuedQueries), queued, most)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%d rows: the statements' arguments are not the rows in order", n)
		}
	}
}

// TestGroupMergesCreatesInSeveralStatements: 21 creates in one group are
// two statements per table (16 and 5 rows), and every create is whole.
func TestGroupMergesCreatesInSeveralStatements(t *testing.T) {
	db := openTest(t)
	ctx := t.Context()
	if err := db.Members().Join(ctx, "node-1"); err != nil {
		t.Fatal(err)
	}
	var sent []int
	db.group.sent = func(n int) { sent = append(sent, n) } // one group runs at a time
	h := newGroupHarness(t, db)
	first := h.start(t)
	const n = 21
	errs := make(chan error, n)
	var ids []string
	for i := range n {
		b, inv := createBatch(db, fmt.Sprintf("inv_%d", i), fmt.Sprintf("bcrt1q%d", i))
		ids = append(ids, inv.ID)
		go func() { errs <- db.Members().Commit(context.Background(), "node-1", b) }()
	}
	h.waitQueued(t, n)
	close(h.hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if want := []int{1, 1 + 4*2}; !slices.Equal(sent, want) {
		t.Errorf("statements sent per transaction = %v, want %v (the first group's store, then a fence and two merged INSERTs per table)", sent, want)
	}
	for i, id := range ids {
		if got, seq, err := db.InvoiceSnapshot(ctx, id); err != nil || seq != 1 || got.ID != id {
			t.Errorf("InvoiceSnapshot(%s) = %v, seq %d, %v", id, got, seq, err)
		}
		if a, err := db.InvoiceIDByAddress(ctx, fmt.Sprintf("bcrt1q%d", i)); a != id || err != nil {
			t.Errorf("InvoiceIDByAddress of %s = %q, %v", id, a, err)
		}
		if r, err := db.Request(ctx, "s1", "req_"+id); err != nil || r.ResultID != id {
			t.Errorf("Request(req_%s) = %+v, %v", id, r, err)
		}
	}
}

// TestMergedArgsOnlyWhereTheTypeMatches: the merged arguments' own
// encoding sends a string as text only to a text parameter and an int64
// only to a bigint one; anything else is left to pgx, which knows the
// type (a string sent as text to a bytea parameter would be read as
// bytea's escape format, "\x00" as one zero byte).
func TestMergedArgsOnlyWhereTheTypeMatches(t *testing.T) {
	for _, c := range []struct {
		oids []uint32
		args []any
		want bool
	}{
		{[]uint32{pgtype.TextOID, pgtype.Int8OID, pgtype.ByteaOID}, []any{"a", int64(1), []byte("d")}, true},
		{[]uint32{pgtype.ByteaOID}, []any{`\x00`}, false},
		{[]uint32{pgtype.Int4OID}, []any{int64(1)}, false},
		{[]uint32{pgtype.Int8OID}, []any{"1"}, false},
		{[]uint32{pgtype.TextOID}, []any{[]byte("d")}, false},
		{[]uint32{pgtype.TextOID}, []any{1}, false},
		{[]uint32{pgtype.TextOID, pgtype.TextOID}, []any{"a"}, false},
	} {
		var m mergedArgs
		if got := m.encode(&pgconn.StatementDescription{ParamOIDs: c.oids}, c.args); got != c.want {
			t.Errorf("encode(%v, %v) = %v, want %v", c.oids, c.args, got, c.want)
		}
	}
}
