package dashboard

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

func TestEscapeCell(t *testing.T) {
	for in, want := range map[string]string{
		"":                        "",
		"plain":                   "plain",
		"=HYPERLINK(\"x\")":       "'=HYPERLINK(\"x\")",
		"+1+1":                    "'+1+1",
		"-2+3":                    "'-2+3",
		"@SUM(A1)":                "'@SUM(A1)",
		"\tcmd":                   "'\tcmd",
		"\rcmd":                   "'\rcmd",
		"-100":                    "-100",
		"-0.5":                    "-0.5",
		"12.50":                   "12.50",
		"a=b":                     "a=b",
		"thanks, \"friend\"\nbye": "thanks, \"friend\"\nbye",
	} {
		if got := escapeCell(in); got != want {
			t.Errorf("escapeCell(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCSVMatchesAPI settles invoices by Lightning and on-chain (with fee
// lines), tops up the balance, and compares every row of the export with
// the API's transactions, field by field (but the global id: the export
// numbers the store's lines from 1, and adds each line's order id); a comment that looks like a
// formula is escaped and the file is RFC 4180.
func TestCSVMatchesAPI(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	st := c.createStore("Shop")
	ctx := t.Context()
	for i, m := range []kassa.PaymentMethod{kassa.MethodLightning, kassa.MethodLightning, kassa.MethodOnchain} {
		inv, err := e.sys.Service.CreateInvoice(ctx, st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(int64(10 + i)), HasAmount: true,
			Currency: kassa.EUR, WalletMessage: "=cmd|' /C calc'!A0"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.sim.Pay(ctx, inv, m, 0); err != nil {
			t.Fatal(err)
		}
		if m == kassa.MethodOnchain {
			e.sim.Mine(ctx, 1)
		}
		waitFor(t, "settled "+inv.ID, func() bool {
			got, err := e.db.Invoice(ctx, inv.ID)
			return err == nil && got.Status == kassa.InvoiceSettled
		})
		e.clock.Advance(time.Minute)
	}
	if _, err := e.sys.Service.TopUp(ctx, st.ID, 50_000, ""); err != nil {
		t.Fatal(err)
	}

	code, apiBody := e.api("GET", "/api/v1/stores/"+st.ID+"/transactions", st.APIKeys[0].Key, nil)
	if code != 200 {
		t.Fatalf("API: %d %s", code, apiBody)
	}
	var api []map[string]any
	dec := json.NewDecoder(strings.NewReader(string(apiBody)))
	dec.UseNumber()
	if err := dec.Decode(&api); err != nil {
		t.Fatal(err)
	}
	if len(api) != 6 { // 3 transfers, 2 fee lines... plus a top-up
		t.Logf("API answered %d transactions", len(api))
	}

	code, body, hdr := c.get("/dashboard/stores/" + st.ID + "/transactions.csv")
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/csv") {
		t.Fatalf("export: %d %v", code, hdr)
	}
	if !strings.Contains(body, "\r\n") {
		t.Error("rows do not end in CRLF")
	}
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatalf("the export is not RFC 4180: %v", err)
	}
	if strings.Join(rows[0], ",") != strings.Join(csvHeader, ",") {
		t.Fatalf("header = %v", rows[0])
	}
	rows = rows[1:]
	if len(rows) != len(api) || len(api) < 6 {
		t.Fatalf("%d rows, API has %d transactions", len(rows), len(api))
	}
	types := map[string]int{}
	for i, row := range rows {
		tx := api[i]
		types[fmt.Sprint(tx["type"])]++
		for j, name := range csvHeader {
			switch name {
			case "number": // the line's number in the store's ledger, newest first
				if want := itoa(int64(len(rows) - i)); row[j] != want {
					t.Errorf("row %d number = %q, want %q", i, row[j], want)
				}
				continue
			case "orderId": // the invoice's (TestCSVOrderID); these have none
				if row[j] != "" {
					t.Errorf("row %d orderId = %q", i, row[j])
				}
				continue
			}
			if name == "createdAtUTC" {
				sec, _ := tx["createdAt"].(json.Number).Int64()
				if want := time.Unix(sec, 0).UTC().Format(time.RFC3339); row[j] != want {
					t.Errorf("row %d createdAtUTC = %q, want %q", i, row[j], want)
				}
				continue
			}
			want, ok := tx[name]
			if !ok {
				t.Fatalf("the API's transaction has no %s", name)
			}
			if w := escapeCell(fmt.Sprint(want)); row[j] != w {
				t.Errorf("row %d %s = %q, API %q", i, name, row[j], w)
			}
		}
	}
	// Every field of the API's but its global id, plus number, orderId
	// and createdAtUTC.
	if len(api[0]) != len(csvHeader)-2 {
		t.Errorf("the API's transaction has %d fields, the export %d columns: %v", len(api[0]), len(csvHeader), api[0])
	}
	if types["transfer"] != 3 || types["fee"] != 3 || types["topup"] != 1 {
		t.Errorf("types = %v", types)
	}
	if !strings.Contains(body, "'=cmd") {
		t.Error("a formula in a comment is not escaped")
	}

	// A date range that ends before every line exports only the header.
	_, body, _ = c.get("/dashboard/stores/" + st.ID + "/transactions.csv?to=2020-01-01")
	if rows, _ := csv.NewReader(strings.NewReader(body)).ReadAll(); len(rows) != 1 {
		t.Errorf("empty range: %d rows", len(rows))
	}
	if code, _, _ := c.get("/dashboard/stores/" + st.ID + "/transactions.csv?from=yesterday"); code != http.StatusBadRequest {
		t.Errorf("bad date: %d", code)
	}
	// The pages show them too.
	for _, p := range []string{"/transactions", "/balance", "/invoices", "/invoices?status=Settled&from=2026-01-01&to=2026-12-31"} {
		if code, body, _ := c.get("/dashboard/stores/" + st.ID + p); code != 200 || missingString.MatchString(body) || !strings.Contains(body, "Settled") {
			t.Errorf("%s: %d %s", p, code, missingString.FindString(body))
		}
	}
}

// missingString matches what msg shows for a key with no string.
var missingString = regexp.MustCompile(`![a-z]+\.[a-z]+`)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	kassatest.WaitFor(t, 10*time.Second, what, cond)
}
