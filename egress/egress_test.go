package egress

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// fakeResolver answers from a table and counts look-ups.
type fakeResolver struct {
	mu    sync.Mutex
	addrs map[string][]string
	errs  map[string]error
	calls map[string]int
}

var _ Resolver = (*fakeResolver)(nil)

func newFakeResolver() *fakeResolver {
	return &fakeResolver{addrs: map[string][]string{}, errs: map[string]error{}, calls: map[string]int{}}
}

func (r *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[host]++
	if err, ok := r.errs[host]; ok {
		return nil, err
	}
	texts, ok := r.addrs[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var ips []netip.Addr
	for _, t := range texts {
		ips = append(ips, netip.MustParseAddr(t))
	}
	return ips, nil
}

func (r *fakeResolver) Calls(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[host]
}

// recorder is a test server that counts requests and keeps the last one.
type recorder struct {
	srv    *httptest.Server
	hits   atomic.Int32
	mu     sync.Mutex
	req    *http.Request
	body   []byte
	status int
	answer []byte
}

func newRecorder(t *testing.T, status int) *recorder {
	t.Helper()
	rec := &recorder{status: status}
	rec.srv = httptest.NewServer(http.HandlerFunc(rec.serve))
	t.Cleanup(rec.srv.Close)
	return rec
}

func newTLSRecorder(t *testing.T, status int) *recorder {
	t.Helper()
	rec := &recorder{status: status}
	rec.srv = httptest.NewUnstartedServer(http.HandlerFunc(rec.serve))
	rec.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	rec.srv.StartTLS()
	t.Cleanup(rec.srv.Close)
	return rec
}

func (rec *recorder) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.req, rec.body = r, body
	rec.mu.Unlock()
	rec.hits.Add(1)
	w.WriteHeader(rec.status)
	w.Write(rec.answer)
}

func (rec *recorder) last() (*http.Request, []byte) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.req, rec.body
}

// port returns the port of the server's address.
func (rec *recorder) port() string {
	u, _ := url.Parse(rec.srv.URL)
	return u.Port()
}

// newHangingServer answers nothing until the client gives up.
func newHangingServer(t *testing.T) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() {
		close(release)
		srv.Close()
	})
	return srv
}

func devClient(cfg Config) *Client {
	cfg.AllowPrivate = true
	return New(cfg)
}

// trust makes c accept the certificate of srv.
func trust(c *Client, srv *httptest.Server) {
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	c.transport.TLSClientConfig.RootCAs = pool
}

// closedPort returns a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func wantInvalid(t *testing.T, err error, message string) {
	t.Helper()
	if err == nil {
		t.Fatalf("error = nil, want %q", message)
	}
	if code := kassa.ErrorCode(err); code != kassa.Invalid {
		t.Errorf("code of %v = %q, want %q", err, code, kassa.Invalid)
	}
	if got := kassa.ErrorMessage(err); got != message {
		t.Errorf("message = %q, want %q", got, message)
	}
}

func TestDefaults(t *testing.T) {
	if DefaultTimeout != 5*time.Second {
		t.Errorf("DefaultTimeout = %s, want 5s", DefaultTimeout)
	}
	cfg := DefaultConfig()
	if cfg.Timeout != 5*time.Second || !cfg.RequireHTTPS || cfg.AllowPrivate {
		t.Errorf("DefaultConfig() = %+v, want 5s, https only, public only", cfg)
	}
	c := New(Config{})
	if c.timeout != 5*time.Second {
		t.Errorf("New(Config{}) timeout = %s, want 5s", c.timeout)
	}
	if c.resolver != net.DefaultResolver {
		t.Errorf("New(Config{}) resolver = %v, want net.DefaultResolver", c.resolver)
	}
	if c.userAgent != DefaultUserAgent {
		t.Errorf("New(Config{}) user agent = %q", c.userAgent)
	}
	if c.transport.Proxy != nil {
		t.Error("transport uses a proxy")
	}
}

