package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// postJSON sends a JSON POST with headers and returns status and body; it
// never fails the test, so that goroutines may use it.
func postJSON(url string, headers map[string]string, body any) (int, []byte, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequest("POST", url, bytes.NewReader(data))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	return res.StatusCode, out, err
}

// adminTokenOf reads a data directory's admin token.
func adminTokenOf(t *testing.T, data string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// serviceState is every invoice and transaction of a store, and the
// store, as the API answers them.
type serviceState struct {
	Store        map[string]any
	Invoices     map[string]map[string]any
	Transactions map[string]map[string]any
}

func readState(s *server, c storeCreds) serviceState {
	s.t.Helper()
	st := serviceState{
		Store:        s.json("GET", "/api/v1/stores/"+c.StoreID, c.APIKey, nil, 200),
		Invoices:     map[string]map[string]any{},
		Transactions: map[string]map[string]any{},
	}
	for _, inv := range s.list("/api/v1/stores/"+c.StoreID+"/invoices", c.APIKey) {
		st.Invoices[inv["id"].(string)] = inv
	}
	for _, tx := range s.list("/api/v1/stores/"+c.StoreID+"/transactions", c.APIKey) {
		st.Transactions[fmt.Sprint(tx["id"])] = tx
	}
	return st
}

// TestBackupRestore runs the binary, creates invoices and pays some, takes
// one backup while a load creates and pays more, and one after it, stops,
// restores each into a new data directory and starts on it:
//   - the backup taken after the load gives back every invoice,
//     transaction and the store exactly as the API answered them;
//   - the backup taken under load is a consistent cut: every invoice
//     created before it began, each restored record one the original
//     served, every settled invoice with its transfer line and no line
//     without its invoice; and the restored service takes new payments.
//
// Restore also refuses a non-empty data directory and a damaged backup.
// On a PostgreSQL store kassa backup refuses and writes nothing.
func TestBackupRestore(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	pub := []string{"--dev", "--public-url", "http://kassa.test"} // --dev: the sim routes pay
	s := startServer(t, filepath.Join(work, "data"), pub...)
	if e2eOnPostgres() {
		step(t, "PostgreSQL store: kassa backup refuses and writes nothing", func() { backupRefusedOnPostgres(t, s, work) })
		t.Log("PostgreSQL store: kassa backup refuses, as documented; the Pebble backup and restore run without KASSA_E2E_STORE")
		return
	}
	c := s.createStore("--name", "Backup Shop")
	b := &backupScenario{t: t, work: work, pub: pub, s: s, c: c, base: "/api/v1/stores/" + c.StoreID}

	step(t, "create 12 invoices, pay 8 and settle them", b.createAndPay)
	step(t, "start a load that creates and pays invoices without pause", b.startLoad)
	step(t, "back up under the load, then stop the load", b.backupUnderLoad)
	step(t, "back up once the load is over; a backup never overwrites", b.backupAfter)
	step(t, "restore refuses a non-empty data directory and a damaged backup", b.restoreRefusals)
	step(t, "the quiet backup gives back everything exactly", b.restoreQuiet)
	step(t, "the backup under load is a consistent cut", b.restoreUnderLoad)
	step(t, "the restored service goes on: a new invoice is paid and settles", b.restoredGoesOn)
}

// backupRefusedOnPostgres: a PostgreSQL store is backed up with
// PostgreSQL's own tools (docs/operators.md): kassa backup says so and
// writes nothing.
func backupRefusedOnPostgres(t *testing.T, s *server, work string) {
	dir := filepath.Join(work, "backup")
	out, err := s.cli("backup", dir)
	if err == nil || !strings.Contains(err.Error(), "backups are not available on this server") {
		t.Fatalf("kassa backup on a PostgreSQL store = %v: %s; want the refusal", err, out)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused backup left %s behind (%v)", dir, err)
	}
}

// backupScenario is TestBackupRestore's state: the original server and
// its store, the load, the two backups, the state the original served
// last, and the server restored from the backup under load.
type backupScenario struct {
	t    *testing.T
	work string
	pub  []string
	s    *server
	c    storeCreds
	base string

	before []string // the invoices created before the backups

	rounds  atomic.Int64 // the load's rounds, each a create and a payment
	stop    chan struct{}
	loadErr chan error
	wg      sync.WaitGroup

	underLoad, after string       // the two backups
	final            serviceState // what the original served last
	r1               *server      // restored from the backup under load
}

func (b *backupScenario) createAndPay() {
	t, s, c := b.t, b.s, b.c
	for i := range 12 {
		id := createInvoice(t, s, c, map[string]any{"amount": "10.00", "currency": "EUR"})
		b.before = append(b.before, id)
		switch i % 3 {
		case 0:
			s.mustCLI("sim", "pay", id, "--method", "lightning")
		case 1:
			s.mustCLI("sim", "pay", id, "--method", "onchain")
		}
	}
	s.mustCLI("sim", "mine", "1")
	waitFor(t, 30*time.Second, "the 8 paid invoices to settle", func() bool {
		settled := 0
		for _, inv := range s.list(b.base+"/invoices", c.APIKey) {
			if inv["status"] == "Settled" {
				settled++
			}
		}
		return settled == 8
	})
}

// startLoad starts the load: invoices created and paid over Lightning,
// without pause, until b.stop closes; it returns once 5 rounds are done.
func (b *backupScenario) startLoad() {
	s, base := b.s, b.base
	admin := map[string]string{"Authorization": "Bearer " + adminTokenOf(b.t, s.data)}
	key := map[string]string{"x-api-key": b.c.APIKey}
	b.stop = make(chan struct{})
	b.loadErr = make(chan error, 1)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			select {
			case <-b.stop:
				b.loadErr <- nil
				return
			default:
			}
			status, body, err := postJSON(s.url+base+"/invoices", key, map[string]any{"amount": "5.00", "currency": "EUR"})
			if err != nil || status != 200 {
				b.loadErr <- fmt.Errorf("load: create invoice = %d %v: %s", status, err, body)
				return
			}
			var inv struct{ ID string }
			json.Unmarshal(body, &inv)
			status, body, err = postJSON(s.url+"/admin/v1/sim/pay", admin, map[string]any{"invoiceId": inv.ID, "method": "lightning"})
			if err != nil || status/100 != 2 {
				b.loadErr <- fmt.Errorf("load: pay = %d %v: %s", status, err, body)
				return
			}
			b.rounds.Add(1)
		}
	}()
	waitFor(b.t, 30*time.Second, "the load to run", func() bool { return b.rounds.Load() >= 5 })
}

