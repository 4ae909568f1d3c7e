package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Group commit (docs/decisions.md, "Group commit on Pebble and
// PostgreSQL"): the batches committed while a transaction is being
// written wait in a queue; the next transaction takes every batch waiting (up to
// maxGroup) and writes them together, so that their commits share one
// WAL flush. Each batch keeps its own checks: its fence (a query that
// must find its row, locking it until the commit) and its statements'
// own constraints (a taken event sequence number). A transaction is one
// round trip: BEGIN, the fences, the statements and COMMIT are sent
// together, and a fence that finds no row fails (fenceSQL), so that
// the server skips the rest of the transaction, COMMIT included, as it
// does after a failed statement. A batch refused by its fence, or whose
// statement fails, is answered with its own error alone: the
// transaction is rolled back and written again without it. Every batch
// is answered only once the transaction that holds it has committed (or
// failed, when all of its batches get the error).
//
// One group at a time (maxRunning) is written; it hands its turn over to
// the next group once its COMMIT is answered, so that the batches that
// arrive during its WAL flush go in the next group: the server's cost
// of a transaction (BEGIN, the fences, a statement per table, COMMIT)
// is shared by more batches. A group that PostgreSQL aborts as the
// victim of a deadlock (with another node's transaction, or with
// another group when maxRunning is raised) is written again whole, as
// no batch of it is at fault.

// maxGroup bounds the batches of one transaction.
const maxGroup = 256

// maxRunning bounds the groups written at once, from their statements
// to their COMMIT's answer. One: the batches that arrive while a group
// is written wait for the next, so groups grow with the load and the
// server spends less per batch (docs/decisions.md, "Group commit on
// Pebble and PostgreSQL").
const maxRunning = 1

// retryDeadlock is how often a group that PostgreSQL chose as the
// victim of a deadlock (or a serialization failure) is written again
// whole before the batch whose statement failed gets the error.
const retryDeadlock = 3

// fence is a check a batch commits under, in the batch's transaction:
// sql returns a row (and locks it until the commit) while the batch may
// commit. Batches with the same check (sql and args) share it.
type fence struct {
	sql  string
	args []any
	// refused is the batch's error when sql finds no row.
	refused error
	// what names the check in the error of a failed query.
	what string
	key  string // set by commit
}

// groupItem is a batch waiting for its commit.
type groupItem struct {
	ctx   context.Context
	stmts []*pgx.QueuedQuery
	// newInvoices are the batch's new invoice rows, by their INSERT.
	newInvoices map[*pgx.QueuedQuery]newInvoiceRow
	fence       *fence
	// what names the commit in its errors ("postgres: commit batch").
	what string
	// upsert says the batch takes its new invoice's address and payment
	// hash from the invoices that have them before its INSERT: that
	// INSERT found one of them taken (db.go, takeLookups).
	upsert bool
	err    error
	done   chan struct{}
	group  groupStats // of the transaction that committed it (span.go)
}

// committer queues the batches of a DB and writes them in groups.
type committer struct {
	pool *pgxpool.Pool

	mu    sync.Mutex
	queue []*groupItem
	// running counts the groups being written, at most maxRunning (a
	// field, which tests may change).
	running, maxRunning int

	// Test hooks: executed runs with the group's size before its
	// transaction is sent (a retry of it is not counted); committed
	// runs with the size of each group that committed; sent runs with
	// the statements of each transaction sent (fences and batches'
	// statements, merged ones counted once; not BEGIN and COMMIT).
	sent      func(stmts int)
	executed  func(n int)
	committed func(n int)
}

// commit queues the batch's statements under f (nil: no fence) and
// waits for the transaction that holds them; what names the commit in
// its errors. Once its statements are in a transaction the caller waits
// for that transaction's end even if ctx ends (the transaction is given
// up only when every caller in it gave up), so that an answer always
// says whether the batch is stored.
func (c *committer) commit(ctx context.Context, b *Batch, f *fence, what string) error {
	if b.err != nil {
		return fmt.Errorf("postgres: build batch: %w", b.err)
	}
	if b.b.Len() == 0 && f == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if f != nil {
		f.key = fenceKey(f.sql, f.args)
	}
	it := &groupItem{ctx: ctx, stmts: b.b.QueuedQueries, newInvoices: b.newInvoices, fence: f, what: what, done: make(chan struct{})}
	defer commitSpan(ctx, it)()
	c.mu.Lock()
	c.queue = append(c.queue, it)
	if c.running < c.maxRunning {
		c.running++
		go c.run()
	}
	c.mu.Unlock()
	<-it.done
	return it.err
}

// fenceKey is the key of a check: its SQL and arguments, each prefixed
// with its length (an argument also with its kind), so that two keys are
// equal only when the checks are.
func fenceKey(sql string, args []any) string {
	b := make([]byte, 0, len(sql)+64)
	b = strconv.AppendInt(b, int64(len(sql)), 10)
	b = append(b, ':')
	b = append(b, sql...)
	for _, a := range args {
		var v string
		switch a := a.(type) {
		case string:
			b, v = append(b, 's'), a
		case int64:
			b, v = append(b, 'i'), strconv.FormatInt(a, 10)
		default:
			b, v = append(b, 'v'), fmt.Sprintf("%T %#v", a, a)
		}
		b = strconv.AppendInt(b, int64(len(v)), 10)
		b = append(b, ':')
		b = append(b, v...)
	}
	return string(b)
}

// run takes the batches waiting and writes them in one transaction.
func (c *committer) run() {
	c.mu.Lock()
	n := min(len(c.queue), maxGroup)
	items := c.queue[:n:n]
	c.queue = c.queue[n:]
	c.mu.Unlock()

	// A batch whose caller gave up before it was sent is not written.
	live := items[:0:0]
	for _, it := range items {
		if err := it.ctx.Err(); err != nil {
			it.answer(fmt.Errorf("%s: %w", it.what, err))
			continue
		}
		live = append(live, it)
	}
	ctx, cancel := groupContext(live)
	defer cancel()
	if c.executed != nil && len(live) > 0 {
		c.executed(len(live))
	}
	live = c.exec(ctx, live)
	noteGroup(live)
	if c.committed != nil && len(live) > 0 {
		c.committed(len(live))
	}
	c.handOver()
	for _, it := range live {
		it.answer(nil)
	}
}

// handOver gives the turn to the next group, if batches wait for one.
func (c *committer) handOver() {
	c.mu.Lock()
	if len(c.queue) > 0 {
		go c.run()
	} else {
		c.running--
	}
	c.mu.Unlock()
}

func (it *groupItem) answer(err error) {
	it.err = err
	close(it.done)
}

// groupContext is the context of a group's transaction: it ends once
// every caller's context has ended.
func groupContext(items []*groupItem) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	left := new(atomic.Int64)
	left.Store(int64(len(items)))
	stops := make([]func() bool, 0, len(items))
	for _, it := range items {
		stops = append(stops, context.AfterFunc(it.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		}))
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// exec writes the fences, statements and COMMIT of items in a new
// transaction, answers the batches that were refused or failed (and
// all of them when COMMIT fails), and writes the rest again until none
// fails. It returns the batches committed, which are not answered yet.
func (c *committer) exec(ctx context.Context, items []*groupItem) []*groupItem {
	if len(items) == 0 {
		return nil
	}
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		failAll(items, err)
		return nil
	}
	defer conn.Release()
	deadlocks, merge := 0, true
	pc := conn.Conn().PgConn()
	for len(items) > 0 {
		g := newGroupRun(items, merge)
		if c.sent != nil {
			c.sent(g.batch.Len() - 2) // BEGIN, COMMIT
		}
		b, err := g.encode(ctx, conn.Conn())
		if err != nil {
			failAll(items, err)
			return nil
		}
		res := &groupResults{mrr: pc.ExecBatch(ctx, b)}
		if _, err := res.Exec(); err != nil { // BEGIN
			res.Close()
			failAll(items, errors.Join(err, rollback(ctx, pc)))
			return nil
		}
		out := g.read(res)
		if err := res.Close(); err != nil && out.failed == nil && len(out.refused) == 0 {
			out.failed = err
		}
		if out.failed == nil && len(out.refused) == 0 {
			return items
		}
		rbErr := rollback(ctx, pc)
		if out.lost(ctx) || rbErr != nil || pc.IsClosed() {
			// The connection or the transaction is gone: no batch of
			// the group is written.
			failAll(items, errors.Join(out.failed, rbErr))
			return nil
		}
		if out.failed != nil && retryable(out.failed) && deadlocks < retryDeadlock {
			deadlocks++
			continue
		}
		if out.mergeFailed {
			// Which batch's row failed is not known: the group is
			// written again unmerged.
			merge = false
			continue
		}
		items = out.answer(items)
	}
	return nil
}

