package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/apitest"
	"github.com/kassapay/kassa/kassatest/harness"
)

// binPath is the kassa binary that the end-to-end tests start; binDir
// holds it, and the other builds of the run (crashpointBin).
var binPath, binDir string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// The fast tier: no binary, no store server; the tests that
		// need them skip (needBinary).
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "kassa-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	if binPath, err = harness.BuildKassa(dir, raceEnabled); err != nil {
		fmt.Fprintln(os.Stderr, "build kassa:", err)
		os.Exit(1)
	}
	if err := startE2EStore(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	stopE2EStore()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needBinary skips t under -short (`make test-short`), where TestMain
// builds no binary; `make test` runs it.
func needBinary(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the built kassa binary: skipped under -short (make test runs it)")
	}
}

// server is a running kassa process (harness.Kassa) with what the
// end-to-end tests add: its stdout, and its cluster peers.
type server struct {
	k    *harness.Kassa
	t    *testing.T
	cmd  *exec.Cmd
	url  string
	data string
	done <-chan struct{}

	// nodeFlags are the store and cluster flags the server was started
	// with (see e2eStoreArgs), which a restart on its data reuses.
	nodeFlags []string

	mu     sync.Mutex
	peers  []*server // the other nodes with KASSA_E2E_STORE=cluster
	stdout bytes.Buffer
}

// stdoutWriter collects what the server prints on stdout.
type stdoutWriter struct{ s *server }

func (w stdoutWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.s.stdout.Write(p)
}

// Stdout returns what the server printed on stdout so far.
func (s *server) Stdout() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stdout.String()
}

// startServer starts `kassa serve` on a free loopback port with data in
// dir and waits until it listens. With KASSA_E2E_STORE=cluster the server
// is the first node of a three-node cluster (see startPeers).
func startServer(t *testing.T, dir string, extra ...string) *server {
	t.Helper()
	needBinary(t)
	flags := e2eStoreArgs(t, dir)
	s := launchServer(t, dir, append(flags, extra...)...)
	s.nodeFlags = flags
	startPeers(t, s, dir, extra...)
	return s
}

// launchServer starts `kassa serve` with data in dir and the given flags
// and waits until it listens.
func launchServer(t *testing.T, dir string, flags ...string) *server {
	t.Helper()
	return launchProcess(t, harness.KassaProcess{Bin: binPath, Dir: dir}, flags...)
}

// launchProcess starts p (its binary, data directory and environment)
// with flags as launchServer does.
func launchProcess(t *testing.T, p harness.KassaProcess, flags ...string) *server {
	t.Helper()
	needBinary(t)
	dir := p.Dir
	s := &server{t: t, data: dir}
	if !slices.Contains(flags, "--dev") && !slices.Contains(flags, "--chain") && !slices.Contains(flags, "--lightning") {
		// Outside --dev the simulation runs only when named; a test that
		// pays through the simulation routes passes --dev.
		flags = append(slices.Clip(flags), "--chain", "sim", "--lightning", "sim")
	}
	if !slices.Contains(flags, "--log-level") {
		// events reads every invoice event from the log, and New is
		// logged at debug.
		flags = append(slices.Clip(flags), "--log-level", "debug")
	}
	p.Args, p.Stdout, p.Managed = flags, stdoutWriter{s}, true
	s.k = p.Start(t)
	s.cmd, s.url, s.done = s.k.Cmd(), s.k.URL, s.k.Done()
	t.Cleanup(func() {
		s.Stop()
		// KASSA_DUMP_LOGS=DIR keeps every server's whole log, passed
		// or failed, as DIR/HOST_PORT.log (to read a cluster run's
		// timeline).
		if d := os.Getenv("KASSA_DUMP_LOGS"); d != "" {
			_ = os.WriteFile(filepath.Join(d, strings.ReplaceAll(strings.TrimPrefix(s.url, "http://"), ":", "_")+".log"), []byte(s.ownLogs()), 0o644)
		}
		harness.LogTailIfFailed(t, "server log", s.Logs(), 20000)
	})
	return s
}

// Logs returns what the server (and its cluster peers) wrote to stderr
// so far.
func (s *server) Logs() string {
	out := s.ownLogs()
	for _, p := range s.peerList() {
		out += p.ownLogs()
	}
	return out
}

