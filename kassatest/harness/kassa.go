package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kassapay/kassa/kassatest"
)

var (
	kassaOnce sync.Once
	kassaBin  string
	kassaErr  error
)

// KassaBin builds the kassa binary once per test process.
func KassaBin(t T) string {
	t.Helper()
	kassaOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kassa-itest")
		if err != nil {
			kassaErr = err
			return
		}
		kassaBin, kassaErr = BuildKassa(dir, false)
	})
	if kassaErr != nil {
		t.Fatalf("cannot build kassa: %v", kassaErr)
	}
	return kassaBin
}

var (
	crashpointOnce sync.Once
	crashpointBin  string
	crashpointErr  error
)

// CrashpointKassaBin builds the kassa binary with crash points
// (BuildCrashpointKassa) once per test process.
func CrashpointKassaBin(t T) string {
	t.Helper()
	crashpointOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kassa-itest-crashpoints")
		if err != nil {
			crashpointErr = err
			return
		}
		crashpointBin, crashpointErr = BuildCrashpointKassa(dir, false)
	})
	if crashpointErr != nil {
		t.Fatalf("cannot build kassa with crash points: %v", crashpointErr)
	}
	return crashpointBin
}

// BuildKassa builds ./cmd/kassa into dir, with the race detector when
// race, and returns the binary's path. The compiler's output is in the
// error.
func BuildKassa(dir string, race bool) (string, error) {
	return buildKassa(filepath.Join(dir, "kassa"), race)
}

// BuildCrashpointKassa builds ./cmd/kassa with the build tag crashpoints
// into dir, as BuildKassa does: a binary that dies of SIGKILL at the
// point its environment's KASSA_TEST_CRASHPOINT names
// (internal/crashpoint; KassaProcess.Env sets it).
func BuildCrashpointKassa(dir string, race bool) (string, error) {
	return buildKassa(filepath.Join(dir, "kassa-crashpoints"), race, "-tags", "crashpoints")
}

func buildKassa(bin string, race bool, flags ...string) (string, error) {
	args := append([]string{"build", "-o", bin}, flags...)
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./cmd/kassa")...)
	cmd.Dir = repoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/kassa: %v\n%s", err, out)
	}
	return bin, nil
}

// Kassa is a running `kassa serve` process.
type Kassa struct {
	t    T
	bin  string
	Data string
	Args []string
	URL  string

	cmd      *exec.Cmd
	mu       sync.Mutex
	logs     bytes.Buffer
	done     <-chan struct{}
	stopOnce sync.Once
}

// lockedWriter writes to b under mu.
type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// StartKassa starts `kassa serve --dev` with data in dir (empty: a new
// temporary one) and args, and waits until it listens. It is stopped
// when the test ends.
func StartKassa(t T, dir string, args ...string) *Kassa {
	t.Helper()
	return KassaProcess{Dir: dir, Args: append([]string{"--dev"}, args...)}.Start(t)
}

// KassaProcess is how to start a `kassa serve`: what StartKassa fills in
// for the itests, and what cmd/kassa's end-to-end tests set themselves.
type KassaProcess struct {
	Bin    string    // the binary; empty: KassaBin's
	Dir    string    // the data directory; empty: a new temporary one
	Args   []string  // serve's flags after --data, --listen, --rate-limit 0 and --log-level debug
	Stdout io.Writer // what it prints; nil: discarded
	Env    []string  // NAME=value variables added to the environment
	// Managed leaves stopping the process and printing its log on
	// failure to the caller (which runs a cluster of them); otherwise
	// the test's cleanup does both.
	Managed bool
}

// Start starts the process and waits until it listens.
func (p KassaProcess) Start(t T) *Kassa {
	t.Helper()
	SkipShort(t, "the built kassa binary")
	if p.Dir == "" {
		p.Dir = t.TempDir()
	}
	if p.Bin == "" {
		p.Bin = KassaBin(t)
	}
	k := &Kassa{t: t, bin: p.Bin, Data: p.Dir}
	k.Args = append([]string{"serve", "--data", p.Dir, "--listen", "127.0.0.1:0", "--rate-limit", "0", "--log-level", "debug"}, p.Args...)
	k.cmd = exec.Command(p.Bin, k.Args...)
	// A race-built binary sleeps a second before exiting unless told
	// not to.
	k.cmd.Env = append(append(os.Environ(), "GORACE=atexit_sleep_ms=0"), p.Env...)
	k.cmd.Stdout = p.Stdout
	if p.Stdout == nil {
		k.cmd.Stdout = io.Discard
	}
	addr, done, err := StartServe(k.cmd, lockedWriter{&k.mu, &k.logs}, 60*time.Second)
	k.done = done
	if err != nil {
		t.Fatalf("kassa: %v:\n%s", err, k.Logs())
	}
	k.URL = "http://" + addr
	if !p.Managed {
		t.Cleanup(func() {
			k.Stop()
			LogTailIfFailed(t, "kassa log", k.Logs(), 30000)
		})
	}
	return k
}

