package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/proto"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/persistence"
	"github.com/kassapay/kassa/protos"
)

// accountCtx is the context of a dashboard request of owner@example.com
// from 198.51.100.7; keyCtx that of an API request with key k.
func accountCtx(storeID string) context.Context {
	ctx := kassa.WithPrincipal(context.Background(), kassa.MemberPrincipal("owner@example.com", map[string]kassa.Role{storeID: kassa.RoleOwner}))
	return kassa.WithClientAddr(ctx, "198.51.100.7")
}

func keyCtx(storeID string, k kassa.APIKey) context.Context {
	return kassa.WithClientAddr(kassa.WithPrincipal(context.Background(), kassa.KeyPrincipal(storeID, k)), "2001:db8::1")
}

// history returns the store's history, oldest first.
func history(t *testing.T, r kassa.HistoryReader, storeID string, q kassa.HistoryQuery) []*kassa.HistoryLine {
	t.Helper()
	var out []*kassa.HistoryLine
	for {
		next, err := r.History(context.Background(), storeID, q, func(l *kassa.HistoryLine) error {
			out = append([]*kassa.HistoryLine{l}, out...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if next == "" {
			return out
		}
		q.Cursor = next
	}
}

// describe is a line as "action subject detail by kind:id[label]@addr".
func describe(l *kassa.HistoryLine) string {
	return fmt.Sprintf("%s %s %q by %s:%s[%s]@%s", l.Action, l.Subject, l.Detail, l.Actor.Kind, l.Actor.ID, l.Actor.Label, l.Actor.Addr)
}

// TestHistoryLinesOfEachChange: each change of a store's settings, API
// keys (a reveal too), webhooks and refunds writes one line naming who
// made it, by id and label, and from where; the line is keyed by the
// change's event in the store's journal; no line holds a secret; an
// invoice and a top-up write none.
func TestHistoryLinesOfEachChange(t *testing.T) {
	h := newRefundHarness(t)
	id := h.store.ID
	svc := h.sys.Service
	acct := accountCtx(id)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	_, err := svc.UpdateStore(acct, id, kassa.StoreUpdate{Name: "Renamed", Currency: kassa.EUR, ConfirmationsRequired: 1, BrandColor: "#112233"})
	must(err)
	key, err := svc.CreateAPIKey(acct, id, "CI", kassa.PermViewInvoices)
	must(err)
	_, err = svc.RevealAPIKey(acct, id, key.ID, "owner@example.com")
	must(err)
	other, err := svc.CreateAPIKey(acct, id, "Shop")
	must(err)
	kctx := keyCtx(id, *other)
	w, err := svc.CreateWebhook(kctx, id, &kassa.WebhookInput{URL: "https://hooks.example/in?token=s3cret"})
	must(err)
	_, err = svc.UpdateWebhook(kctx, id, w.ID, &kassa.WebhookInput{URL: "https://hooks.example/other"})
	must(err)
	must(svc.DeleteWebhook(kctx, id, w.ID))
	must(svc.DeleteAPIKey(kctx, id, key.ID))

	h.topUp(100_000)
	inv := h.settled("20000")
	pp, err := h.refunds.RefundInvoice(acct, id, inv.ID, kassa.RefundRequest{Choice: kassa.RefundRateThen})
	must(err)
	p1 := h.claim(pp, "1000")
	_, err = h.refunds.Approve(acct, id, p1.ID)
	must(err)
	p2 := h.claim(pp, "1000")
	_, err = h.refunds.Cancel(acct, id, p2.ID)
	must(err)
	p3 := h.claim(pp, "1000")
	_, err = h.refunds.MarkPaid(kctx, id, p3.ID)
	must(err)

	lines := history(t, h.db, id, kassa.HistoryQuery{})
	acctBy := "by account:owner@example.com[]@198.51.100.7"
	keyBy := fmt.Sprintf("by apikey:%s[Shop]@2001:db8::1", other.ID)
	want := []string{
		`settings.changed  "brandColor, name" ` + acctBy,
		fmt.Sprintf(`apikey.created %s "CI (btcpay.store.canviewinvoices)" %s`, key.ID, acctBy),
		fmt.Sprintf(`apikey.revealed %s "CI" %s`, key.ID, acctBy),
		fmt.Sprintf(`apikey.created %s "Shop" %s`, other.ID, acctBy),
		fmt.Sprintf(`webhook.created %s "https://hooks.example/in" %s`, w.ID, keyBy),
		fmt.Sprintf(`webhook.updated %s "https://hooks.example/other" %s`, w.ID, keyBy),
		fmt.Sprintf(`webhook.deleted %s "https://hooks.example/other" %s`, w.ID, keyBy),
		fmt.Sprintf(`apikey.deleted %s "CI" %s`, key.ID, keyBy),
		fmt.Sprintf(`pullpayment.created %s "20000 SATS, invoice %s" %s`, pp.ID, inv.ID, acctBy),
		fmt.Sprintf(`payout.claimed %s "1000 SATS (1000 sat)" by :[]@`, p1.ID),
		fmt.Sprintf(`payout.approved %s "1000 SATS (1000 sat)" %s`, p1.ID, acctBy),
		fmt.Sprintf(`payout.claimed %s "1000 SATS (1000 sat)" by :[]@`, p2.ID),
		fmt.Sprintf(`payout.cancelled %s "1000 SATS (1000 sat)" %s`, p2.ID, acctBy),
		fmt.Sprintf(`payout.claimed %s "1000 SATS (1000 sat)" by :[]@`, p3.ID),
		fmt.Sprintf(`payout.markedpaid %s "1000 SATS (1000 sat)" %s`, p3.ID, keyBy),
	}
	var got []string
	for _, l := range lines {
		got = append(got, describe(l))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("history:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Each line is the one of its event in the store's journal, at the
	// clock's time.
	events := map[uint64]*protos.StoreEvent{}
	err = h.db.Events(context.Background(), kassa.Stream{Kind: kassa.KindStore, ID: id}, 0, func(seq uint64, data []byte) error {
		var ev protos.StoreEvent
		events[seq] = &ev
		return proto.Unmarshal(data, &ev)
	})
	must(err)
	kinds := map[string]string{
		kassa.HistorySettings: "settings_changed", kassa.HistoryAPIKey: "api_key_", kassa.HistoryWebhook: "webhook_", kassa.HistoryRefund: "refunds_changed",
	}
	for _, l := range lines {
		ev := events[l.Seq]
		if ev == nil {
			t.Fatalf("line %s: no event %d in the journal", describe(l), l.Seq)
		}
		name := string(ev.ProtoReflect().WhichOneof(ev.ProtoReflect().Descriptor().Oneofs().ByName("kind")).Name())
		if !strings.HasPrefix(name, kinds[l.Kind]) || !l.At.Equal(time.Unix(0, ev.AtUnixNano)) || l.StoreID != id {
			t.Errorf("line %s at %v is event %d %s at %v", describe(l), l.At, l.Seq, name, time.Unix(0, ev.AtUnixNano))
		}
	}

	all, _ := json.Marshal(lines)
	for _, secret := range []string{key.Key, other.Key, w.Secret, "s3cret"} {
		if strings.Contains(string(all), secret) {
			t.Fatalf("the history holds a secret: %s", all)
		}
	}

	// The filters a page offers.
	if got := history(t, h.db, id, kassa.HistoryQuery{Kind: kassa.HistoryWebhook}); len(got) != 3 {
		t.Errorf("webhook lines: %d, want 3", len(got))
	}
	if got := history(t, h.db, id, kassa.HistoryQuery{Actor: other.ID}); len(got) != 5 {
		t.Errorf("lines of key %s: %d, want 5", other.ID, len(got))
	}
}

// historyFailJournal is the Pebble journal, except that a batch that
// carries a history line fails to commit while failLines is set: the
// write of the line fails. Only the failure is injected.
type historyFailJournal struct {
	*persistence.DB
	failLines bool
}

// lineBatch is a batch of historyFailJournal: the real one, noting
// whether a history line was put.
type lineBatch struct {
	*persistence.Batch
	line bool
}

func (b *lineBatch) PutHistory(l *kassa.HistoryLine) { b.line = true; b.Batch.PutHistory(l) }

var errLineWrite = errors.New("injected: the history line was not written")

func (j *historyFailJournal) NewBatch() kassa.Batch {
	return &lineBatch{Batch: j.DB.NewBatch().(*persistence.Batch)}
}

func (j *historyFailJournal) Commit(ctx context.Context, b kassa.Batch) error {
	lb := b.(*lineBatch)
	if lb.line && j.failLines {
		return errLineWrite
	}
	return j.DB.Commit(ctx, lb.Batch)
}

// lineFaultHarness is a harness over in-memory Pebble with a store made,
// whose journal, while failing is set, fails the write of every change
// (fault "change") or of a history line (fault "line").
type lineFaultHarness struct {
	*harness
	hj      *historyFailJournal
	fault   string
	failing bool
}

func newLineFaultHarness(t *testing.T, fault string, clock *kassatest.TestClock) *lineFaultHarness {
	t.Helper()
	db := openMem(t)
	f := &lineFaultHarness{hj: &historyFailJournal{DB: db}, fault: fault}
	journal := &faultyJournal{Journal: f.hj, commitErr: func() error {
		if f.failing && fault == "change" {
			return errDiskFull
		}
		return nil
	}}
	f.harness = newHarnessWith(t, db, clock, func(c *Config) { c.Journal = journal })
	f.createStore("1", "0")
	return f
}

// fail sets whether the harness's fault is on.
func (f *lineFaultHarness) fail(on bool) {
	f.failing, f.hj.failLines = on, on && f.fault == "line"
}

// TestHistoryLineAndChangeTogether: a change whose write fails leaves no
// line, and a line whose write fails leaves no change: for a settings
// change, an API key, a webhook and a refund. Once the fault is gone,
// each change writes its line.
func TestHistoryLineAndChangeTogether(t *testing.T) {
	for _, fault := range []string{"change", "line"} {
		t.Run(fault, func(t *testing.T) {
			h := newLineFaultHarness(t, fault, kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
			db, id := h.db, h.store.ID
			keys := len(h.store.APIKeys)
			acct := accountCtx(id)
			svc := h.sys.Service
			changes := []struct {
				name    string
				do      func() error
				changed func() bool
			}{
				{"settings", func() error {
					_, err := svc.UpdateStore(acct, id, kassa.StoreUpdate{Name: "Renamed", Currency: kassa.EUR, ConfirmationsRequired: 1})
					return err
				}, func() bool { st, _ := db.Store(context.Background(), id); return st.Name == "Renamed" }},
				{"apikey", func() error {
					_, err := svc.CreateAPIKey(acct, id, "CI")
					return err
				}, func() bool { st, _ := db.Store(context.Background(), id); return len(st.APIKeys) > keys }},
				{"webhook", func() error {
					_, err := svc.CreateWebhook(acct, id, &kassa.WebhookInput{URL: "https://hooks.example/in"})
					return err
				}, func() bool {
					n := 0
					db.Webhooks(context.Background(), id, func(*kassa.Webhook) error { n++; return nil })
					return n > 0
				}},
				{"refund", func() error {
					_, err := svc.ChangeRefunds(acct, id, &kassa.RefundCommand{Create: &kassa.PullPayment{ID: "pp_1", StoreID: id, Currency: kassa.SATS,
						Amount: decimal.NewFromInt(1000), CreatedAt: h.clock.Now().UTC()}})
					return err
				}, func() bool { _, err := db.PullPayment(context.Background(), "pp_1"); return err == nil }},
			}
			for _, c := range changes {
				h.fail(true)
				if err := c.do(); !errors.Is(err, errDiskFull) && !errors.Is(err, errLineWrite) {
					t.Fatalf("%s: a change whose %s is not written: %v", c.name, fault, err)
				}
				if c.changed() {
					t.Fatalf("%s: the change was made though its %s was not written", c.name, fault)
				}
				if lines := history(t, db, id, kassa.HistoryQuery{}); len(lines) != 0 {
					t.Fatalf("%s: %d history lines after a failed %s write", c.name, len(lines), fault)
				}
			}
			h.fail(false)
			for i, c := range changes {
				if err := c.do(); err != nil {
					t.Fatalf("%s after the fault: %v", c.name, err)
				}
				if !c.changed() {
					t.Fatalf("%s: not made after the fault", c.name)
				}
				if lines := history(t, db, id, kassa.HistoryQuery{}); len(lines) != i+1 || lines[i].Kind != c.name {
					t.Fatalf("%s: history after the fault: %d lines", c.name, len(lines))
				}
			}
		})
	}
}

// storeViaOtherNode makes a store through the first of nodes and
// returns it with a node that does not run it, through which a change
// is routed to the one that does.
func storeViaOtherNode(t *testing.T, nodes []*harness) (*kassa.Store, *harness) {
	t.Helper()
	st, err := nodes[0].sys.Service.CreateStore(context.Background(), kassa.StoreSettings{Name: "Shop", Currency: kassa.EUR, ConfirmationsRequired: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if !runsStore(n, st.ID) {
			return st, n
		}
	}
	t.Fatal("every node runs the store")
	return nil, nil
}

// TestClusterHistoryCarriesTheActor: a change sent through a node that
// does not run the store is recorded with the actor and address of the
// request that made it on the first node (the cluster call's envelope).
func TestClusterHistoryCarriesTheActor(t *testing.T) {
	t.Parallel()
	db := openMem(t)
	nodes := clusterNodes(t, 3, db, kassatest.NewTestClock(time.Now()), 15*time.Minute)
	st, via := storeViaOtherNode(t, nodes)
	if _, err := via.sys.Service.UpdateStore(accountCtx(st.ID), st.ID, kassa.StoreUpdate{Name: "Renamed", Currency: kassa.EUR, ConfirmationsRequired: 1}); err != nil {
		t.Fatal(err)
	}
	if runsStore(via, st.ID) {
		t.Fatal("the change ran on the node it was sent to")
	}
	if _, err := via.sys.Service.CreateAPIKey(keyCtx(st.ID, st.APIKeys[0]), st.ID, "plugin"); err != nil {
		t.Fatal(err)
	}
	lines := history(t, db, st.ID, kassa.HistoryQuery{})
	want := []kassa.Actor{
		{Kind: kassa.ActorAccount, ID: "owner@example.com", Addr: "198.51.100.7"},
		{Kind: kassa.ActorAPIKey, ID: st.APIKeys[0].ID, Label: st.APIKeys[0].Label, Addr: "2001:db8::1"},
	}
	if len(lines) != 2 || lines[0].Actor != want[0] || lines[1].Actor != want[1] {
		for _, l := range lines {
			t.Log(describe(l))
		}
		t.Fatalf("%d lines, want the actors %+v", len(lines), want)
	}
}
