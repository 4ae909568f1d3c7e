package postgres

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Merged inserts: in a group of several batches, the plain INSERTs of a
// create (an event, a new invoice's rows, a request id) are written as
// one statement per table for the whole group, `INSERT … SELECT * FROM
// unnest($1::text[], …)`, ahead of the batches' other statements: the
// server runs one statement where it ran one per batch. Their rows are
// new keys of distinct actors (an actor's next batch waits for the
// commit of its last), so their order against the group's other
// statements does not matter; a merged statement that fails (a key
// taken) is not attributed to a batch: the group is written again
// unmerged, where each batch's own statement says which one it was.

// mergeable are the plain INSERTs written merged, with the array type
// of each of their columns.
var mergeable = map[string][]string{
	insertEvent:       {"text", "text", "bigint", "bytea"},
	insertNewInvoice:  {"text", "text", "bigint", "bigint", "bytea"},
	insertAddress:     {"text", "text"},
	insertPaymentHash: {"text", "text"},
	insertOpenInvoice: {"text", "text", "bigint"},
	insertRequest:     {"text", "text", "bytea"},
}

// mergedSQL is, for each mergeable INSERT, its statement over arrays.
var mergedSQL = func() map[string]string {
	m := make(map[string]string, len(mergeable))
	for sql, types := range mergeable {
		head, _, ok := strings.Cut(sql, " VALUES ")
		if !ok {
			panic("postgres: mergeable statement without VALUES: " + sql)
		}
		var arrays []string
		for i, t := range types {
			arrays = append(arrays, fmt.Sprintf("$%d::%s[]", i+1, t))
		}
		m[sql] = head + " SELECT * FROM unnest(" + strings.Join(arrays, ", ") + ")"
	}
	return m
}()

// merger collects the rows of the mergeable statements of a group.
type merger struct {
	order []string         // the mergeable statements met, in order
	cols  map[string][]any // statement → one typed slice per column
	rows  map[string]int
}

// add takes the statement's row if it is mergeable and its arguments
// are of the types expected; it reports whether it took it.
func (m *merger) add(sql string, args []any) bool {
	types, ok := mergeable[sql]
	if !ok || len(args) != len(types) {
		return false
	}
	for i, t := range types {
		switch args[i].(type) {
		case string:
			ok = t == "text"
		case int64:
			ok = t == "bigint"
		case []byte:
			ok = t == "bytea"
		default:
			ok = false
		}
		if !ok {
			return false
		}
	}
	if m.cols == nil {
		m.cols, m.rows = map[string][]any{}, map[string]int{}
	}
	cols, seen := m.cols[sql]
	if !seen {
		m.order = append(m.order, sql)
		cols = make([]any, len(types))
		for i, t := range types {
			switch t {
			case "text":
				cols[i] = []string{}
			case "bigint":
				cols[i] = []int64{}
			case "bytea":
				cols[i] = [][]byte{}
			}
		}
	}
	for i, a := range args {
		switch v := a.(type) {
		case string:
			cols[i] = append(cols[i].([]string), v)
		case int64:
			cols[i] = append(cols[i].([]int64), v)
		case []byte:
			cols[i] = append(cols[i].([][]byte), v)
		}
	}
	m.cols[sql] = cols
	m.rows[sql]++
	return true
}

// queue adds the merged statements to b and returns how many.
func (m *merger) queue(b *pgx.Batch) int {
	for _, sql := range m.order {
		b.Queue(mergedSQL[sql], m.cols[sql]...)
	}
	return len(m.order)
}
