package kassatest

import (
	"testing"

	"github.com/kassapay/kassa"
)

// TopUpLines returns the store's top-up ledger lines, as r lists them;
// a failure to list fails t.
func TopUpLines(t testing.TB, r kassa.Reader, storeID string) []*kassa.Transaction {
	t.Helper()
	var lines []*kassa.Transaction
	_, err := r.Transactions(t.Context(), storeID, kassa.ListQuery{}, func(tx *kassa.Transaction) error {
		if tx.Type == kassa.TransactionTopUp {
			lines = append(lines, tx)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lines
}
