package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
	"github.com/kassapay/kassa/protos"
)

// storeActor owns a store's settings and pay links and supervises the
// store's invoice actors. Its state is the store's snapshot; its journal
// is an audit log, one event per command, never replayed
// (docs/decisions.md, "Storage").
type storeActor struct {
	p   *storePorts
	id  string
	st  *kassa.Store
	seq uint64
	// release ends this activation's hold on the store's owned cache.
	release func()

	invoices map[string]*actor.PID
	// stopping holds messages for invoice actors that are passivating;
	// they are delivered to a fresh actor once the old one is gone.
	stopping map[string][]pending
	// reserved holds the fee of each open invoice created since the
	// actor started, so that concurrent creates cannot together pass the
	// credit limit; reservedTotal is their sum. After a restart the
	// reservations of invoices still open are gone, for at most their
	// expiry (docs/decisions.md, "Invoices and money").
	reserved      map[string]kassa.Sats
	reservedTotal kassa.Sats
	// sessions maps a pay-link session to its invoice while it may still
	// be paid, so that a customer who clicks Pay again gets the same
	// invoice. Entries are pruned once expired; after a restart a
	// session gets a new invoice.
	sessions     map[string]sessionEntry
	sessionsNext int // prune when the map reaches this size
	// peaks remember the largest size of each map, to rebuild a map that
	// shrank a lot (Go maps never give memory back).
	peakInvoices, peakStopping, peakReserved, peakSessions int
	// broken, once set, is why the store's snapshot does not load: the
	// actor answers it to every request and changes nothing.
	broken *JournalFault
}

// sessionEntry is the invoice of a pay-link session and its expiry.
// created is the invoice as it was spawned, kept until it is found in
// storage: a click racing the first one's commit is answered with it.
type sessionEntry struct {
	invoiceID string
	expiresAt time.Time
	created   *kassa.Invoice
}

type pending struct {
	msg    *invoiceCommand
	sender *actor.PID
}

// inspectStore runs f in the store actor and answers its result. Only
// tests send it, to count what the actor keeps.
type inspectStore struct {
	f func(*storeActor, actor.Context) any
}

// passivate asks the store to stop an invoice actor that waits for
// nothing; the store then routes new messages to a fresh activation.
type passivate struct{ invoiceID string }