func TestValidatePasses(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 30, 45, 123, time.UTC)
	for _, status := range []int{200, 201, 202, 204, 299, 401, 403} {
		rec := newRecorder(t, status)
		c := devClient(Config{Clock: kassatest.NewTestClock(at), UserAgent: "kassa-test"})
		a, err := c.Validate(context.Background(), rec.srv.URL+"/hooks?x=1", "Kassa Test")
		if err != nil {
			t.Errorf("status %d: Validate = %v, want nil", status, err)
			continue
		}
		if a.StatusCode != status || a.Err != "" || a.OK != (status < 300) {
			t.Errorf("status %d: attempt = %+v", status, a)
		}
		if rec.hits.Load() != 1 {
			t.Errorf("status %d: %d requests, want 1", status, rec.hits.Load())
		}
		req, body := rec.last()
		if req.Method != http.MethodPost || req.URL.Path != "/hooks" || req.URL.RawQuery != "x=1" {
			t.Errorf("request = %s %s", req.Method, req.URL)
		}
		if ct := req.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q", ct)
		}
		if ua := req.Header.Get("User-Agent"); ua != "kassa-test" {
			t.Errorf("User-Agent = %q", ua)
		}
		for name := range req.Header {
			if strings.HasPrefix(strings.ToLower(name), "x-service-sig") {
				t.Errorf("validation request carries %s", name)
			}
		}
		var v ValidationRequest
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("body %s: %v", body, err)
		}
		want := ValidationRequest{App: "Kassa Test", Message: ValidationMessage, Purpose: "webhook_url_validation", Timestamp: "2026-03-01T12:30:45Z"}
		if v != want {
			t.Errorf("body = %+v, want %+v", v, want)
		}
	}
}

func TestValidateDefaultAppName(t *testing.T) {
	rec := newRecorder(t, 200)
	if _, err := devClient(Config{}).Validate(context.Background(), rec.srv.URL, ""); err != nil {
		t.Fatal(err)
	}
	_, body := rec.last()
	var v ValidationRequest
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	if v.App != DefaultAppName {
		t.Errorf("app = %q, want %q", v.App, DefaultAppName)
	}
	if _, err := time.Parse(time.RFC3339, v.Timestamp); err != nil {
		t.Errorf("timestamp %q: %v", v.Timestamp, err)
	}
}

func TestValidateRefusesStatus(t *testing.T) {
	tests := []struct {
		status int
		want   string
	}{
		{404, "webhook URL answered 404 Not Found; it must answer with a 2xx status, 401 or 403"},
		{500, "webhook URL answered 500 Internal Server Error; it must answer with a 2xx status, 401 or 403"},
		{502, "webhook URL answered 502 Bad Gateway; it must answer with a 2xx status, 401 or 403"},
		{503, "webhook URL answered 503 Service Unavailable; it must answer with a 2xx status, 401 or 403"},
		{400, "webhook URL answered 400 Bad Request; it must answer with a 2xx status, 401 or 403"},
		{405, "webhook URL answered 405 Method Not Allowed; it must answer with a 2xx status, 401 or 403"},
		{418, "webhook URL answered 418 I'm a teapot; it must answer with a 2xx status, 401 or 403"},
		{599, "webhook URL answered 599; it must answer with a 2xx status, 401 or 403"},
	}
	for _, tt := range tests {
		rec := newRecorder(t, tt.status)
		a, err := devClient(Config{}).Validate(context.Background(), rec.srv.URL, "Kassa")
		wantInvalid(t, err, tt.want)
		if a.StatusCode != tt.status || a.OK || a.Err != tt.want {
			t.Errorf("status %d: attempt = %+v", tt.status, a)
		}
		if rec.hits.Load() != 1 {
			t.Errorf("status %d: %d requests, want exactly 1", tt.status, rec.hits.Load())
		}
	}
}

func TestValidateDoesNotFollowRedirects(t *testing.T) {
	target := newRecorder(t, 200)
	for _, status := range []int{301, 302, 307, 308} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.srv.URL+"/final", status)
		}))
		_, err := devClient(Config{}).Validate(context.Background(), srv.URL, "Kassa")
		srv.Close()
		wantInvalid(t, err, "webhook URL answered "+statusText(status)+"; redirects are not followed, register the final URL")
	}
	if n := target.hits.Load(); n != 0 {
		t.Errorf("redirect target got %d requests", n)
	}
}