// backupUnderLoad takes a backup while the load runs, lets the load go
// on after it, stops the load and fails on the load's error.
func (b *backupScenario) backupUnderLoad() {
	t := b.t
	b.underLoad = filepath.Join(b.work, "backup-under-load")
	startRounds := b.rounds.Load()
	out := b.s.mustCLI("backup", b.underLoad)
	var summary struct {
		Dir   string
		Files int
		Bytes int64
	}
	if err := json.Unmarshal([]byte(out), &summary); err != nil || summary.Dir != b.underLoad || summary.Files < 3 {
		t.Fatalf("kassa backup printed %q (%v)", out, err)
	}
	waitFor(t, 30*time.Second, "the load to go on after the backup", func() bool { return b.rounds.Load() > startRounds+3 })
	close(b.stop)
	b.wg.Wait()
	if err := <-b.loadErr; err != nil {
		t.Fatal(err)
	}
	t.Logf("backup under load: %d files, %d bytes, %d load rounds during and after it", summary.Files, summary.Bytes, b.rounds.Load()-startRounds)
}

// backupAfter takes a second backup once every load invoice is settled,
// checks that a backup never overwrites, reads the state the server
// serves last, and stops the server.
func (b *backupScenario) backupAfter() {
	s := b.s
	waitFor(b.t, 30*time.Second, "every load invoice to settle", func() bool {
		for _, inv := range s.list(b.base+"/invoices", b.c.APIKey) {
			if inv["status"] != "Settled" && inv["status"] != "New" {
				return false
			}
		}
		return true
	})
	b.after = filepath.Join(b.work, "backup-after")
	s.mustCLI("backup", b.after)
	if _, err := s.cli("backup", b.after); err == nil || !strings.Contains(err.Error(), "not empty") {
		b.t.Errorf("a backup into a non-empty directory: %v", err)
	}
	b.final = readState(s, b.c)
	s.Stop()
}