// ownLogs returns what this process alone wrote to stderr so far.
func (s *server) ownLogs() string { return s.k.Logs() }

// Stop ends the server (and its cluster peers) gracefully. Several
// servers may share peers (a restarted node's are its cluster's other
// nodes): each process is stopped once.
func (s *server) Stop() {
	var wg sync.WaitGroup
	for _, p := range s.peerList() {
		wg.Add(1)
		go func() { defer wg.Done(); p.stopProcess() }()
	}
	wg.Wait()
	s.stopProcess()
}

// stopProcess ends this process alone gracefully.
func (s *server) stopProcess() { s.k.Stop() }

// Kill ends the server (and its cluster peers) with SIGKILL, as a crash
// would.
func (s *server) Kill() {
	for _, p := range s.peerList() {
		p.Kill()
	}
	s.k.Kill()
}

// cli runs a kassa admin command against the server and returns stdout.
func (s *server) cli(args ...string) (string, error) { return s.k.CLI(args...) }

func (s *server) mustCLI(args ...string) string {
	s.t.Helper()
	out, err := s.cli(args...)
	if err != nil {
		s.t.Fatalf("kassa %s: %v", strings.Join(args, " "), err)
	}
	return out
}

type storeCreds struct {
	StoreID string `json:"storeId"`
	APIKey  string `json:"apiKey"`
}

func (s *server) createStore(args ...string) storeCreds {
	s.t.Helper()
	out := s.mustCLI(append([]string{"store", "create"}, args...)...)
	var c storeCreds
	if err := json.Unmarshal([]byte(out), &c); err != nil || c.StoreID == "" || c.APIKey == "" {
		s.t.Fatalf("store create printed %q: %v", out, err)
	}
	return c
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// do sends a request with key (empty: none) and returns status and body.
func (s *server) do(method, path, key string, body any) (int, []byte, http.Header) {
	s.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.url+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	res, err := apitest.Do(s.t, httpClient, req) // checked against the OpenAPI document
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return res.StatusCode, data, res.Header
}

// json sends a request that must answer want and decodes the body.
func (s *server) json(method, path, key string, body any, want int) map[string]any {
	s.t.Helper()
	status, data, _ := s.do(method, path, key, body)
	if status != want {
		s.t.Fatalf("%s %s = %d, want %d: %s", method, path, status, want, data)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		s.t.Fatalf("%s %s: %v: %s", method, path, err, data)
	}
	return m
}

func (s *server) list(path, key string) []map[string]any {
	s.t.Helper()
	status, data, _ := s.do("GET", path, key, nil)
	if status != 200 {
		s.t.Fatalf("GET %s = %d: %s", path, status, data)
	}
	var out []map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		s.t.Fatalf("GET %s: %v: %s", path, err, data)
	}
	return out
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	kassatest.WaitFor(t, timeout, what, cond)
}

var eventLine = regexp.MustCompile(`msg="invoice event" invoice=(\S+) store=\S+ type=(\S+) additionalStatus=(\S+)`)

// events returns the webhook events the server logged for an invoice, in
// order, as "Type:AdditionalStatus".
func (s *server) events(invoiceID string) []string {
	var out []string
	for _, m := range eventLine.FindAllStringSubmatch(s.Logs(), -1) {
		if m[1] == invoiceID {
			out = append(out, m[2]+":"+m[3])
		}
	}
	return out
}

// waitEvents waits until the server logged at least n webhook events for
// an invoice and returns them as fmt.Sprint prints them. The log line
// follows the commit that the API already shows, so it may come a moment
// after the invoice's new status.
func (s *server) waitEvents(invoiceID string, n int) string {
	s.t.Helper()
	waitFor(s.t, 30*time.Second, fmt.Sprintf("%d events of invoice %s in the log", n, invoiceID), func() bool {
		return len(s.events(invoiceID)) >= n
	})
	return fmt.Sprint(s.events(invoiceID))
}

// step runs one named step of a long scenario. It logs the step's name
// first, so that a failure's output (the only test output make's report
// shows) names the step it happened in; the step runs on the scenario's
// t, as the servers' helpers do, and a failure in it ends the scenario.
func step(t *testing.T, name string, f func()) {
	t.Helper()
	t.Logf("step: %s", name)
	f()
}