func (a *storeActor) Receive(ctx actor.Context) {
	defer answerPanic(ctx, a.p.log)
	if a.broken != nil {
		switch ctx.Message().(type) {
		case *actor.Stopping, *actor.Stopped, *actor.Restarting, *actor.Terminated:
		default:
			if ctx.Sender() != nil {
				ctx.Respond(reply{err: a.broken})
			}
			return
		}
	}
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		a.id = ctx.Self().Id[len("store/"):]
		a.invoices = map[string]*actor.PID{}
		a.stopping = map[string][]pending{}
		a.reserved = map[string]kassa.Sats{}
		a.sessions = map[string]sessionEntry{}
		// A store that caches what its owner reads (PostgreSQL) does so
		// while this actor runs: it is the store's writer here.
		if o, ok := a.p.reader.(interface{ Own(string) func() }); ok {
			a.release = o.Own(a.id)
		}
		err := a.load(context.Background())
		if f := snapshotFault(kassa.Stream{Kind: kassa.KindStore, ID: a.id}, err); f != nil {
			// Not a crash to retry: a newer Kassa wrote the snapshot.
			a.broken = a.p.faults.record(f)
			return
		}
		if err != nil && kassa.ErrorCode(err) != kassa.NotFound {
			panic(fmt.Sprintf("load store %s: %v", a.id, err))
		}
		if a.st != nil {
			a.p.wakeDue(a.id)
		}
	case *actor.Stopped, *actor.Restarting:
		if a.release != nil {
			a.release()
			a.release = nil
		}
	case crash:
		panic("crash requested")
	case inspectStore:
		ctx.Respond(msg.f(a, ctx))
	case *createStore:
		ctx.Respond(a.create(msg))
	case *spawnInvoice:
		a.spawnInvoice(ctx, msg)
	case *invoiceCommand:
		a.route(ctx, msg, ctx.Sender())
	case *passivate:
		if pid, ok := a.invoices[msg.invoiceID]; ok {
			delete(a.invoices, msg.invoiceID)
			a.invoices = compact(a.invoices, &a.peakInvoices)
			a.stopping[msg.invoiceID] = nil
			a.peakStopping = max(a.peakStopping, len(a.stopping))
			ctx.Poison(pid)
		}
	case *actor.Terminated:
		forgetStoppedChild(ctx)
		id := invoiceIDOf(a.id, msg.Who.Id)
		if queued, ok := a.stopping[id]; ok {
			delete(a.stopping, id)
			a.stopping = compact(a.stopping, &a.peakStopping)
			for _, p := range queued {
				a.route(ctx, p.msg, p.sender)
			}
		} else if pid, ok := a.invoices[id]; ok && pid.Id == msg.Who.Id {
			delete(a.invoices, id)
			a.invoices = compact(a.invoices, &a.peakInvoices)
		}
	case *releaseAddress:
		a.releaseAddress(msg)
	case *feeReleased:
		a.releaseFee(msg.invoiceID)
	case *sessionInvoice:
		sctx, cancel := msg.call.context()
		inv, err := a.sessionInvoice(sctx, msg.key)
		cancel()
		ctx.Respond(reply{value: inv, err: err})
	case *savePaymentRequest:
		ctx.Respond(a.savePaymentRequest(msg))
	case *topUp:
		ctx.Respond(a.topUp(msg))
	case *changeRefunds:
		ctx.Respond(a.changeRefunds(msg))
	case *openInvoice:
		ctx.Respond(a.openInvoice(msg))
	case *changeStore:
		ctx.Respond(a.changeStore(msg))
	case *saveWebhook:
		ctx.Respond(a.saveWebhook(msg))
	case *deleteWebhook:
		ctx.Respond(a.deleteWebhook(msg))
	}
}

// forgetStoppedChild drops the PID of a stopped invoice actor that
// protoactor-go's set of children still holds. It removes a child by
// moving the last one into its place and shortening the slice, so the
// array behind it keeps the removed PID one past the new length, until
// a later spawn overwrites it. A PID caches its process, which holds the
// stopped actor and its invoice: without this, the invoices closed
// after a busy minute would stay in memory (docs/decisions.md, "One
// deadline mechanism; invoice actors passivate"). Children returns that
// slice; it is called on each Terminated, right after protoactor-go
// removed the child, and a slot past the length is never read.
func forgetStoppedChild(ctx actor.Context) {
	if kids := ctx.Children(); len(kids) < cap(kids) {
		kids[:len(kids)+1][len(kids)] = nil
	}
}

func invoiceName(invoiceID string) string { return "inv/" + invoiceID }

func invoiceIDOf(storeID, pid string) string {
	return pid[len("store/"+storeID+"/inv/"):]
}

func (a *storeActor) create(msg *createStore) reply {
	rctx, cancel := msg.call.context()
	defer cancel()
	if a.st != nil {
		return reply{err: kassa.Errorf(kassa.Conflict, "store %s exists", a.id)}
	}
	doc, err := format.Marshal(msg.store)
	if err != nil {
		return reply{err: err}
	}
	ev := &protos.StoreEvent{AtUnixNano: msg.store.CreatedAt.UnixNano(), Kind: &protos.StoreEvent_Created{Created: &protos.StoreCreated{Store: doc}}}
	if err := a.commit(rctx, ev, func(b kassa.Batch, seq uint64) {
		b.PutStore(msg.store, seq)
		putRequest(rctx, b, a.id, kassa.RequestStore, a.id)
	}); err != nil {
		return reply{err: err}
	}
	a.st = msg.store
	return reply{value: msg.store}
}

