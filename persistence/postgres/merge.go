package postgres

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Merged inserts: in a group of several batches, the plain INSERTs of a
// create (an event, a new invoice's rows, a request id) are written as
// few multi-row statements per table for the whole group, `INSERT …
// VALUES (…), (…), …`, ahead of the batches' other statements: the
// server runs one statement where it ran one per batch. A statement
// holds one of mergedSizes rows, the largest that fits first (a group
// of 21 rows is two statements, 16 and 5 rows), so that a group of up
// to maxMergedRows is at most two statements per table and each
// connection prepares a few statements per table, not one per group
// size. Multi-row
// VALUES cost the server less per row than `INSERT … SELECT … FROM
// unnest(arrays)` (docs/decisions.md, "Group commit on Pebble and
// PostgreSQL"). Their rows are new keys of distinct actors (an actor's next
// batch waits for the commit of its last), so their order against the
// group's other statements does not matter; a merged statement that
// fails (a key taken) is not attributed to a batch: the group is written
// again unmerged, where each batch's own statement says which one it
// was.

// maxMergedRows bounds the rows of one merged statement.
const maxMergedRows = 64

// mergedSizes are the rows a merged statement may hold, ascending: each
// count up to 16, the size of most groups, then a few up to
// maxMergedRows, so that any count up to maxMergedRows is the sum of at
// most two.
var mergedSizes = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 24, 32, 48, maxMergedRows}

// mergeable are the plain INSERTs written merged, with the type of
// each of their arguments.
var mergeable = map[string][]string{
	insertEvent:       {"text", "text", "bigint", "bytea"},
	insertNewInvoice:  {"text", "text", "bigint", "bigint", "bytea", "text", "text", "text", "text", "bigint", "bigint"},
	insertOpenInvoice: {"text", "text", "bigint"},
	insertRequest:     {"text", "text", "bytea", "text", "bigint"},
}

// mergedSQL is, for each mergeable INSERT, its statements of each of
// mergedSizes rows (indexed as mergedSizes): `INSERT INTO t
// (…) VALUES ($1, f($2))` becomes `INSERT INTO t (…) VALUES ($1,
// f($2)), ($3, f($4))`.
var mergedSQL = func() map[string][]string {
	values := regexp.MustCompile(`\s+VALUES\s*\(`)
	param := regexp.MustCompile(`\$(\d+)`)
	m := make(map[string][]string, len(mergeable))
	for sql, types := range mergeable {
		loc := values.FindStringIndex(sql)
		if loc == nil || !strings.HasSuffix(sql, ")") {
			panic("postgres: mergeable statement without VALUES (…): " + sql)
		}
		head, row := sql[:loc[0]], sql[loc[1]-1:]
		mergedStatements[sql] = sql
		for _, n := range mergedSizes {
			var b strings.Builder
			b.WriteString(head)
			b.WriteString(" VALUES ")
			for r := range n {
				if r > 0 {
					b.WriteString(", ")
				}
				b.WriteString(param.ReplaceAllStringFunc(row, func(p string) string {
					i, _ := strconv.Atoi(p[1:])
					return "$" + strconv.Itoa(r*len(types)+i)
				}))
			}
			m[sql] = append(m[sql], b.String())
			mergedStatements[b.String()] = sql
		}
	}
	return m
}()

// mergedStatements are the mergeable INSERTs and the statements of
// mergedSQL, to the mergeable INSERT each is or merges.
var mergedStatements = map[string]string{}

// merger collects the rows of the mergeable statements of a group.
type merger struct {
	order []string         // the mergeable statements met, in order
	rows  map[string][]any // statement → its rows' arguments, row after row
	// batches is the group's size: a statement's rows take room for
	// one row of each batch at once.
	batches int
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
	if m.rows == nil {
		m.rows = map[string][]any{}
	}
	rows, seen := m.rows[sql]
	if !seen {
		m.order = append(m.order, sql)
		rows = make([]any, 0, max(m.batches, 1)*len(types))
	}
	m.rows[sql] = append(rows, args...)
	return true
}

// queue adds the merged statements to b and returns how many.
func (m *merger) queue(b *pgx.Batch) int {
	queued := 0
	for _, sql := range m.order {
		cols := len(mergeable[sql])
		args := m.rows[sql]
		for len(args) > 0 {
			// The largest size that the rows left fill.
			k := len(mergedSizes) - 1
			for mergedSizes[k] > len(args)/cols {
				k--
			}
			n := mergedSizes[k] * cols
			b.Queue(mergedSQL[sql][k], args[:n:n]...)
			args = args[n:]
			queued++
		}
	}
	return queued
}