// groupRun is one attempt at writing a group: its pgx batch (BEGIN, the
// fences, the merged INSERTs, each item's own statements, then COMMIT)
// and how many of each it queued, to read their results in the same
// order.
type groupRun struct {
	batch  *pgx.Batch
	fences []*fence
	merged int
	// own are each item's statements not merged, in the item's order.
	own [][]*pgx.QueuedQuery
}

// newGroupRun queues the group of items; merge says whether the
// mergeable INSERTs of a group of several batches go in one statement
// each (merge.go).
func newGroupRun(items []*groupItem, merge bool) *groupRun {
	g := &groupRun{batch: &pgx.Batch{}, fences: distinctFences(items), own: make([][]*pgx.QueuedQuery, len(items))}
	g.batch.Queue("BEGIN")
	for _, f := range g.fences {
		g.batch.Queue(fenceSQL(f.sql), f.args...)
	}
	m := merger{batches: len(items)}
	for i, it := range items {
		for _, q := range it.stmts {
			if row, ok := it.newInvoices[q]; ok && it.upsert {
				g.own[i] = append(g.own[i], row.takeLookups())
			}
			if merge && !it.upsert && len(items) > 1 && m.add(q.SQL, q.Arguments) {
				continue
			}
			g.own[i] = append(g.own[i], q)
		}
	}
	g.merged = m.queue(g.batch)
	for _, qs := range g.own {
		for _, q := range qs {
			g.batch.Queue(q.SQL, q.Arguments...)
		}
	}
	g.batch.Queue("COMMIT")
	return g
}