func TestValidateTimeout(t *testing.T) {
	srv := newHangingServer(t)
	c := devClient(Config{Timeout: 100 * time.Millisecond})
	start := time.Now()
	a, err := c.Validate(context.Background(), srv.URL, "Kassa")
	wantInvalid(t, err, "webhook URL did not answer within 100ms")
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("Validate took %s with a 100ms timeout", elapsed)
	}
	// The attempt's clock starts after the request's deadline is set, so
	// its Duration may read a little under the timeout: only check that
	// the wait was recorded.
	if a.StatusCode != 0 || a.Duration <= 0 {
		t.Errorf("attempt = %+v", a)
	}
}

func TestValidateTimeoutReadingBody(t *testing.T) {
	// The status line is what counts: a receiver that answers 200 and then
	// stalls its body still passes, once the timeout cuts the read.
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	a, err := devClient(Config{Timeout: 100 * time.Millisecond}).Validate(context.Background(), srv.URL, "Kassa")
	if err != nil || a.StatusCode != 200 || string(a.ResponseBody) != "partial" {
		t.Fatalf("Validate = %+v, %v", a, err)
	}
}

func TestValidateDNSFailure(t *testing.T) {
	res := newFakeResolver()
	res.errs["slow.example"] = &net.DNSError{Err: "i/o timeout", Name: "slow.example", IsTimeout: true}
	res.addrs["empty.example"] = nil
	res.errs["broken.example"] = errors.New("resolver exploded")
	tests := []struct{ host, want string }{
		{"x.invalid", `cannot resolve host "x.invalid"`},
		{"slow.example", `cannot resolve host "slow.example": the DNS lookup timed out`},
		{"empty.example", `cannot resolve host "empty.example"`},
		{"broken.example", `cannot resolve host "broken.example"`},
	}
	for _, tt := range tests {
		c := New(Config{Resolver: res})
		a, err := c.Validate(context.Background(), "https://"+tt.host+"/hook", "Kassa")
		wantInvalid(t, err, tt.want)
		if a.StatusCode != 0 || a.Err != tt.want {
			t.Errorf("%s: attempt = %+v", tt.host, a)
		}
	}
}

func TestValidateConnectionRefused(t *testing.T) {
	addr := closedPort(t)
	_, err := devClient(Config{}).Validate(context.Background(), "http://"+addr+"/hook", "Kassa")
	wantInvalid(t, err, "cannot connect to "+addr+": connection refused")

	// Through a host name too: the message names the address dialed.
	res := newFakeResolver()
	res.addrs["down.example"] = []string{"127.0.0.1"}
	_, port, _ := net.SplitHostPort(addr)
	_, err = devClient(Config{Resolver: res}).Validate(context.Background(), "http://down.example:"+port, "Kassa")
	wantInvalid(t, err, "cannot connect to "+addr+": connection refused")
}

func TestValidateCanceled(t *testing.T) {
	srv := newHangingServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := devClient(Config{}).Validate(ctx, srv.URL, "Kassa")
	wantInvalid(t, err, "request to webhook URL was canceled")
}

