package postgres

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Merged inserts: in a group of several batches, the plain INSERTs of a
// create (an event, a new invoice's rows, a request id) are written as
// one statement per table for the whole group, `INSERT … SELECT … FROM
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
	insertNewInvoice:  {"text", "text", "bigint", "bigint", "bytea", "text", "text", "text", "text"},
	insertOpenInvoice: {"text", "text", "bigint"},
	insertRequest:     {"text", "text", "bytea", "text", "bigint"},
}

// mergedSQL is, for each mergeable INSERT, its statement over arrays:
// `INSERT INTO t (…) VALUES ($1, f($2))` becomes `INSERT INTO t (…)
// SELECT u.c1, f(u.c2) FROM unnest($1::type[], $2::type[]) AS u(c1, c2)`.
var mergedSQL = func() map[string]string {
	values := regexp.MustCompile(`\s+VALUES\s*\(`)
	param := regexp.MustCompile(`\$(\d+)`)
	m := make(map[string]string, len(mergeable))
	for sql, types := range mergeable {
		loc := values.FindStringIndex(sql)
		if loc == nil || !strings.HasSuffix(sql, ")") {
			panic("postgres: mergeable statement without VALUES (…): " + sql)
		}
		head, row := sql[:loc[0]], sql[loc[1]:len(sql)-1]
		var arrays, cols []string
		for i, t := range types {
			arrays = append(arrays, fmt.Sprintf("$%d::%s[]", i+1, t))
			cols = append(cols, fmt.Sprintf("c%d", i+1))
		}
		m[sql] = head + " SELECT " + param.ReplaceAllString(row, "u.c$1") + " FROM unnest(" + strings.Join(arrays, ", ") +
			") AS u(" + strings.Join(cols, ", ") + ")"
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
		cols := m.cols[sql]
		for i, c := range cols {
			if docs, ok := c.([][]byte); ok {
				// pgx encodes a [][]byte by reflection, a FlatArray
				// directly.
				cols[i] = pgtype.FlatArray[[]byte](docs)
			}
		}
		b.Queue(mergedSQL[sql], cols...)
	}
	return len(m.order)
}