// fenceSQL is the statement of a fence in a group: it fails with a
// division by zero (refusedCode) when sql finds no row, and locks the
// rows sql locks.
func fenceSQL(sql string) string {
	return "SELECT 1 / count(*) FROM (" + sql + ") fence"
}

// refusedCode is the SQLSTATE of a fence that found no row (fenceSQL).
const refusedCode = "22012"

// encode prepares the group's statements on conn (once per
// connection: pgx keeps them by their SQL) and encodes the batch that
// sends them with their arguments: those of a mergeable INSERT here,
// without pgx's copies (mergedArgs), the others by pgx.
func (g *groupRun) encode(ctx context.Context, conn *pgx.Conn) (*pgconn.Batch, error) {
	b := &pgconn.Batch{}
	var eqb pgx.ExtendedQueryBuilder
	scratch := mergedArgsPool.Get().(*mergedArgs)
	defer mergedArgsPool.Put(scratch)
	for _, q := range g.batch.QueuedQueries {
		sd, err := conn.Prepare(ctx, q.SQL, q.SQL)
		if err != nil {
			return nil, err
		}
		if _, merged := mergedStatements[q.SQL]; merged && scratch.encode(sd, q.Arguments) {
			b.ExecStatement(sd, scratch.values, scratch.formats, nil)
			continue
		}
		if err := eqb.Build(conn.TypeMap(), sd, q.Arguments); err != nil {
			return nil, fmt.Errorf("postgres: encode %.40q: %w", q.SQL, err)
		}
		b.ExecStatement(sd, eqb.ParamValues, eqb.ParamFormats, eqb.ResultFormats)
	}
	return b, nil
}