func TestRefusesNonPublicAddresses(t *testing.T) {
	rec := newRecorder(t, 200)
	port := rec.port()
	res := newFakeResolver()
	res.addrs["internal.example"] = []string{"10.1.2.3"}
	res.addrs["mixed.example"] = []string{"93.184.215.14", "192.168.0.10"}
	res.addrs["loop.example"] = []string{"127.0.0.1"}
	res.addrs["loop6.example"] = []string{"::1"}
	res.addrs["mapped.example"] = []string{"::ffff:127.0.0.1"}
	res.addrs["metadata.example"] = []string{"169.254.169.254"}

	literal := func(ip, class string) string {
		return "webhook URL points to " + ip + ", which is not a public address (" + class + "); only public addresses are allowed"
	}
	named := func(host, class string) string {
		return `host "` + host + `" resolves to an address that is not public (` + class + "); only public addresses are allowed"
	}
	tests := []struct {
		url  string
		want string
	}{
		{"http://127.0.0.1:" + port + "/", literal("127.0.0.1", "loopback")},
		{"http://127.1.2.3/", literal("127.1.2.3", "loopback")},
		{"http://10.0.0.1/", literal("10.0.0.1", "private")},
		{"http://172.16.5.4/", literal("172.16.5.4", "private")},
		{"http://192.168.1.1/", literal("192.168.1.1", "private")},
		{"http://169.254.169.254/latest/meta-data/", literal("169.254.169.254", "link-local")},
		{"http://100.64.0.1/", literal("100.64.0.1", "carrier-grade NAT")},
		{"http://0.0.0.0:" + port + "/", literal("0.0.0.0", "unspecified")},
		{"http://224.0.0.1/", literal("224.0.0.1", "multicast")},
		{"http://255.255.255.255/", literal("255.255.255.255", "reserved")},
		{"http://[::1]:" + port + "/", literal("::1", "loopback")},
		{"http://[::]:" + port + "/", literal("::", "unspecified")},
		{"http://[::ffff:127.0.0.1]:" + port + "/", literal("::ffff:127.0.0.1", "loopback")},
		{"http://[fc00::1]/", literal("fc00::1", "private")},
		{"http://[fd12:3456::1]/", literal("fd12:3456::1", "private")},
		{"http://[fe80::1%25eth0]/", literal("fe80::1%eth0", "link-local")},
		{"http://[ff02::1]/", literal("ff02::1", "multicast")},
		{"http://[64:ff9b::a00:1]/", literal("64:ff9b::a00:1", "private")},
		{"http://internal.example/", named("internal.example", "private")},
		{"http://mixed.example/", named("mixed.example", "private")},
		{"http://loop.example:" + port + "/", named("loop.example", "loopback")},
		{"http://loop6.example:" + port + "/", named("loop6.example", "loopback")},
		{"http://mapped.example:" + port + "/", named("mapped.example", "loopback")},
		{"http://metadata.example/", named("metadata.example", "link-local")},
	}
	c := New(Config{Resolver: res, Timeout: 2 * time.Second})
	for _, tt := range tests {
		a, err := c.Validate(context.Background(), tt.url, "Kassa")
		wantInvalid(t, err, tt.want)
		if a.StatusCode != 0 {
			t.Errorf("%s: attempt = %+v", tt.url, a)
		}
		if d := c.Deliver(context.Background(), tt.url, nil, []byte("{}")); d.OK || d.Err != tt.want {
			t.Errorf("Deliver(%s) = %+v, want Err %q", tt.url, d, tt.want)
		}
	}
	if n := rec.hits.Load(); n != 0 {
		t.Errorf("the loopback server got %d requests", n)
	}
}

func TestRefusesLocalhostWithSystemResolver(t *testing.T) {
	rec := newRecorder(t, 200)
	_, err := New(Config{}).Validate(context.Background(), "http://localhost:"+rec.port()+"/", "Kassa")
	wantInvalid(t, err, `host "localhost" resolves to an address that is not public (loopback); only public addresses are allowed`)
	if n := rec.hits.Load(); n != 0 {
		t.Errorf("server got %d requests", n)
	}
	// With --dev the same URL works.
	if _, err := devClient(Config{}).Validate(context.Background(), "http://localhost:"+rec.port()+"/", "Kassa"); err != nil {
		t.Errorf("dev: %v", err)
	}
}

func TestDialsTheVettedAddress(t *testing.T) {
	// The host name exists only in the fake resolver: reaching the server
	// proves that the client dialed the address it resolved itself, and
	// one look-up per request proves nothing resolved it again.
	rec := newRecorder(t, 200)
	res := newFakeResolver()
	res.addrs["hooks.example"] = []string{"127.0.0.1"}
	c := devClient(Config{Resolver: res})
	c.transport.DisableKeepAlives = true
	for i := 1; i <= 3; i++ {
		a := c.Deliver(context.Background(), "http://hooks.example:"+rec.port()+"/in", nil, []byte("{}"))
		if !a.OK {
			t.Fatalf("Deliver = %+v", a)
		}
		if n := res.Calls("hooks.example"); n != i {
			t.Fatalf("after %d requests: %d look-ups", i, n)
		}
	}
	req, _ := rec.last()
	if req.Host != "hooks.example:"+rec.port() {
		t.Errorf("Host = %q", req.Host)
	}
}