// load reads the store's snapshot, its state, and resumes after the
// journal's last event without reading the events (an audit log): events that leave the store's document as it was (pay links,
// webhooks) do not rewrite the snapshot, whose sequence number is then
// behind the journal's.
func (a *storeActor) load(ctx context.Context) error {
	st, seq, err := a.p.journal.StoreSnapshot(ctx, a.id)
	if err != nil {
		return err
	}
	last, err := a.p.journal.StreamSeq(ctx, kassa.Stream{Kind: kassa.KindStore, ID: a.id})
	if err != nil {
		return err
	}
	a.st, a.seq = st, max(seq, last)
	return nil
}

// errStoreChanged answers a write that another activation of the store
// beat: the state was reloaded, and the caller may try again.
var errStoreChanged = kassa.Errorf(kassa.Unavailable, "the store changed on another node: try again")

// commit journals ev with the writes of put, as one batch.
func (a *storeActor) commit(ctx context.Context, ev *protos.StoreEvent, put func(kassa.Batch, uint64)) error {
	return a.commitLine(ctx, ev, nil, put)
}

// errNoHistory refuses a change whose history line the journal cannot
// write: the change is not made without its line.
var errNoHistory = errors.New("this storage cannot write a store's history")

// commitLine journals ev with the writes of put and, unless line is nil,
// line as the history's line of the change (stamped with the store, the
// event's sequence number and time, and ctx's actor), as one batch.
func (a *storeActor) commitLine(ctx context.Context, ev *protos.StoreEvent, line *kassa.HistoryLine, put func(kassa.Batch, uint64)) error {
	data, err := marshal(ev)
	if err != nil {
		return err
	}
	seq := a.seq + 1
	b := a.p.journal.NewBatch()
	if line != nil {
		hb, ok := b.(kassa.HistoryBatch)
		if !ok {
			return fmt.Errorf("%w (%T)", errNoHistory, b)
		}
		line.StoreID, line.Seq, line.At = a.id, seq, time.Unix(0, ev.AtUnixNano).UTC()
		if actor := kassa.ActorFrom(ctx); actor.ID != "" || line.Actor.ID == "" {
			line.Actor = actor
		} else {
			line.Actor.Addr = actor.Addr
		}
		hb.PutHistory(line)
	}
	b.AppendEvent(kassa.Stream{Kind: kassa.KindStore, ID: a.id}, seq, data)
	put(b, seq)
	if err := a.p.commit(ctx, b); err != nil {
		if kassa.ErrorCode(err) == kassa.Conflict {
			// Another activation of this store wrote first (a cluster
			// can briefly run two): reload, and let the caller retry
			// against the state now stored.
			a.p.log.Warn("store written by another activation; reloading", "store", a.id, "seq", seq)
			if lerr := a.load(ctx); lerr != nil {
				a.p.log.Warn("reload store", "store", a.id, "err", lerr)
			}
			return errStoreChanged
		}
		return err
	}
	a.seq = seq
	return nil
}

func (a *storeActor) spawnInvoice(ctx actor.Context, msg *spawnInvoice) {
	if a.st == nil {
		ctx.Respond(reply{err: kassa.Errorf(kassa.NotFound, "store not found")})
		return
	}
	if msg.session != "" {
		// Two clicks of one session may race to here; the first one's
		// invoice wins and the second is answered with it. (Only this
		// read needs the call's context: made here, not for every
		// create, as it costs a deadline timer.)
		rctx, cancel := msg.call.context()
		inv, err := a.sessionInvoice(rctx, msg.session)
		cancel()
		if err != nil || inv != nil {
			a.releaseFee(msg.inv.ID)
			ctx.Respond(reply{value: inv, err: err})
			return
		}
	}
	pid, err := ctx.SpawnNamed(a.p.invoiceProps, invoiceName(msg.inv.ID))
	if err != nil {
		a.releaseFee(msg.inv.ID)
		ctx.Respond(reply{err: fmt.Errorf("spawn invoice actor: %w", err)})
		return
	}
	a.invoices[msg.inv.ID] = pid
	a.peakInvoices = max(a.peakInvoices, len(a.invoices))
	if msg.session != "" {
		created := msg.inv
		a.rememberSession(msg.session, sessionEntry{invoiceID: msg.inv.ID, expiresAt: msg.inv.ExpiresAt, created: &created})
	}
	ctx.RequestWithCustomSender(pid, &createInvoice{call: msg.call, inv: msg.inv, effects: msg.effects}, ctx.Sender())
}