// mergedArgs encodes the arguments of a mergeable INSERT, merged or
// not, reusing its buffers from statement to statement: a string to a
// text parameter or an int64 to a bigint one as text (the server's parse
// of it is cheap), a document ([]byte to a bytea) as it is, in binary;
// any other pairing is left to pgx.
type mergedArgs struct {
	buf     []byte
	ends    []int
	values  [][]byte
	formats []int16
}

// mergedArgsPool keeps the buffers of mergedArgs from group to group.
var mergedArgsPool = sync.Pool{New: func() any { return new(mergedArgs) }}

// encode encodes args for the statement sd and reports whether it
// could; it cannot when an argument is of another type.
func (m *mergedArgs) encode(sd *pgconn.StatementDescription, args []any) bool {
	if len(sd.ParamOIDs) != len(args) {
		return false
	}
	m.buf, m.ends, m.values, m.formats = m.buf[:0], m.ends[:0], m.values[:0], m.formats[:0]
	for i, a := range args {
		switch a := a.(type) {
		case string:
			if sd.ParamOIDs[i] != pgtype.TextOID {
				return false
			}
			m.buf = append(m.buf, a...)
			m.formats = append(m.formats, pgx.TextFormatCode)
		case int64:
			if sd.ParamOIDs[i] != pgtype.Int8OID {
				return false
			}
			m.buf = strconv.AppendInt(m.buf, a, 10)
			m.formats = append(m.formats, pgx.TextFormatCode)
		case []byte:
			if sd.ParamOIDs[i] != pgtype.ByteaOID {
				return false
			}
			m.formats = append(m.formats, pgx.BinaryFormatCode)
		default:
			return false
		}
		m.ends = append(m.ends, len(m.buf))
	}
	start := 0
	for i, a := range args {
		if doc, ok := a.([]byte); ok {
			m.values = append(m.values, doc)
			continue
		}
		m.values = append(m.values, m.buf[start:m.ends[i]])
		start = m.ends[i]
	}
	return true
}

// groupResults reads the results of a group's batch in order.
type groupResults struct {
	mrr *pgconn.MultiResultReader
	err error
}

// Exec reads the next statement's result: its error, or that of the
// statement that failed before it (whose failure made the server skip
// the rest).
func (r *groupResults) Exec() (pgconn.CommandTag, error) {
	if r.err != nil {
		return pgconn.CommandTag{}, r.err
	}
	if !r.mrr.NextResult() {
		if r.err = r.mrr.Close(); r.err == nil {
			r.err = errors.New("postgres: a group's batch has fewer results than statements")
		}
		return pgconn.CommandTag{}, r.err
	}
	tag, err := r.mrr.ResultReader().Close()
	if err != nil {
		r.err = err
	}
	return tag, err
}

// Close reads what is left of the results and returns the first error.
func (r *groupResults) Close() error {
	err := r.mrr.Close()
	if r.err != nil {
		return r.err
	}
	return err
}

// rollback ends the transaction a failed group left open, if any.
func rollback(ctx context.Context, pc *pgconn.PgConn) error {
	if pc.IsClosed() || pc.TxStatus() == 'I' {
		return nil
	}
	_, err := pc.Exec(ctx, "ROLLBACK").ReadAll()
	return err
}

// distinctFences returns the fences of items, each once.
func distinctFences(items []*groupItem) []*fence {
	var fences []*fence
	seen := make(map[string]bool)
	for _, it := range items {
		if it.fence != nil && !seen[it.fence.key] {
			seen[it.fence.key] = true
			fences = append(fences, it.fence)
		}
	}
	return fences
}