func TestControlChecksDialedAddress(t *testing.T) {
	c := New(Config{})
	for _, addr := range []string{"127.0.0.1:80", "[::1]:443", "10.0.0.1:8080", "[fe80::1%eth0]:80"} {
		var blocked *blockedError
		if err := c.control("tcp", addr, nil); !errors.As(err, &blocked) {
			t.Errorf("control(%s) = %v, want a refusal", addr, err)
		}
	}
	for _, addr := range []string{"8.8.8.8:443", "[2606:4700:4700::1111]:443"} {
		if err := c.control("tcp", addr, nil); err != nil {
			t.Errorf("control(%s) = %v", addr, err)
		}
	}
	if err := c.control("tcp", "not an address", nil); err == nil {
		t.Error("control accepted an unparsable address")
	}
	if err := devClient(Config{}).control("tcp", "127.0.0.1:80", nil); err != nil {
		t.Errorf("dev control = %v", err)
	}

	// The dialer runs it: a loopback connection dies before it is made,
	// whatever handed the dialer the address.
	rec := newRecorder(t, 200)
	_, err := c.dialer.DialContext(context.Background(), "tcp", rec.srv.Listener.Addr().String())
	var blocked *blockedError
	if !errors.As(err, &blocked) {
		t.Fatalf("dial = %v, want a refusal", err)
	}
	if got := c.describe(context.Background(), err); got != "webhook URL connects to an address that is not public (loopback); only public addresses are allowed" {
		t.Errorf("describe = %q", got)
	}
}

func TestHTTPS(t *testing.T) {
	t.Run("http refused", func(t *testing.T) {
		rec := newRecorder(t, 200)
		c := devClient(Config{RequireHTTPS: true})
		_, err := c.Validate(context.Background(), rec.srv.URL, "Kassa")
		wantInvalid(t, err, "webhook URL must use https")
		if a := c.Deliver(context.Background(), rec.srv.URL, nil, nil); a.OK || a.Err != "webhook URL must use https" {
			t.Errorf("Deliver = %+v", a)
		}
		if n := rec.hits.Load(); n != 0 {
			t.Errorf("server got %d requests", n)
		}
	})
	t.Run("https passes", func(t *testing.T) {
		rec := newTLSRecorder(t, 204)
		c := devClient(Config{RequireHTTPS: true})
		trust(c, rec.srv)
		if _, err := c.Validate(context.Background(), rec.srv.URL, "Kassa"); err != nil {
			t.Fatal(err)
		}
		if a := c.Deliver(context.Background(), rec.srv.URL, nil, []byte("{}")); !a.OK {
			t.Fatalf("Deliver = %+v", a)
		}
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		rec := newTLSRecorder(t, 200)
		_, err := devClient(Config{RequireHTTPS: true}).Validate(context.Background(), rec.srv.URL, "Kassa")
		if err == nil || !strings.HasPrefix(kassa.ErrorMessage(err), "webhook URL's TLS certificate was not accepted: x509: ") {
			t.Fatalf("Validate = %v", err)
		}
	})
	t.Run("plain http behind https URL", func(t *testing.T) {
		rec := newRecorder(t, 200)
		_, err := devClient(Config{}).Validate(context.Background(), strings.Replace(rec.srv.URL, "http:", "https:", 1), "Kassa")
		wantInvalid(t, err, "webhook URL did not answer with TLS; check whether it should be http")
	})
}