// openInvoice takes a new invoice on (see the message). The credit check
// is the store's alone, here in its mailbox, so that concurrent creates
// cannot together pass the limit. The balance changes only by this
// actor's top-ups and by settles, which release their reservation after
// the fee is on the balance; counting a fee twice for a moment errs on
// the safe side.
func (a *storeActor) openInvoice(msg *openInvoice) reply {
	rctx, cancel := msg.call.context()
	defer cancel()
	if a.st == nil {
		return reply{err: kassa.Errorf(kassa.NotFound, "store not found")}
	}
	balance, err := a.p.reader.Balance(rctx, a.id)
	if err != nil {
		return reply{err: err}
	}
	if balance-a.reservedTotal-msg.fee < -a.st.CreditLimit {
		return reply{err: errCreditLimit(balance, a.reservedTotal, msg.fee, a.st.CreditLimit)}
	}
	var index uint32
	if msg.derive {
		if index, err = a.allocateAddress(rctx); err != nil {
			return reply{err: err}
		}
	}
	if msg.fee > 0 {
		a.reserved[msg.invoiceID] = msg.fee
		a.reservedTotal += msg.fee
		a.peakReserved = max(a.peakReserved, len(a.reserved))
	}
	return reply{value: index}
}

// errCreditLimit is the refusal of an invoice whose fee would take the
// store's prepaid balance beyond its credit limit.
func errCreditLimit(balance, reserved, fee, limit kassa.Sats) error {
	return kassa.Errorf(kassa.PaymentRequired,
		"the store's prepaid balance is %d sat, with %d sat reserved for the fees of open invoices; an invoice with a fee of %d sat would pass its credit limit of %d sat: top it up in the dashboard to create invoices",
		balance, reserved, fee, limit)
}

// releaseFee drops the fee reserved for an invoice, if any.
func (a *storeActor) releaseFee(invoiceID string) {
	if fee, ok := a.reserved[invoiceID]; ok {
		delete(a.reserved, invoiceID)
		a.reservedTotal -= fee
		a.reserved = compact(a.reserved, &a.peakReserved)
	}
}

// route delivers msg to its invoice actor, activating it when needed.
func (a *storeActor) route(ctx actor.Context, msg *invoiceCommand, sender *actor.PID) {
	if queued, ok := a.stopping[msg.invoiceID]; ok {
		a.stopping[msg.invoiceID] = append(queued, pending{msg, sender})
		return
	}
	pid, ok := a.invoices[msg.invoiceID]
	if !ok {
		var err error
		pid, err = ctx.SpawnNamed(a.p.invoiceProps, invoiceName(msg.invoiceID))
		if err != nil {
			if sender != nil {
				ctx.Send(sender, reply{err: fmt.Errorf("activate invoice actor: %w", err)})
			}
			return
		}
		a.invoices[msg.invoiceID] = pid
		a.peakInvoices = max(a.peakInvoices, len(a.invoices))
	}
	if msg.event == nil {
		return // activation only
	}
	ev := &tracedEvent{call: msg.call, event: msg.event}
	if sender != nil {
		ctx.RequestWithCustomSender(pid, ev, sender)
	} else {
		ctx.Send(pid, ev)
	}
}