// groupOutcome is what a group's statements did: the fence that found
// no row, or the first failure and where it was (nowhere: COMMIT).
type groupOutcome struct {
	refused     map[string]bool // fence keys
	failed      error
	failFence   *fence
	failItem    int // the item whose own statement failed, or -1
	mergeFailed bool
}

// read reads the results of the group's statements after BEGIN, up to
// the first failure, and of its COMMIT.
func (g *groupRun) read(br *groupResults) *groupOutcome {
	out := &groupOutcome{refused: make(map[string]bool), failItem: -1}
	for _, f := range g.fences {
		if _, err := br.Exec(); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == refusedCode {
				out.refused[f.key] = true
			} else {
				out.failed, out.failFence = err, f
			}
			return out
		}
	}
	for range g.merged {
		if _, err := br.Exec(); err != nil {
			out.failed, out.mergeFailed = err, true
			return out
		}
	}
	for i := range g.own {
		for range g.own[i] {
			if _, err := br.Exec(); err != nil {
				out.failed, out.failItem = err, i
				return out
			}
		}
	}
	if _, err := br.Exec(); err != nil { // COMMIT
		out.failed = err
	}
	return out
}

// lost reports whether the failure leaves no batch of the group to
// answer on its own: the connection or the transaction is gone, the
// group's context ended, or the failure has no statement to blame.
func (o *groupOutcome) lost(ctx context.Context) bool {
	return o.failed != nil && (fatal(o.failed) || ctx.Err() != nil || (o.failFence == nil && o.failItem < 0 && !o.mergeFailed))
}

// answer answers the items the outcome decides (refused by their fence,
// failed with theirs, or failed alone) and returns those to write again;
// an item whose new invoice found its address or payment hash taken is
// written again taking them from the older invoices first.
func (o *groupOutcome) answer(items []*groupItem) []*groupItem {
	rest := items[:0:0]
	for i, it := range items {
		switch {
		case it.fence != nil && o.refused[it.fence.key]:
			it.answer(it.fence.refused)
		case o.failFence != nil && it.fence != nil && it.fence.key == o.failFence.key:
			it.answer(fmt.Errorf("%s: %w", it.fence.what, down(o.failed)))
		case i == o.failItem && !it.upsert && keyTaken(o.failed):
			// Written again, alone at fault, taking its address and
			// hash from the older invoices first.
			it.upsert = true
			rest = append(rest, it)
		case i == o.failItem:
			it.answer(stmtError(it.what, o.failed))
		default:
			rest = append(rest, it)
		}
	}
	return rest
}

// keyTaken reports whether err is the violation of a new invoice's
// address or payment hash, which another invoice has (db.go,
// lookupIndexes).
func keyTaken(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && lookupIndexes[pgErr.ConstraintName]
}

// fatal reports whether err leaves the connection unusable or says the
// server cannot be reached.
func fatal(err error) bool {
	return errors.Is(down(err), ErrUnavailable)
}

// retryable reports whether err is a deadlock or serialization failure,
// which aborts a transaction that may well succeed when run again.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// failAll answers every batch of items with err, as the error of their
// commit.
func failAll(items []*groupItem, err error) {
	for _, it := range items {
		it.answer(fmt.Errorf("%s: %w", it.what, down(err)))
	}
}

// stmtError is the error of a batch whose statement failed with err: a
// Conflict when an event's sequence number or a create's request id is
// taken.
func stmtError(what string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		switch pgErr.ConstraintName {
		case "events_pkey", "invoices_pkey", "open_invoices_pkey":
			// The last two: a new invoice's rows (PutInvoice) exist.
			return &seqTaken{err}
		}
	}
	if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "requests_pkey" {
		return &requestDone{err}
	}
	return fmt.Errorf("%s: %w", what, down(err))
}