func (b *backupScenario) restoreRefusals() {
	t, work := b.t, b.work
	if _, stderr, code := runBinary(t, "restore", b.after, "--data", b.s.data); code == 0 || !strings.Contains(stderr, "not empty") {
		t.Errorf("restore over the live data directory exited %d: %s", code, stderr)
	}
	damaged := filepath.Join(work, "damaged")
	copyTree(t, b.after, damaged)
	if err := os.WriteFile(filepath.Join(damaged, "admin.token"), []byte("tampered\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runBinary(t, "restore", damaged, "--data", filepath.Join(work, "from-damaged")); code == 0 || !strings.Contains(stderr, "admin.token is damaged") {
		t.Errorf("restore of a damaged backup exited %d: %s", code, stderr)
	}
}

// restoreQuiet restores the backup taken after the load, starts on it,
// and compares the store, invoices and transactions with the last state
// the original served.
func (b *backupScenario) restoreQuiet() {
	t, final := b.t, b.final
	restoredAfter := filepath.Join(b.work, "restored-after")
	if _, stderr, code := runBinary(t, "restore", b.after, "--data", restoredAfter); code != 0 {
		t.Fatalf("restore exited %d: %s", code, stderr)
	}
	r2 := startServer(t, restoredAfter, b.pub...)
	got := readState(r2, b.c)
	if !reflect.DeepEqual(got.Store, final.Store) {
		t.Errorf("restored store:\n%v\nwant:\n%v", got.Store, final.Store)
	}
	compareRecords(t, "invoice", got.Invoices, final.Invoices, true)
	compareRecords(t, "transaction", got.Transactions, final.Transactions, true)
	t.Logf("restored %d invoices and %d transactions exactly", len(got.Invoices), len(got.Transactions))
	r2.Stop()
}

// restoreUnderLoad restores the backup taken under load, starts on it,
// and checks that it is a consistent cut: every invoice created before
// the backups is in it, every record is one the original served (a
// settled invoice equal to it), every transaction belongs to a settled
// invoice, and every settled invoice has its transfer line.
func (b *backupScenario) restoreUnderLoad() {
	t, final := b.t, b.final
	restoredLoad := filepath.Join(b.work, "restored-under-load")
	if _, stderr, code := runBinary(t, "restore", b.underLoad, "--data", restoredLoad); code != 0 {
		t.Fatalf("restore exited %d: %s", code, stderr)
	}
	b.r1 = startServer(t, restoredLoad, b.pub...)
	cut := readState(b.r1, b.c)
	for _, id := range b.before {
		if cut.Invoices[id] == nil {
			t.Errorf("invoice %s, created before the backup, is not in it", id)
		}
	}
	for id, inv := range cut.Invoices {
		orig := final.Invoices[id]
		switch {
		case orig == nil:
			t.Errorf("restored invoice %s was never served", id)
		case inv["status"] == "Settled" && !reflect.DeepEqual(inv, orig):
			t.Errorf("restored settled invoice %s:\n%v\nwant:\n%v", id, inv, orig)
		case inv["status"] != "Settled" && inv["status"] != "New":
			t.Errorf("restored invoice %s is %v", id, inv["status"])
		}
	}
	compareRecords(t, "transaction", cut.Transactions, final.Transactions, false)
	transfers := map[string]bool{}
	for id, tx := range cut.Transactions {
		inv, _ := tx["invoiceId"].(string)
		if inv == "" {
			continue
		}
		if cut.Invoices[inv] == nil || cut.Invoices[inv]["status"] != "Settled" {
			t.Errorf("restored transaction %s belongs to invoice %s, which is not settled in the backup", id, inv)
		}
		if tx["type"] == "transfer" {
			transfers[inv] = true
		}
	}
	for id, inv := range cut.Invoices {
		if inv["status"] == "Settled" && !transfers[id] {
			t.Errorf("restored settled invoice %s has no transfer line", id)
		}
	}
	t.Logf("backup under load: %d of %d invoices, %d of %d transactions", len(cut.Invoices), len(final.Invoices), len(cut.Transactions), len(final.Transactions))
}

func (b *backupScenario) restoredGoesOn() {
	r1, c := b.r1, b.c
	id := createInvoice(b.t, r1, c, map[string]any{"amount": "3.00", "currency": "EUR"})
	r1.mustCLI("sim", "pay", id, "--method", "lightning")
	waitFor(b.t, 30*time.Second, "a new invoice on the restored service to settle", func() bool {
		return r1.json("GET", b.base+"/invoices/"+id, c.APIKey, nil, 200)["status"] == "Settled"
	})
}

// compareRecords compares records by id: all equal when exact, else got
// must be a subset of want with equal records.
func compareRecords(t *testing.T, what string, got, want map[string]map[string]any, exact bool) {
	t.Helper()
	if exact && len(got) != len(want) {
		t.Errorf("%d %ss restored, want %d", len(got), what, len(want))
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			if exact {
				t.Errorf("%s %s is missing", what, id)
			}
			continue
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("restored %s %s:\n%v\nwant:\n%v", what, id, g, w)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("restored %s %s was never served", what, id)
		}
	}
}

// copyTree copies a directory of regular files.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}