func (a *storeActor) savePaymentRequest(msg *savePaymentRequest) reply {
	rctx, cancel := msg.call.context()
	defer cancel()
	if a.st == nil {
		return reply{err: kassa.Errorf(kassa.NotFound, "store not found")}
	}
	now := a.p.clock.Now().UTC()
	var pr *kassa.PaymentRequest
	if msg.id == "" {
		var err error
		if pr, err = kassa.NewPaymentRequest(kassa.NewID(""), a.st, msg.input, now); err != nil {
			return reply{err: err}
		}
	} else {
		old, err := a.p.reader.PaymentRequest(rctx, msg.id)
		if err != nil {
			return reply{err: err}
		}
		if old.StoreID != a.id {
			return reply{err: kassa.Errorf(kassa.NotFound, "payment request not found")}
		}
		if old.Archived {
			return reply{err: kassa.ErrPaymentRequestArchived}
		}
		pr = old
		if msg.archive {
			pr.Archived = true
			pr.UpdatedAt = now
		} else if err := pr.Update(msg.input, now); err != nil {
			return reply{err: err}
		}
	}
	doc, err := format.Marshal(pr)
	if err != nil {
		return reply{err: err}
	}
	ev := &protos.StoreEvent{AtUnixNano: now.UnixNano(), Kind: &protos.StoreEvent_PaymentRequestSaved{PaymentRequestSaved: &protos.PaymentRequestSaved{PaymentRequest: doc}}}
	if err := a.commit(rctx, ev, func(b kassa.Batch, _ uint64) {
		b.PutPaymentRequest(pr)
		if msg.id == "" {
			putRequest(rctx, b, a.id, kassa.RequestPaymentRequest, pr.ID)
		}
	}); err != nil {
		return reply{err: err}
	}
	return reply{value: pr}
}

func (a *storeActor) topUp(msg *topUp) reply {
	rctx, cancel := msg.call.context()
	defer cancel()
	if a.st == nil {
		return reply{err: kassa.Errorf(kassa.NotFound, "store not found")}
	}
	if tx, ok, err := a.credited(rctx, msg.reference); ok || err != nil {
		return reply{value: tx, err: err}
	}
	now := a.p.clock.Now().UTC()
	line := kassa.TopUpTransaction(a.st, msg.amount, msg.rate, now)
	tx := &line
	next := a.st
	ev := &protos.StoreEvent{AtUnixNano: now.UnixNano(), Kind: &protos.StoreEvent_ToppedUp{ToppedUp: &protos.BalanceToppedUp{AmountSat: int64(msg.amount), Reference: msg.reference}}}
	// The store's snapshot is written with the line, so that the
	// reference is remembered in the same batch (and the snapshot's
	// sequence number stays the journal's).
	err := a.commit(rctx, ev, func(b kassa.Batch, seq uint64) {
		b.PutTransaction(tx)
		putRequest(rctx, b, a.id, kassa.RequestTopUp, strconv.FormatInt(tx.ID, 10))
		if msg.reference != "" {
			next = a.st.WithTopUpRef(msg.reference, tx.ID)
		}
		b.PutStore(next, seq)
	})
	if errors.Is(err, errStoreChanged) {
		// Another activation wrote first and the state was reloaded: it
		// may have credited this very reference.
		if tx, ok, cerr := a.credited(rctx, msg.reference); ok || cerr != nil {
			return reply{value: tx, err: cerr}
		}
	}
	if err != nil {
		return reply{err: err}
	}
	a.st = next
	return reply{value: tx}
}

// credited returns the ledger line of the top-up with reference ref when
// the store already credited it.
func (a *storeActor) credited(ctx context.Context, ref string) (*kassa.Transaction, bool, error) {
	if ref == "" {
		return nil, false, nil
	}
	id, ok := a.st.TopUpRef(ref)
	if !ok {
		return nil, false, nil
	}
	tx, err := a.p.reader.Transaction(ctx, id)
	if err != nil {
		return nil, false, err
	}
	return tx, true, nil
}

