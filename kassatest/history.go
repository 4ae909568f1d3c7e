package kassatest

import (
	"fmt"
	"testing"
	"time"

	"github.com/kassapay/kassa"
)

// HistoryStorage is a store's journal with its history's reader.
type HistoryStorage struct {
	Journal kassa.Journal
	History kassa.HistoryReader
}

// RunHistory runs the contract of kassa.HistoryBatch and
// kassa.HistoryReader against fresh stores made by open.
func RunHistory(t *testing.T, open func(t *testing.T) HistoryStorage) {
	cases := []struct {
		name string
		fn   func(t *testing.T, s HistoryStorage)
	}{
		{"NewestFirstAndPaged", historyNewestFirstAndPaged},
		{"Filters", historyFilters},
		{"BatchIsAtomic", historyBatchIsAtomic},
		{"BadCursor", historyBadCursor},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, open(t))
		})
	}
}

// historyLine is line seq of store "s1", a minute after the one before.
func historyLine(seq uint64, kind, actor string) *kassa.HistoryLine {
	return &kassa.HistoryLine{StoreID: "s1", Seq: seq, At: Epoch.Add(time.Duration(seq) * time.Minute), Kind: kind,
		Action: kind + ".changed", Subject: fmt.Sprintf("x%d", seq), Actor: kassa.Actor{Kind: kassa.ActorAccount, ID: actor, Addr: "192.0.2.1"}}
}

func putHistory(t *testing.T, j kassa.Journal, lines ...*kassa.HistoryLine) {
	t.Helper()
	Commit(t, j, func(b kassa.Batch) {
		for _, l := range lines {
			b.AppendEvent(kassa.Stream{Kind: kassa.KindStore, ID: l.StoreID}, l.Seq, []byte("ev"))
			hb, ok := b.(kassa.HistoryBatch)
			if !ok {
				t.Fatalf("%T is no HistoryBatch", b)
			}
			hb.PutHistory(l)
		}
	})
}

// readHistory reads every page of q and returns the lines' sequence
// numbers and the number of pages.
func readHistory(t *testing.T, r kassa.HistoryReader, store string, q kassa.HistoryQuery) (seqs []uint64, pages int) {
	t.Helper()
	for {
		next, err := r.History(t.Context(), store, q, func(l *kassa.HistoryLine) error {
			seqs = append(seqs, l.Seq)
			return nil
		})
		if err != nil {
			t.Fatalf("history %+v: %v", q, err)
		}
		pages++
		if next == "" {
			return seqs, pages
		}
		q.Cursor = next
		if pages > 100 {
			t.Fatal("the history does not end")
		}
	}
}

func historyNewestFirstAndPaged(t *testing.T, s HistoryStorage) {
	var lines []*kassa.HistoryLine
	for seq := uint64(1); seq <= 7; seq++ {
		lines = append(lines, historyLine(seq, kassa.HistorySettings, "a@example.com"))
	}
	putHistory(t, s.Journal, lines...)
	other := historyLine(1, kassa.HistorySettings, "a@example.com")
	other.StoreID = "s10"
	putHistory(t, s.Journal, other)

	var got []*kassa.HistoryLine
	if _, err := s.History.History(t.Context(), "s1", kassa.HistoryQuery{Limit: 1}, func(l *kassa.HistoryLine) error { got = append(got, l); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || *got[0] != *lines[6] {
		t.Fatalf("the newest line = %+v, want %+v", got, lines[6])
	}
	seqs, pages := readHistory(t, s.History, "s1", kassa.HistoryQuery{Limit: 3})
	if fmt.Sprint(seqs) != "[7 6 5 4 3 2 1]" || pages != 3 {
		t.Fatalf("pages of 3: %v in %d pages", seqs, pages)
	}
	if seqs, _ := readHistory(t, s.History, "nope", kassa.HistoryQuery{}); len(seqs) != 0 {
		t.Fatalf("a store without history: %v", seqs)
	}
}

func historyFilters(t *testing.T, s HistoryStorage) {
	putHistory(t, s.Journal,
		historyLine(1, kassa.HistorySettings, "a@example.com"),
		historyLine(2, kassa.HistoryAPIKey, "b@example.com"),
		historyLine(3, kassa.HistoryAPIKey, "a@example.com"),
		historyLine(4, kassa.HistoryWebhook, "key_1"),
		historyLine(5, kassa.HistoryAPIKey, "a@example.com"),
	)
	for _, c := range []struct {
		q    kassa.HistoryQuery
		want string
	}{
		{kassa.HistoryQuery{Kind: kassa.HistoryAPIKey}, "[5 3 2]"},
		{kassa.HistoryQuery{Actor: "a@example.com"}, "[5 3 1]"},
		{kassa.HistoryQuery{Kind: kassa.HistoryAPIKey, Actor: "a@example.com", Limit: 1}, "[5 3]"},
		{kassa.HistoryQuery{From: Epoch.Add(2 * time.Minute), To: Epoch.Add(4 * time.Minute)}, "[3 2]"},
		{kassa.HistoryQuery{Kind: kassa.HistoryRefund}, "[]"},
	} {
		if seqs, _ := readHistory(t, s.History, "s1", c.q); fmt.Sprint(seqs) != c.want {
			t.Errorf("%+v: %v, want %s", c.q, seqs, c.want)
		}
	}
}

// historyBatchIsAtomic: a batch whose commit fails (its request id is
// recorded already) writes no line.
func historyBatchIsAtomic(t *testing.T, s HistoryStorage) {
	rec := kassa.RequestRecord{StoreID: "s1", ID: "req_1", Kind: kassa.RequestWebhook, ResultID: "w1", At: Epoch}
	Commit(t, s.Journal, func(b kassa.Batch) {
		b.AppendEvent(kassa.Stream{Kind: kassa.KindStore, ID: "s1"}, 1, []byte("ev"))
		b.(kassa.HistoryBatch).PutHistory(historyLine(1, kassa.HistoryWebhook, "a@example.com"))
		b.(kassa.RequestBatch).PutRequest(rec)
	})
	b := s.Journal.NewBatch()
	b.AppendEvent(kassa.Stream{Kind: kassa.KindStore, ID: "s1"}, 2, []byte("ev"))
	b.(kassa.HistoryBatch).PutHistory(historyLine(2, kassa.HistoryWebhook, "a@example.com"))
	b.(kassa.RequestBatch).PutRequest(rec)
	if err := s.Journal.Commit(t.Context(), b); err == nil {
		t.Fatal("a batch recording a request id twice committed")
	}
	if seqs, _ := readHistory(t, s.History, "s1", kassa.HistoryQuery{}); fmt.Sprint(seqs) != "[1]" {
		t.Fatalf("after a failed commit: %v, want [1]", seqs)
	}
}

func historyBadCursor(t *testing.T, s HistoryStorage) {
	_, err := s.History.History(t.Context(), "s1", kassa.HistoryQuery{Cursor: "!!"}, func(*kassa.HistoryLine) error { return nil })
	if kassa.ErrorCode(err) != kassa.Invalid {
		t.Fatalf("a malformed cursor: %v", err)
	}
}