func TestCheckURL(t *testing.T) {
	strict := New(DefaultConfig())
	dev := New(Config{AllowPrivate: true})
	tests := []struct {
		url  string
		dev  bool
		want string // "" for valid
	}{
		{url: "https://shop.example/webhooks/kassa"},
		{url: "https://shop.example:8443/hook?token=abc#frag"},
		{url: "https://xn--bcher-kva.example/hook"},
		{url: "https://93.184.215.14/hook"},
		{url: "https://[2606:4700:4700::1111]/hook"},
		{url: "http://localhost:3000/hook", dev: true},
		{url: "http://127.0.0.1:3000/hook", dev: true},
		{url: "", want: "webhook URL is empty"},
		{url: "https://shop.example/" + strings.Repeat("a", 2048), want: "webhook URL is longer than 2048 characters"},
		{url: " https://shop.example/", want: "webhook URL has leading or trailing spaces"},
		{url: "https://shop.example/\n", want: "webhook URL has leading or trailing spaces"},
		{url: "http://shop.example/hook", want: "webhook URL must use https"},
		{url: "shop.example/hook", want: "webhook URL must be absolute, starting with https://"},
		{url: "//shop.example/hook", want: "webhook URL must be absolute, starting with https://"},
		{url: "ftp://shop.example/hook", want: `webhook URL has scheme "ftp"; use https://`},
		{url: "javascript:alert(1)", want: `webhook URL has scheme "javascript"; use https://`},
		// Where http is accepted (--dev), the error says so.
		{url: "localhost:3000/hook", dev: true, want: `webhook URL has scheme "localhost"; use https:// or http:// (loopback and private addresses allowed)`},
		{url: "/hook", dev: true, want: "webhook URL must be absolute, starting with https:// or http:// (loopback and private addresses allowed)"},
		{url: "https:shop.example", want: "webhook URL has no host"},
		{url: "https:///hook", want: "webhook URL has no host"},
		{url: "https://:443/hook", want: "webhook URL has no host"},
		{url: "https://user:pass@shop.example/hook", want: "webhook URL must not contain a user name or password"},
		{url: "https://user@shop.example/hook", want: "webhook URL must not contain a user name or password"},
		{url: "https://shop.example:99999/hook", want: `webhook URL has an invalid port "99999"`},
		{url: "https://shop.example:0/hook", want: `webhook URL has an invalid port "0"`},
		{url: "https://shop.example:/hook", want: "webhook URL has an empty port"},
		{url: "https://shop.example:abc/hook", want: "webhook URL is not a valid URL"},
		{url: "https://shop .example/hook", want: "webhook URL is not a valid URL"},
		{url: "https://shop.example/%zz", want: "webhook URL is not a valid URL"},
		{url: "https://10.0.0.1/hook", want: "webhook URL points to 10.0.0.1, which is not a public address (private); only public addresses are allowed"},
		{url: "https://[::1]/hook", want: "webhook URL points to ::1, which is not a public address (loopback); only public addresses are allowed"},
	}
	for _, tt := range tests {
		c := strict
		if tt.dev {
			c = dev
		}
		err := c.CheckURL(tt.url)
		if tt.want == "" {
			if err != nil {
				t.Errorf("CheckURL(%.60q) = %v", tt.url, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("CheckURL(%.60q) = nil, want %q", tt.url, tt.want)
			continue
		}
		if kassa.ErrorCode(err) != kassa.Invalid || kassa.ErrorMessage(err) != tt.want {
			t.Errorf("CheckURL(%.60q) = %v, want %q", tt.url, err, tt.want)
		}
	}
	if err := strict.CheckURL("https://a.example/" + strings.Repeat("a", MaxURLLength-len("https://a.example/"))); err != nil {
		t.Errorf("URL of exactly %d characters: %v", MaxURLLength, err)
	}
}

func TestAddressClass(t *testing.T) {
	tests := []struct{ ip, class string }{
		{"8.8.8.8", ""},
		{"93.184.215.14", ""},
		{"1.1.1.1", ""},
		{"2606:4700:4700::1111", ""},
		{"2a00:1450:4001:82a::200e", ""},
		{"64:ff9b::808:808", ""},
		{"2002:808:808::1", ""},
		{"::ffff:8.8.8.8", ""},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "this-network"},
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"10.255.0.1", "private"},
		{"172.31.255.255", "private"},
		{"172.32.0.1", ""},
		{"192.168.0.1", "private"},
		{"169.254.0.1", "link-local"},
		{"100.64.0.0", "carrier-grade NAT"},
		{"100.127.255.255", "carrier-grade NAT"},
		{"100.128.0.0", ""},
		{"192.0.0.8", "reserved"},
		{"192.0.2.1", "documentation"},
		{"198.18.0.1", "benchmarking"},
		{"198.51.100.7", "documentation"},
		{"203.0.113.9", "documentation"},
		{"224.0.0.251", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "reserved"},
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"::ffff:10.0.0.1", "private"},
		{"::ffff:0.0.0.0", "unspecified"},
		{"::127.0.0.1", "reserved"},
		{"fc00::1", "private"},
		{"fdff::1", "private"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"fec0::1", "reserved"},
		{"ff02::1", "multicast"},
		{"ff05::1:3", "multicast"},
		{"100::1", "reserved"},
		{"64:ff9b::7f00:1", "loopback"},
		{"64:ff9b::a9fe:a9fe", "link-local"},
		{"64:ff9b:1::1", "reserved"},
		{"2002:c0a8:101::1", "private"},
		{"2002:7f00:1::", "loopback"},
		{"2001:db8::1", "documentation"},
		{"2001::1", "reserved"},
		{"3fff::1", "documentation"},
		{"4000::1", "reserved"},
	}
	for _, tt := range tests {
		if got := addressClass(netip.MustParseAddr(tt.ip)); got != tt.class {
			t.Errorf("addressClass(%s) = %q, want %q", tt.ip, got, tt.class)
		}
	}
	if got := addressClass(netip.Addr{}); got != "invalid" {
		t.Errorf("addressClass(zero) = %q", got)
	}
}