func (a *storeActor) saveWebhook(msg *saveWebhook) reply {
	rctx, cancel := msg.call.context()
	defer cancel()
	defer a.p.webhooksChanged(a.id)
	if a.st == nil {
		return reply{err: kassa.Errorf(kassa.NotFound, "store not found")}
	}
	w, err := a.webhookToSave(rctx, msg)
	if err != nil {
		return reply{err: err}
	}
	ev := &protos.StoreEvent{AtUnixNano: w.UpdatedAt.UnixNano(), Kind: &protos.StoreEvent_WebhookSaved{WebhookSaved: &protos.WebhookSaved{Webhook: webhookDoc(w)}}}
	action := kassa.ActionWebhookUpdated
	if msg.create != nil {
		action = kassa.ActionWebhookCreated
	}
	if err := a.commitLine(rctx, ev, webhookLine(action, w), func(b kassa.Batch, _ uint64) {
		b.PutWebhook(w)
		if msg.create != nil {
			putRequest(rctx, b, a.id, kassa.RequestWebhook, w.ID)
		}
	}); err != nil {
		return reply{err: err}
	}
	return reply{value: w}
}

// webhookToSave returns the webhook that msg stores. The store actor
// decides it, so the count of the cap and the webhook an update starts
// from cannot change before the save.
func (a *storeActor) webhookToSave(ctx context.Context, msg *saveWebhook) (*kassa.Webhook, error) {
	if msg.create != nil {
		count := 0
		if err := a.p.reader.Webhooks(ctx, a.id, func(*kassa.Webhook) error { count++; return nil }); err != nil {
			return nil, err
		}
		if count >= kassa.MaxWebhooksPerStore {
			return nil, errWebhookLimit
		}
		return msg.create, nil
	}
	w, err := a.p.reader.Webhook(ctx, msg.id)
	if err != nil {
		return nil, err
	}
	if w.StoreID != a.id {
		return nil, errWebhookNotFound
	}
	return w.Update(msg.update, a.p.clock.Now().UTC()), nil
}

func (a *storeActor) deleteWebhook(msg *deleteWebhook) reply {
	rctx, cancel := msg.call.context()
	defer cancel()
	defer a.p.webhooksChanged(a.id)
	now := a.p.clock.Now()
	ev := &protos.StoreEvent{AtUnixNano: now.UnixNano(), Kind: &protos.StoreEvent_WebhookDeleted{WebhookDeleted: &protos.WebhookDeleted{WebhookId: msg.webhook.ID}}}
	if err := a.commitLine(rctx, ev, webhookLine(kassa.ActionWebhookDeleted, msg.webhook), func(b kassa.Batch, _ uint64) { b.DeleteWebhook(msg.webhook) }); err != nil {
		return reply{err: err}
	}
	return reply{value: msg.webhook}
}

func (a *storeActor) changeStore(msg *changeStore) reply {
	rctx, cancel := msg.call.context()
	defer cancel()
	if a.st == nil {
		return reply{err: kassa.Errorf(kassa.NotFound, "store not found")}
	}
	next, ev, err := msg.change(a.st)
	if err != nil {
		return reply{err: err}
	}
	ev.AtUnixNano = a.p.clock.Now().UnixNano()
	if err := a.commitLine(rctx, ev, storeChangeLine(ev, a.st, next), func(b kassa.Batch, seq uint64) {
		if next != a.st {
			b.PutStore(next, seq)
		}
		if msg.record != nil {
			msg.record(b)
		}
	}); err != nil {
		return reply{err: err}
	}
	a.st = next
	return reply{value: next}
}

// allocateAddress allocates the next xpub derivation index, durably.
func (a *storeActor) allocateAddress(ctx context.Context) (uint32, error) {
	next := *a.st
	index, reused := a.st.NextAddressIndex, false
	if free := a.st.FreeAddressIndexes; len(free) > 0 {
		// The address of an invoice that expired unpaid and is no longer
		// watched: reuse it before deriving a new one (gap limit).
		index, reused = free[0], true
		next.FreeAddressIndexes = append([]uint32(nil), free[1:]...)
	} else {
		next.NextAddressIndex = index + 1
	}
	now := a.p.clock.Now()
	ev := &protos.StoreEvent{AtUnixNano: now.UnixNano(), Kind: &protos.StoreEvent_AddressIndexAllocated{AddressIndexAllocated: &protos.AddressIndexAllocated{Index: index, Reused: reused}}}
	if err := a.commit(ctx, ev, func(b kassa.Batch, seq uint64) { b.PutStore(&next, seq) }); err != nil {
		return 0, err
	}
	a.st = &next
	return index, nil
}