// Logs returns what kassa wrote to stderr so far.
func (k *Kassa) Logs() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.logs.String()
}

// Pid is the kassa process's id.
func (k *Kassa) Pid() int { return k.cmd.Process.Pid }

// Cmd is the kassa process, to signal it (SIGSTOP) or wait for its exit.
func (k *Kassa) Cmd() *exec.Cmd { return k.cmd }

// Done is closed when the process has exited.
func (k *Kassa) Done() <-chan struct{} { return k.done }

// Stop ends kassa gracefully, once however often it is called.
func (k *Kassa) Stop() {
	k.stopOnce.Do(func() {
		if k.cmd.ProcessState != nil {
			return
		}
		_ = k.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-k.done:
		case <-time.After(20 * time.Second):
			_ = k.cmd.Process.Kill()
		}
		_ = k.cmd.Wait()
	})
}

// Kill ends kassa with SIGKILL, as a crash would.
func (k *Kassa) Kill() {
	_ = k.cmd.Process.Kill()
	<-k.done
	_ = k.cmd.Wait()
}

// CLI runs a kassa admin command against the server and returns stdout.
func (k *Kassa) CLI(args ...string) (string, error) {
	cmd := exec.Command(k.bin, append(args, "--server", k.URL, "--data", k.Data)...)
	// A race-built binary sleeps a second before exiting unless told
	// not to; tests call the CLI hundreds of times.
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%v: %s", err, errb.String())
	}
	return out.String(), nil
}

// Store is a store's id and API key.
type Store struct {
	StoreID string `json:"storeId"`
	APIKey  string `json:"apiKey"`
}

// CreateStore runs `kassa store create` with args.
func (k *Kassa) CreateStore(args ...string) Store {
	k.t.Helper()
	out, err := k.CLI(append([]string{"store", "create"}, args...)...)
	if err != nil {
		k.t.Fatalf("kassa store create: %v", err)
	}
	var s Store
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.StoreID == "" {
		k.t.Fatalf("store create printed %q: %v", out, err)
	}
	return s
}

var client = &http.Client{Timeout: 30 * time.Second}

// Do sends a JSON request with API key key and decodes the answer into
// out (when not nil). It returns the status code.
func (k *Kassa) Do(method, path, key string, body, out any) int {
	k.t.Helper()
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			k.t.Fatalf("%v", err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, k.URL+path, r)
	if err != nil {
		k.t.Fatalf("%v", err)
	}
	if key != "" {
		req.Header.Set("Authorization", "token "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		k.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if out != nil && res.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			k.t.Fatalf("%s %s: decode %q: %v", method, path, data, err)
		}
	}
	if res.StatusCode >= 300 && out != nil {
		k.t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, data)
	}
	return res.StatusCode
}

// Invoice is the part of an invoice record the tests read.
type Invoice struct {
	ID               string `json:"id"`
	Status           string `json:"status"`
	AdditionalStatus string `json:"additionalStatus"`
	Amount           int64  `json:"amount"`
	TotalPaid        int64  `json:"totalPaid"`
	OnchainAddress   string `json:"onchainAddress"`
	DerivationIndex  *int64 `json:"derivationIndex"`
}

// Payment is an invoice payment record.
type Payment struct {
	TransactionID string `json:"transactionId"`
	Amount        int64  `json:"amount"`
	NetworkFee    int64  `json:"networkFee"`
	FeeRate       int64  `json:"feeRate"`
	Destination   string `json:"destination"`
	ReplacedByFee bool   `json:"replacedByFee"`
	Status        string `json:"status"`
	Confirmations int32  `json:"confirmations"`
	BlockHeight   int64  `json:"blockHeight"`
}

// CreateInvoice creates an on-chain invoice of sats.
func (k *Kassa) CreateInvoice(s Store, sats int64) Invoice {
	k.t.Helper()
	var inv Invoice
	k.Do("POST", "/api/v1/stores/"+s.StoreID+"/invoices", s.APIKey, map[string]any{
		"amount": sats, "currency": "SATS", "enabledPaymentMethods": []string{"BTC"},
	}, &inv)
	if inv.OnchainAddress == "" {
		k.t.Fatalf("invoice %s has no on-chain address", inv.ID)
	}
	return inv
}

// Invoice reads an invoice.
func (k *Kassa) Invoice(s Store, id string) Invoice {
	k.t.Helper()
	var inv Invoice
	k.Do("GET", "/api/v1/stores/"+s.StoreID+"/invoices/"+id, s.APIKey, nil, &inv)
	return inv
}