func TestDeliver(t *testing.T) {
	rec := newRecorder(t, 200)
	rec.answer = []byte(`{"received":true}`)
	body := []byte(`{"type":"New","invoiceId":"inv_1"}`)
	headers := http.Header{
		"X-Service-Signature": {"t=1,v1=abc"},
		"X-Service-Sig":       {"sha256=def"},
		"Content-Type":        {"text/plain"},
		"content-type":        {"text/html"},
		"X-Multi":             {"a", "b"},
	}
	c := devClient(Config{})
	a := c.Deliver(context.Background(), rec.srv.URL+"/hook", headers, body)
	if !a.OK || a.StatusCode != 200 || a.Err != "" || string(a.ResponseBody) != `{"received":true}` || a.Duration <= 0 {
		t.Fatalf("Deliver = %+v", a)
	}
	req, got := rec.last()
	if req.Method != http.MethodPost || req.URL.Path != "/hook" || !bytes.Equal(got, body) {
		t.Errorf("request = %s %s %s", req.Method, req.URL, got)
	}
	if v := req.Header.Get("X-Service-Signature"); v != "t=1,v1=abc" {
		t.Errorf("X-Service-Signature = %q", v)
	}
	if v := req.Header.Get("X-Service-Sig"); v != "sha256=def" {
		t.Errorf("X-Service-Sig = %q", v)
	}
	if v := req.Header.Values("Content-Type"); len(v) != 1 || v[0] != "application/json" {
		t.Errorf("Content-Type = %q", v)
	}
	if v := req.Header.Values("X-Multi"); len(v) != 2 {
		t.Errorf("X-Multi = %q", v)
	}
	if v := req.Header.Get("User-Agent"); v != DefaultUserAgent {
		t.Errorf("User-Agent = %q", v)
	}
	if headers.Get("Content-Type") != "text/plain" {
		t.Error("Deliver changed the caller's headers")
	}
}

func TestDeliverFailures(t *testing.T) {
	for _, tt := range []struct {
		status int
		err    string
	}{
		{204, ""},
		{299, ""},
		{401, "webhook URL answered 401 Unauthorized"},
		{404, "webhook URL answered 404 Not Found"},
		{500, "webhook URL answered 500 Internal Server Error"},
		{503, "webhook URL answered 503 Service Unavailable"},
	} {
		rec := newRecorder(t, tt.status)
		a := devClient(Config{}).Deliver(context.Background(), rec.srv.URL, nil, []byte("{}"))
		if a.StatusCode != tt.status || a.OK != (tt.err == "") || a.Err != tt.err {
			t.Errorf("status %d: Deliver = %+v, want Err %q", tt.status, a, tt.err)
		}
		if n := rec.hits.Load(); n != 1 {
			t.Errorf("status %d: %d requests, want exactly 1 (no retry)", tt.status, n)
		}
	}

	addr := closedPort(t)
	a := devClient(Config{}).Deliver(context.Background(), "http://"+addr, nil, []byte("{}"))
	if a.OK || a.StatusCode != 0 || a.Err != "cannot connect to "+addr+": connection refused" {
		t.Errorf("closed port: Deliver = %+v", a)
	}

	srv := newHangingServer(t)
	a = devClient(Config{Timeout: 50 * time.Millisecond}).Deliver(context.Background(), srv.URL, nil, []byte("{}"))
	if a.OK || a.StatusCode != 0 || a.Err != "webhook URL did not answer within 50ms" {
		t.Errorf("hanging server: Deliver = %+v", a)
	}

	a = devClient(Config{}).Deliver(context.Background(), "not a url", nil, nil)
	if a.OK || a.Err != "webhook URL must be absolute, starting with https:// or http:// (loopback and private addresses allowed)" {
		t.Errorf("bad URL: Deliver = %+v", a)
	}
}