// releaseAddress takes back the derivation index of an invoice that
// expired unpaid once its monitoring ended, so that the next invoice
// reuses its address.
func (a *storeActor) releaseAddress(msg *releaseAddress) {
	if a.st == nil || msg.index >= a.st.NextAddressIndex || slices.Contains(a.st.FreeAddressIndexes, msg.index) {
		return
	}
	next := *a.st
	next.FreeAddressIndexes = append(append([]uint32(nil), a.st.FreeAddressIndexes...), msg.index)
	slices.Sort(next.FreeAddressIndexes)
	now := a.p.clock.Now()
	ev := &protos.StoreEvent{AtUnixNano: now.UnixNano(), Kind: &protos.StoreEvent_AddressIndexReleased{AddressIndexReleased: &protos.AddressIndexReleased{Index: msg.index}}}
	if err := a.commit(context.Background(), ev, func(b kassa.Batch, seq uint64) { b.PutStore(&next, seq) }); err != nil {
		// Not reusing an address is harmless: log and go on.
		a.p.log.Warn("release address index", "store", a.st.ID, "index", msg.index, "err", err)
		return
	}
	a.st = &next
}

// sessionInvoice returns the invoice of a pay-link session while it is
// New and unexpired, or nil.
func (a *storeActor) sessionInvoice(ctx context.Context, key string) (*kassa.Invoice, error) {
	e, ok := a.sessions[key]
	if !ok {
		return nil, nil
	}
	now := a.p.clock.Now()
	if now.Before(e.expiresAt) {
		inv, err := a.p.reader.Invoice(ctx, e.invoiceID)
		_, active := a.invoices[e.invoiceID]
		switch {
		case err == nil && inv.Status == kassa.InvoiceNew:
			if e.created != nil {
				e.created = nil
				a.sessions[key] = e
			}
			return inv, nil
		case err != nil && kassa.ErrorCode(err) != kassa.NotFound:
			return nil, err
		case err != nil && active && e.created != nil:
			// Spawned but not committed yet: the invoice actor's create
			// message is still in its mailbox.
			return e.created, nil
		}
	}
	delete(a.sessions, key)
	a.sessions = compact(a.sessions, &a.peakSessions)
	return nil, nil
}

// rememberSession records the invoice of a pay-link session, pruning the
// expired entries whenever the map has doubled since the last pruning,
// so that sessions that never come back do not pile up.
func (a *storeActor) rememberSession(key string, e sessionEntry) {
	a.sessions[key] = e
	a.peakSessions = max(a.peakSessions, len(a.sessions))
	if len(a.sessions) < max(a.sessionsNext, 1024) {
		return
	}
	now := a.p.clock.Now()
	for k, e := range a.sessions {
		if !now.Before(e.expiresAt) {
			delete(a.sessions, k)
		}
	}
	a.sessions = compact(a.sessions, &a.peakSessions)
	a.sessionsNext = 2 * len(a.sessions)
}

// compact returns m, or a copy of it once it holds less than a quarter
// of its peak size: Go maps never give back the memory of deleted
// entries, and a store's maps would otherwise keep the size of its
// busiest minute. peak is the largest size seen, reset by the copy.
func compact[K comparable, V any](m map[K]V, peak *int) map[K]V {
	const minPeak = 1024
	if *peak < minPeak || len(m) >= *peak/4 {
		return m
	}
	fresh := make(map[K]V, len(m))
	for k, v := range m {
		fresh[k] = v
	}
	*peak = len(m)
	return fresh
}