// Payments reads an invoice's payment records.
func (k *Kassa) Payments(s Store, id string) []Payment {
	k.t.Helper()
	var ps []Payment
	k.Do("GET", "/api/v1/stores/"+s.StoreID+"/invoices/"+id+"/payments", s.APIKey, nil, &ps)
	return ps
}

// Health is the chain part of the health check.
type Health struct {
	Chain struct {
		Backend    string `json:"backend"`
		Network    string `json:"network"`
		Node       string `json:"node"`
		Height     int64  `json:"height"`
		NodeHeight int64  `json:"nodeHeight"`
		BestHash   string `json:"bestHash"`
		Synced     bool   `json:"synced"`
		Lag        int64  `json:"lag"`
		Error      string `json:"error"`
		Warning    string `json:"warning"`
	} `json:"chain"`
}

// Health reads the health check with the admin token: the public answer
// leaves out errors, warnings and node details.
func (k *Kassa) Health() Health {
	k.t.Helper()
	var h Health
	k.AdminGet("/api/v1/health", &h)
	return h
}

// AdminToken is the server's admin token.
func (k *Kassa) AdminToken() string {
	k.t.Helper()
	token, err := os.ReadFile(filepath.Join(k.Data, "admin.token"))
	if err != nil {
		k.t.Fatalf("admin token: %v", err)
	}
	return strings.TrimSpace(string(token))
}

// AdminGet reads path with the admin token into out.
func (k *Kassa) AdminGet(path string, out any) {
	k.t.Helper()
	req, err := http.NewRequest("GET", k.URL+path, nil)
	if err != nil {
		k.t.Fatalf("%v", err)
	}
	req.Header.Set("Authorization", "Bearer "+k.AdminToken())
	res, err := client.Do(req)
	if err != nil {
		k.t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		k.t.Fatalf("GET %s: %v", path, err)
	}
}

// WaitStatus waits until the invoice has status (and additional status,
// when not empty) and returns it.
func (k *Kassa) WaitStatus(s Store, id, status, additional string) Invoice {
	k.t.Helper()
	var inv Invoice
	kassatest.Eventually(k.t, 60*time.Second, "invoice "+id+" "+status+" "+additional, func() error {
		inv = k.Invoice(s, id)
		if inv.Status != status || additional != "" && inv.AdditionalStatus != additional {
			return fmt.Errorf("invoice is %s %s", inv.Status, inv.AdditionalStatus)
		}
		return nil
	})
	return inv
}

// Event is a webhook event as received.
type Event struct {
	Type             string `json:"type"`
	InvoiceID        string `json:"invoiceId"`
	AdditionalStatus string `json:"additionalStatus"`
	At               time.Time
}

// Webhooks receives a store's webhook events on loopback.
type Webhooks struct {
	t      T
	srv    *httptest.Server
	mu     sync.Mutex
	events []Event
	notify chan struct{}
}

// ListenWebhooks registers a webhook for every event of s with a new
// receiver and returns it.
func (k *Kassa) ListenWebhooks(s Store) *Webhooks {
	k.t.Helper()
	w := &Webhooks{t: k.t, notify: make(chan struct{}, 1)}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var ev Event
		data, _ := io.ReadAll(r.Body)
		if json.Unmarshal(data, &ev) == nil {
			ev.At = time.Now()
			w.mu.Lock()
			w.events = append(w.events, ev)
			w.mu.Unlock()
			select {
			case w.notify <- struct{}{}:
			default:
			}
		}
		rw.WriteHeader(http.StatusOK)
	}))
	k.t.Cleanup(w.srv.Close)
	var created map[string]any
	k.Do("POST", "/api/v1/stores/"+s.StoreID+"/webhooks", s.APIKey, map[string]any{"url": w.srv.URL + "/hook"}, &created)
	return w
}

// Events returns the events of invoice id so far, as "Type" or
// "Type/AdditionalStatus" when it is not None.
func (w *Webhooks) Events(id string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, ev := range w.events {
		if ev.InvoiceID != id {
			continue
		}
		s := strings.TrimPrefix(ev.Type, "Invoice")
		if ev.AdditionalStatus != "" && ev.AdditionalStatus != "None" {
			s += "/" + ev.AdditionalStatus
		}
		out = append(out, s)
	}
	return out
}

// Wait waits for an event of type typ for invoice id and returns it.
func (w *Webhooks) Wait(id, typ string) Event {
	w.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		w.mu.Lock()
		for _, ev := range w.events {
			if ev.InvoiceID == id && strings.TrimPrefix(ev.Type, "Invoice") == typ {
				w.mu.Unlock()
				return ev
			}
		}
		w.mu.Unlock()
		select {
		case <-w.notify:
		case <-deadline:
			w.t.Fatalf("no %s webhook for invoice %s; got %v", typ, id, w.Events(id))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