func TestDeliverDoesNotFollowRedirects(t *testing.T) {
	target := newRecorder(t, 200)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.srv.URL, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	a := devClient(Config{}).Deliver(context.Background(), srv.URL, nil, []byte("{}"))
	if a.OK || a.StatusCode != 307 || a.Err != "webhook URL answered 307 Temporary Redirect; redirects are not followed" {
		t.Errorf("Deliver = %+v", a)
	}
	if n := target.hits.Load(); n != 0 {
		t.Errorf("redirect target got %d requests", n)
	}
}

func TestResponseBodyCap(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	for _, size := range []int{0, 100, MaxResponseBody, MaxResponseBody + 1, len(big)} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write(big[:size])
		}))
		a := devClient(Config{}).Deliver(context.Background(), srv.URL, nil, []byte("{}"))
		srv.Close()
		want := min(size, MaxResponseBody)
		if !a.OK || len(a.ResponseBody) != want || !bytes.Equal(a.ResponseBody, big[:want]) {
			t.Errorf("response of %d bytes: kept %d, want the first %d (attempt OK %v, %s)", size, len(a.ResponseBody), want, a.OK, a.Err)
		}
	}
}

func TestDeliverConcurrently(t *testing.T) {
	rec := newRecorder(t, 200)
	res := newFakeResolver()
	res.addrs["hooks.example"] = []string{"127.0.0.1"}
	c := devClient(Config{Resolver: res})
	defer c.CloseIdleConnections()
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			if a := c.Deliver(context.Background(), "http://hooks.example:"+rec.port(), nil, []byte("{}")); !a.OK {
				t.Errorf("Deliver = %+v", a)
			}
		})
	}
	wg.Wait()
	if n := rec.hits.Load(); n != 32 {
		t.Errorf("%d requests, want 32", n)
	}
}

func TestDialTriesEachAddress(t *testing.T) {
	// The first address refuses; the client goes on to the second. The
	// server listens on 127.0.0.1 only, so 127.0.0.2 (also loopback on
	// Linux) refuses its port.
	rec := newRecorder(t, 200)
	if srvAddr := rec.srv.Listener.Addr().String(); !strings.HasPrefix(srvAddr, "127.0.0.1:") {
		t.Fatalf("the test server listens on %s, not 127.0.0.1: this test needs IPv4 loopback", srvAddr)
	}
	res := newFakeResolver()
	res.addrs["refuses.example"] = []string{"127.0.0.2"}
	res.addrs["two.example"] = []string{"127.0.0.2", "127.0.0.1"}
	c := devClient(Config{Resolver: res})
	// The control: the first address alone does refuse.
	if a := c.Deliver(context.Background(), "http://refuses.example:"+rec.port(), nil, []byte("{}")); a.OK {
		t.Fatalf("127.0.0.2 answered on the server's port: %+v", a)
	}
	a := c.Deliver(context.Background(), "http://two.example:"+rec.port(), nil, []byte("{}"))
	if !a.OK {
		t.Fatalf("Deliver = %+v", a)
	}
	if n := rec.hits.Load(); n != 1 {
		t.Errorf("%d requests reached the server, want 1", n)
	}
}

func TestPartialDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, subCancel := partialDeadline(ctx, 2)
	defer subCancel()
	d, _ := sub.Deadline()
	if left := time.Until(d); left > 5*time.Second || left < 4*time.Second {
		t.Errorf("share of 10s for 2 addresses = %s", left)
	}
	for _, remaining := range []int{1, 10} { // the last address, or shares under 2s
		sub, subCancel := partialDeadline(ctx, remaining)
		if sub != ctx {
			t.Errorf("remaining %d: got a shorter deadline", remaining)
		}
		subCancel()
	}
}
