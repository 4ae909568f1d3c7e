package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa/kassatest/harness"
)

// TestDebugListenerFreesOSMemoryOnlyInDev checks the debug listener's
// POST /debug/free-os-memory, which kassa-bench calls before it reads
// the resident set: there with --dev (and only as a POST), absent
// without it, where the listener serves pprof alone.
func TestDebugListenerFreesOSMemoryOnlyInDev(t *testing.T) {
	for _, dev := range []bool{true, false} {
		debugAddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
		flags := []string{"--debug-listen", debugAddr}
		if dev {
			flags = append(flags, "--dev")
		}
		startServer(t, t.TempDir(), flags...)
		base := "http://" + debugAddr
		// Positive control: the listener is up and serves pprof.
		deadline := time.Now().Add(30 * time.Second)
		for {
			res, err := http.Get(base + "/debug/pprof/")
			if err == nil {
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					t.Fatalf("dev %v: pprof index: %s", dev, res.Status)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("dev %v: debug listener did not answer: %v", dev, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		res, err := http.Post(base+"/debug/free-os-memory", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if want := map[bool]int{true: http.StatusNoContent, false: http.StatusNotFound}[dev]; res.StatusCode != want {
			t.Fatalf("dev %v: POST free-os-memory: %d, want %d", dev, res.StatusCode, want)
		}
		if dev {
			res, err := http.Get(base + "/debug/free-os-memory")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusMethodNotAllowed {
				t.Fatalf("GET free-os-memory: %d, want 405", res.StatusCode)
			}
		}
	}
}

// TestDebugHandlerCapsSeconds asks every pprof handler that takes a
// seconds parameter (the CPU profile, the trace, and the delta profiles
// of the others) for more than maxDebugSeconds, in every spelling the
// handlers read (a form body, a multipart body, '+', an exponent, a hex
// float, the larger value second): each is refused at once with 400.
// Positive control: a short profile and a short trace are served.
func TestDebugHandlerCapsSeconds(t *testing.T) {
	srv := httptest.NewServer(debugHandler(false))
	defer srv.Close()
	client := &http.Client{Timeout: 10 * time.Second}
	do := func(req *http.Request) (int, string) {
		t.Helper()
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v (a request over the cap must be refused at once)", req.Method, req.URL, err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<10))
		return res.StatusCode, string(body)
	}
	get := func(path string) *http.Request {
		req, err := http.NewRequest("GET", srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	for _, path := range []string{
		"/debug/pprof/profile?seconds=100000",
		"/debug/pprof/profile?seconds=31",
		"/debug/pprof/profile?seconds=%2B100000",
		"/debug/pprof/profile?seconds=1&seconds=100000",
		"/debug/pprof/trace?seconds=100000",
		"/debug/pprof/trace?seconds=30.5",
		"/debug/pprof/trace?seconds=1e5",
		"/debug/pprof/trace?seconds=0x1p20",
		"/debug/pprof/trace?seconds=Inf",
		"/debug/pprof/trace?seconds=NaN",
		"/debug/pprof/heap?seconds=100000",
		"/debug/pprof/allocs?seconds=31",
		"/debug/pprof/block?seconds=31",
		"/debug/pprof/mutex?seconds=31",
		"/debug/pprof/goroutine?seconds=31",
		"/debug/pprof/threadcreate?seconds=31",
	} {
		if code, body := do(get(path)); code != http.StatusBadRequest || !strings.Contains(body, "at most 30") {
			t.Errorf("GET %s: %d %q, want 400 naming the cap", path, code, body)
		}
	}
	// The handlers read the seconds of a form body too.
	form, err := http.NewRequest("POST", srv.URL+"/debug/pprof/trace", strings.NewReader("seconds=100000"))
	if err != nil {
		t.Fatal(err)
	}
	form.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if code, _ := do(form); code != http.StatusBadRequest && code != http.StatusMethodNotAllowed {
		t.Errorf("POST trace with seconds=100000 in the body: %d, want 400 or 405", code)
	}
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	if err := mw.WriteField("seconds", "100000"); err != nil {
		t.Fatal(err)
	}
	mw.Close()
	req, err := http.NewRequest("GET", srv.URL+"/debug/pprof/trace", &mp)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if code, body := do(req); code != http.StatusBadRequest {
		t.Errorf("GET trace with seconds=100000 in a multipart body: %d %q, want 400", code, body)
	}

	for _, path := range []string{"/debug/pprof/profile?seconds=1", "/debug/pprof/trace?seconds=0.2", "/debug/pprof/heap", "/debug/pprof/"} {
		if code, body := do(get(path)); code != http.StatusOK {
			t.Errorf("GET %s: %d %q, want 200", path, code, body)
		}
	}
}

// TestLoopbackDebugAddr checks the addresses --debug-listen takes without
// --debug-listen-allow-public: loopback only, a name only when every
// address it resolves to is loopback (and then the checked address is
// the one bound). The resolver is a map here, so that the test does not
// depend on the machine's DNS.
func TestLoopbackDebugAddr(t *testing.T) {
	names := map[string][]string{
		"localhost":      {"127.0.0.1", "::1"},
		"v6.localhost":   {"::1"},
		"pprof.example":  {"203.0.113.7"},
		"split.example":  {"127.0.0.1", "10.0.0.5"},
		"mapped.example": {"::ffff:127.0.0.1"},
	}
	lookup := func(_ context.Context, _, host string) ([]netip.Addr, error) {
		addrs, ok := names[host]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		var out []netip.Addr
		for _, a := range addrs {
			out = append(out, netip.MustParseAddr(a))
		}
		return out, nil
	}
	for addr, want := range map[string]string{
		"127.0.0.1:6060":          "127.0.0.1:6060",
		"127.3.4.5:6060":          "127.3.4.5:6060",
		"[::1]:6060":              "[::1]:6060",
		"[::ffff:127.0.0.1]:6060": "[::ffff:127.0.0.1]:6060",
		"localhost:6060":          "127.0.0.1:6060",
		"v6.localhost:6060":       "[::1]:6060",
		"mapped.example:6060":     "127.0.0.1:6060",
	} {
		got, err := loopbackAddr(context.Background(), addr, lookup)
		if err != nil || got != want {
			t.Errorf("loopbackAddr(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	for addr, says := range map[string]string{
		":6060":                   "every interface",
		"0.0.0.0:6060":            "every interface",
		"[::]:6060":               "every interface",
		"[::ffff:0.0.0.0]:6060":   "every interface",
		"192.0.2.10:6060":         "not a loopback address",
		"[2001:db8::1]:6060":      "not a loopback address",
		"[fe80::1%eth0]:6060":     "not a loopback address",
		"pprof.example:6060":      "resolves to 203.0.113.7",
		"split.example:6060":      "resolves to 127.0.0.1, 10.0.0.5",
		"nowhere.example:6060":    "no such host",
		"127.0.0.1":               "HOST:PORT",
		"[::1]:6060:extra":        "HOST:PORT",
		"pprof.example.:6060:bad": "HOST:PORT",
	} {
		got, err := loopbackAddr(context.Background(), addr, lookup)
		if err == nil || !strings.Contains(err.Error(), says) || !strings.Contains(err.Error(), "--debug-listen-allow-public") {
			t.Errorf("loopbackAddr(%q) = %q, %v; want an error saying %q and naming --debug-listen-allow-public", addr, got, err, says)
		}
	}
}

// TestConfigRefusesPublicDebugListen loads a configuration whose
// --debug-listen is not loopback: refused with the key and where it came
// from, unless --debug-listen-allow-public (or its variable) says so.
func TestConfigRefusesPublicDebugListen(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "[::]:6060", "192.0.2.10:6060"} {
		clearKassaEnv(t)
		_, _, err := loadTest(t, "--debug-listen", addr)
		if err == nil || !strings.Contains(err.Error(), "debug-listen:") || !strings.Contains(err.Error(), "(from --debug-listen)") ||
			!strings.Contains(err.Error(), "--debug-listen-allow-public") {
			t.Errorf("--debug-listen %s: %v, want refused naming --debug-listen-allow-public", addr, err)
		}
		if _, _, err := loadTest(t, "--debug-listen", addr, "--debug-listen-allow-public"); err != nil {
			t.Errorf("--debug-listen %s --debug-listen-allow-public: %v", addr, err)
		}
		t.Setenv("KASSA_DEBUG_LISTEN_ALLOW_PUBLIC", "true")
		if _, _, err := loadTest(t, "--debug-listen", addr); err != nil {
			t.Errorf("--debug-listen %s with KASSA_DEBUG_LISTEN_ALLOW_PUBLIC=true: %v", addr, err)
		}
	}
	clearKassaEnv(t)
	if _, _, err := loadTest(t, "--debug-listen", "127.0.0.1:6060"); err != nil {
		t.Errorf("--debug-listen 127.0.0.1:6060: %v", err)
	}
}

// TestServeRefusesPublicDebugListen starts the binary with a debug
// address on every interface: it exits 1 at once, saying why and which
// flag forces it, and nothing listens there; with
// --debug-listen-allow-public it starts, logs a warning and serves pprof.
func TestServeRefusesPublicDebugListen(t *testing.T) {
	port := harness.FreePort(t)
	debugAddr := fmt.Sprintf("0.0.0.0:%d", port)
	data := filepath.Join(t.TempDir(), "data")
	_, stderr, code := runBinary(t, "serve", "--data", data, "--chain", "sim", "--lightning", "sim", "--debug-listen", debugAddr)
	if code != 1 || !strings.Contains(stderr, "debug-listen") || !strings.Contains(stderr, "--debug-listen-allow-public") {
		t.Fatalf("serve --debug-listen %s exited %d: %s", debugAddr, code, stderr)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("serve refused its debug address after creating its data directory (%v)", err)
	}

	s := startServer(t, t.TempDir(), "--debug-listen", debugAddr, "--debug-listen-allow-public")
	res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/", port))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("pprof index with --debug-listen-allow-public: %s", res.Status)
	}
	if logs := s.Logs(); !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "debug listener reachable beyond loopback") {
		t.Errorf("no warning for the public debug listener in the log:\n%s", logs)
	}
}

// TestConfigRefusesPublicMetricsListen: /metrics has no authentication,
// so --metrics-listen takes loopback and private addresses (a scrape
// from the operator's network) and refuses every interface or a public
// address unless --metrics-listen-allow-public says so.
func TestConfigRefusesPublicMetricsListen(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:9464", ":9464", "[::]:9464", "192.0.2.10:9464", "[2001:db8::1]:9464"} {
		clearKassaEnv(t)
		_, _, err := loadTest(t, "--metrics-listen", addr)
		if err == nil || !strings.Contains(err.Error(), "metrics-listen:") || !strings.Contains(err.Error(), "--metrics-listen-allow-public") {
			t.Errorf("--metrics-listen %s: %v, want refused naming --metrics-listen-allow-public", addr, err)
		}
		if _, _, err := loadTest(t, "--metrics-listen", addr, "--metrics-listen-allow-public"); err != nil {
			t.Errorf("--metrics-listen %s --metrics-listen-allow-public: %v", addr, err)
		}
		t.Setenv("KASSA_METRICS_LISTEN_ALLOW_PUBLIC", "true")
		if _, _, err := loadTest(t, "--metrics-listen", addr); err != nil {
			t.Errorf("--metrics-listen %s with KASSA_METRICS_LISTEN_ALLOW_PUBLIC=true: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:9464", "[::1]:9464", "10.1.2.3:9464", "172.16.0.9:9464", "192.168.1.5:9464", "[fd00::5]:9464"} {
		clearKassaEnv(t)
		if _, _, err := loadTest(t, "--metrics-listen", addr); err != nil {
			t.Errorf("--metrics-listen %s: %v, want accepted", addr, err)
		}
	}
}
