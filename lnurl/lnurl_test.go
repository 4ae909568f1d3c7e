package lnurl_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/ecdsa"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/lightningnetwork/lnd/lnwire"
	"github.com/lightningnetwork/lnd/zpay32"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/lnurl"
)

// payee makes BOLT11 invoices as a merchant's node would.
type payee struct {
	t   *testing.T
	key *btcec.PrivateKey
	net *chaincfg.Params
}

func newPayee(t *testing.T, net *chaincfg.Params) *payee {
	key, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	return &payee{t: t, key: key, net: net}
}

// invoice returns a signed invoice for amount (zero: none) with either
// a description hash of hashOf or a plain description.
func (p *payee) invoice(amount kassa.MSat, hashOf *string, description string) string {
	var hash [32]byte
	rand.Read(hash[:])
	opts := []func(*zpay32.Invoice){zpay32.Expiry(time.Hour)}
	if amount > 0 {
		opts = append(opts, zpay32.Amount(lnwire.MilliSatoshi(amount)))
	}
	if hashOf != nil {
		opts = append(opts, zpay32.DescriptionHash(sha256.Sum256([]byte(*hashOf))))
	} else {
		opts = append(opts, zpay32.Description(description))
	}
	inv, err := zpay32.NewInvoice(p.net, hash, time.Now(), opts...)
	if err != nil {
		p.t.Fatal(err)
	}
	pr, err := inv.Encode(zpay32.MessageSigner{SignCompact: func(msg []byte) ([]byte, error) {
		return ecdsa.SignCompact(p.key, chainhash.HashB(msg), true), nil
	}})
	if err != nil {
		p.t.Fatal(err)
	}
	return pr
}

// server is an LNURL-pay server for one user, in the shape LUD-06 and
// LUD-16 give as examples. Its answers can be bent per test.
type server struct {
	*httptest.Server
	payee *payee

	mu             sync.Mutex
	metadata       string
	minSendable    int64
	maxSendable    int64
	commentAllowed int
	// lie adds to the invoice amount (a server that lies).
	lie kassa.MSat
	// plainDescription answers invoices without a description hash.
	plainDescription bool
	// hashOf, when set, is hashed instead of the metadata.
	hashOf   *string
	payReq   func(base string) any // overrides the pay request answer
	callback func(w http.ResponseWriter, q url.Values) bool
	calls    []url.Values
}

func newServer(t *testing.T, net *chaincfg.Params) *server {
	s := &server{
		payee:          newPayee(t, net),
		metadata:       `[["text/plain","Pay to alice"],["text/identifier","alice@example.com"]]`,
		minSendable:    1000,
		maxSendable:    1_000_000_000,
		commentAllowed: 32,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/lnurlp/{user}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("user") != "alice" {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]string{"status": "ERROR", "reason": "no such user"})
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		base := "http://" + r.Host
		var answer any = map[string]any{
			"callback":       base + "/lnurlp/alice/callback?k=v",
			"maxSendable":    s.maxSendable,
			"minSendable":    s.minSendable,
			"metadata":       s.metadata,
			"commentAllowed": s.commentAllowed,
			"tag":            "payRequest",
		}
		if s.payReq != nil {
			answer = s.payReq(base)
		}
		json.NewEncoder(w).Encode(answer)
	})
	mux.HandleFunc("GET /lnurlp/alice/callback", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		q := r.URL.Query()
		s.calls = append(s.calls, q)
		if s.callback != nil && s.callback(w, q) {
			return
		}
		amount, err := strconv.ParseInt(q.Get("amount"), 10, 64)
		if err != nil {
			json.NewEncoder(w).Encode(map[string]string{"status": "ERROR", "reason": "bad amount"})
			return
		}
		hashOf := &s.metadata
		if s.hashOf != nil {
			hashOf = s.hashOf
		}
		if s.plainDescription {
			hashOf = nil
		}
		pr := s.payee.invoice(kassa.MSat(amount)+s.lie, hashOf, "Pay to alice")
		json.NewEncoder(w).Encode(map[string]any{"pr": pr, "routes": []any{}})
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// set changes the server's behaviour under its lock.
func (s *server) set(change func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	change()
}

func (s *server) address() string {
	return "alice@" + strings.TrimPrefix(s.URL, "http://")
}

func (s *server) lastCall() url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) == 0 {
		return nil
	}
	return s.calls[len(s.calls)-1]
}

func client() *lnurl.Client {
	return lnurl.New(lnurl.Config{Net: &chaincfg.RegressionNetParams, AllowHTTP: true})
}

func TestLightningAddressPayFlow(t *testing.T) {
	s := newServer(t, &chaincfg.RegressionNetParams)
	c := client()
	ctx := context.Background()

	p, err := c.FetchPayRequest(ctx, s.address())
	if err != nil {
		t.Fatal(err)
	}
	if p.MinSendable != 1000 || p.MaxSendable != 1_000_000_000 || p.CommentAllowed != 32 {
		t.Fatalf("pay request %+v", p)
	}
	if !strings.HasPrefix(p.Callback, s.URL+"/lnurlp/alice/callback?k=v") {
		t.Fatalf("callback %q", p.Callback)
	}
	inv, err := c.Invoice(ctx, p, 21_000, "thanks for order 42")
	if err != nil {
		t.Fatal(err)
	}
	if inv.Amount != 21_000 || len(inv.PaymentHash) != 64 || inv.Destination == "" {
		t.Fatalf("invoice %+v", inv)
	}
	q := s.lastCall()
	if q.Get("amount") != "21000" || q.Get("comment") != "thanks for order 42" || q.Get("k") != "v" {
		t.Fatalf("callback query %v: the amount, the comment and the callback's own parameters must all be there", q)
	}
}

func TestServerThatLiesAboutTheAmountIsRefused(t *testing.T) {
	s := newServer(t, &chaincfg.RegressionNetParams)
	c := client()
	ctx := context.Background()
	p, err := c.FetchPayRequest(ctx, s.address())
	if err != nil {
		t.Fatal(err)
	}
	for _, lie := range []kassa.MSat{1, 1000, -1} {
		s.mu.Lock()
		s.lie = lie
		s.mu.Unlock()
		_, err := c.Invoice(ctx, p, 50_000, "")
		if !errors.Is(err, lnurl.ErrBadInvoice) {
			t.Fatalf("an invoice for %d msat more than asked: got %v, want ErrBadInvoice", lie, err)
		}
	}
}

func TestAmountlessInvoiceIsRefused(t *testing.T) {
	s := newServer(t, &chaincfg.RegressionNetParams)
	s.set(func() {
		s.callback = func(w http.ResponseWriter, q url.Values) bool {
			json.NewEncoder(w).Encode(map[string]any{"pr": s.payee.invoice(0, &s.metadata, "")})
			return true
		}
	})
	c := client()
	p, err := c.FetchPayRequest(context.Background(), s.address())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Invoice(context.Background(), p, 5000, ""); !errors.Is(err, lnurl.ErrBadInvoice) {
		t.Fatalf("amountless invoice: %v", err)
	}
}

func TestDescriptionHash(t *testing.T) {
	s := newServer(t, &chaincfg.RegressionNetParams)
	c := client()
	ctx := context.Background()
	p, err := c.FetchPayRequest(ctx, s.address())
	if err != nil {
		t.Fatal(err)
	}
	// The hash of the metadata: accepted (above). A plain description:
	// accepted, LUD-06 no longer requires the hash.
	s.set(func() { s.plainDescription = true })
	if _, err := c.Invoice(ctx, p, 5000, ""); err != nil {
		t.Fatalf("plain description: %v", err)
	}
	s.set(func() { s.plainDescription = false })
	other := `[["text/plain","Pay to mallory"]]`
	s.set(func() { s.hashOf = &other })
	if _, err := c.Invoice(ctx, p, 5000, ""); !errors.Is(err, lnurl.ErrBadInvoice) {
		t.Fatalf("a description hash of other metadata: %v, want ErrBadInvoice", err)
	}
}

func TestInvoiceOfAnotherNetworkIsRefused(t *testing.T) {
	s := newServer(t, &chaincfg.MainNetParams)
	c := client() // regtest
	p, err := c.FetchPayRequest(context.Background(), s.address())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Invoice(context.Background(), p, 5000, ""); !errors.Is(err, lnurl.ErrBadInvoice) {
		t.Fatalf("mainnet invoice on regtest: %v", err)
	}
}

func TestAmountBounds(t *testing.T) {
	s := newServer(t, &chaincfg.RegressionNetParams)
	c := client()
	p, err := c.FetchPayRequest(context.Background(), s.address())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Invoice(context.Background(), p, 999, ""); !errors.Is(err, lnurl.ErrAmountBelowMin) {
		t.Fatalf("below min: %v", err)
	}
	if _, err := c.Invoice(context.Background(), p, 1_000_000_001, ""); !errors.Is(err, lnurl.ErrAmountAboveMax) {
		t.Fatalf("above max: %v", err)
	}
	if got := len(s.calls); got != 0 { // no request in flight
		t.Fatalf("the callback was called %d times for amounts out of bounds", got)
	}
	for _, amount := range []kassa.MSat{1000, 1_000_000_000} {
		if _, err := c.Invoice(context.Background(), p, amount, ""); err != nil {
			t.Fatalf("%d msat, at the bound: %v", amount, err)
		}
	}
}

func TestComments(t *testing.T) {
	s := newServer(t, &chaincfg.RegressionNetParams)
	c := client()
	ctx := context.Background()

	s.set(func() { s.commentAllowed = 5 })
	p, err := c.FetchPayRequest(ctx, s.address())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Invoice(ctx, p, 5000, "ünïcødé comment"); err != nil {
		t.Fatal(err)
	}
	if got := s.lastCall().Get("comment"); got != "ünïcø" {
		t.Fatalf("comment cut to 5 characters: %q", got)
	}

	s.set(func() { s.commentAllowed = 0 })
	p, err = c.FetchPayRequest(ctx, s.address())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Invoice(ctx, p, 5000, "not allowed"); err != nil {
		t.Fatal(err)
	}
	if q := s.lastCall(); q.Has("comment") {
		t.Fatalf("a comment was sent to a pay request that allows none: %v", q)
	}
}

func TestBadPayRequests(t *testing.T) {
	cases := map[string]func(base string) any{
		"wrong tag": func(base string) any {
			return map[string]any{"tag": "withdrawRequest", "callback": base + "/cb", "minSendable": 1, "maxSendable": 2, "metadata": "[]"}
		},
		"min above max": func(base string) any {
			return map[string]any{"tag": "payRequest", "callback": base + "/cb", "minSendable": 5000, "maxSendable": 1000, "metadata": "[]"}
		},
		"min zero": func(base string) any {
			return map[string]any{"tag": "payRequest", "callback": base + "/cb", "minSendable": 0, "maxSendable": 1000, "metadata": "[]"}
		},
		"fractional amount": func(base string) any {
			return map[string]any{"tag": "payRequest", "callback": base + "/cb", "minSendable": 1.5, "maxSendable": 1000, "metadata": "[]"}
		},
		"metadata not an array": func(base string) any {
			return map[string]any{"tag": "payRequest", "callback": base + "/cb", "minSendable": 1000, "maxSendable": 1000, "metadata": "{}"}
		},
		"callback not http": func(base string) any {
			return map[string]any{"tag": "payRequest", "callback": "file:///etc/passwd", "minSendable": 1000, "maxSendable": 1000, "metadata": "[]"}
		},
		"more than all bitcoin": func(base string) any {
			return map[string]any{"tag": "payRequest", "callback": base + "/cb", "minSendable": 1000, "maxSendable": int64(kassa.MaxSats.MSat()) + 1, "metadata": "[]"}
		},
		"lnurl error": func(base string) any {
			return map[string]any{"status": "ERROR", "reason": "account disabled"}
		},
	}
	for name, answer := range cases {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, &chaincfg.RegressionNetParams)
			s.payReq = answer
			_, err := client().FetchPayRequest(context.Background(), s.address())
			if err == nil {
				t.Fatal("accepted")
			}
			if kassa.ErrorCode(err) != kassa.Unavailable {
				t.Fatalf("%v: code %s, want unavailable", err, kassa.ErrorCode(err))
			}
			if name == "lnurl error" && !strings.Contains(err.Error(), "account disabled") {
				t.Fatalf("the server's reason is lost: %v", err)
			}
		})
	}
}

func TestServerErrors(t *testing.T) {
	s := newServer(t, &chaincfg.RegressionNetParams)
	c := client()
	ctx := context.Background()
	_, err := c.FetchPayRequest(ctx, "bob@"+strings.TrimPrefix(s.URL, "http://"))
	if !errors.Is(err, lnurl.ErrServer) || !strings.Contains(err.Error(), "no such user") {
		t.Fatalf("unknown user: %v", err)
	}
	p, err := c.FetchPayRequest(ctx, s.address())
	if err != nil {
		t.Fatal(err)
	}
	s.set(func() {
		s.callback = func(w http.ResponseWriter, q url.Values) bool {
			w.WriteHeader(http.StatusInternalServerError)
			return true
		}
	})
	if _, err := c.Invoice(ctx, p, 5000, ""); !errors.Is(err, lnurl.ErrServer) {
		t.Fatalf("500 from the callback: %v", err)
	}
	s.set(func() {
		s.callback = func(w http.ResponseWriter, q url.Values) bool {
			w.Write([]byte(`{"pr": "` + strings.Repeat("x", lnurl.MaxResponseBody) + `"}`))
			return true
		}
	})
	if _, err := c.Invoice(ctx, p, 5000, ""); !errors.Is(err, lnurl.ErrServer) {
		t.Fatalf("an answer over the limit: %v", err)
	}
	s.set(func() {
		s.callback = func(w http.ResponseWriter, q url.Values) bool {
			w.Write([]byte(`{"pr": "lnbcrt1notaninvoice"}`))
			return true
		}
	})
	if _, err := c.Invoice(ctx, p, 5000, ""); !errors.Is(err, lnurl.ErrBadInvoice) {
		t.Fatalf("garbage invoice: %v", err)
	}
}

func TestURLs(t *testing.T) {
	strict := lnurl.New(lnurl.Config{})
	cases := []struct {
		in, want string
	}{
		// LUD-16's example.
		{"satoshi@bitcoin.org", "https://bitcoin.org/.well-known/lnurlp/satoshi"},
		{"Satoshi@Bitcoin.ORG", "https://bitcoin.org/.well-known/lnurlp/satoshi"},
		{"lightning:satoshi@bitcoin.org", "https://bitcoin.org/.well-known/lnurlp/satoshi"},
		{"user.name+tag@pay.example.com:8443", "https://pay.example.com:8443/.well-known/lnurlp/user.name+tag"},
		{"bob@abcdef.onion", "http://abcdef.onion/.well-known/lnurlp/bob"},
		// LUD-01's example.
		{"LNURL1DP68GURN8GHJ7UM9WFMXJCM99E3K7MF0V9CXJ0M385EKVCENXC6R2C35XVUKXEFCV5MKVV34X5EKZD3EV56NYD3HXQURZEPEXEJXXEPNXSCRVWFNV9NXZCN9XQ6XYEFHVGCXXCMYXYMNSERXFQ5FNS",
			"https://service.com/api?q=3fc3645b439ce8e7f2553a69e5267081d96dcd340693afabe04be7b0ccd178df"},
		{"https://pay.example.com/lnurlp/x", "https://pay.example.com/lnurlp/x"},
	}
	for _, c := range cases {
		u, err := strict.URL(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if u.String() != c.want {
			t.Errorf("%s: %s, want %s", c.in, u, c.want)
		}
	}
	for _, bad := range []string{"", "alice", "@example.com", "alice@", "al ice@example.com", "alice@exa mple.com",
		"alice@ex/ample.com", "alice@user:pw@example.com", "http://example.com/x", "ftp://example.com",
		"lnurl1xxxx", "alice@example.com/.." + strings.Repeat("x", 3000)} {
		if _, err := strict.URL(bad); !errors.Is(err, lnurl.ErrBadAddress) {
			t.Errorf("%q: %v, want ErrBadAddress", bad, err)
		}
	}
	enc, err := lnurl.EncodeLNURL("https://service.com/api?q=3fc3645b439ce8e7f2553a69e5267081d96dcd340693afabe04be7b0ccd178df")
	if err != nil || enc != cases[5].in {
		t.Fatalf("EncodeLNURL: %s %v", enc, err)
	}
}

func TestCallbackMustBeHTTPS(t *testing.T) {
	s := newServer(t, &chaincfg.RegressionNetParams)
	// The pay request itself over https is not possible here; check the
	// rule on a pay request value.
	strict := lnurl.New(lnurl.Config{Net: &chaincfg.RegressionNetParams})
	p := &lnurl.PayRequest{Callback: s.URL + "/lnurlp/alice/callback", MinSendable: 1, MaxSendable: 1e9, Metadata: "[]"}
	if _, err := strict.Invoice(context.Background(), p, 5000, ""); !errors.Is(err, lnurl.ErrBadPayRequest) {
		t.Fatalf("http callback without AllowHTTP: %v", err)
	}
	if n := len(s.calls); n != 0 {
		t.Fatalf("the http callback was called %d times", n)
	}
}

func TestCutComment(t *testing.T) {
	for _, c := range []struct {
		in      string
		allowed int
		want    string
	}{
		{"hello", 0, ""},
		{"hello", 10, "hello"},
		{"hello", 3, "hel"},
		{"  padded  ", 10, "padded"},
		{"日本語テキスト", 3, "日本語"},
		{"bad\xffutf8", 10, "badutf8"},
	} {
		if got := lnurl.CutComment(c.in, c.allowed); got != c.want {
			t.Errorf("CutComment(%q, %d) = %q, want %q", c.in, c.allowed, got, c.want)
		}
	}
}

func ExampleParseAddress() {
	a, err := lnurl.ParseAddress("satoshi@bitcoin.org")
	fmt.Println(a.URL(), err)
	// Output: https://bitcoin.org/.well-known/lnurlp/satoshi <nil>
}

// TestParseAddressIsTheStoreRule: a forward reads a Lightning address by
// the rule a store's address was saved with, so an address is refused
// by both or by neither. Before, ParseAddress had a rule of its own and
// took "a@-example.com", "a@example..com" and 300-character addresses,
// which a store could not save.
func TestParseAddressIsTheStoreRule(t *testing.T) {
	for _, s := range []string{
		"satoshi@bitcoin.org", "Satoshi@Bitcoin.ORG", "user.name+tag@pay.example.com:8443", "shop@127.0.0.1:8080",
		"shop@[::1]:8080", "bob@abcdef.onion",
		"a@-example.com", "a@example-.com", "a@example..com", "a@.example.com", "a@example.com:http", "a@example.com:99999",
		"a@" + strings.Repeat("x", 64) + ".com", "a" + strings.Repeat("b", 300) + "@example.com",
		"alice", "@example.com", "alice@", "al ice@example.com", "alice@exa mple.com", "alice@ex/ample.com",
		"alice@user:pw@example.com", "a@ex_ample.com", "a@[::1", "a@[zz]",
	} {
		_, err := lnurl.ParseAddress(s)
		store := kassa.ValidateLightningAddress(s)
		if (err == nil) != (store == nil) {
			t.Errorf("%q: ParseAddress %v, the store rule %v", s, err, store)
		}
		if err != nil && !errors.Is(err, lnurl.ErrBadAddress) {
			t.Errorf("%q: %v, want ErrBadAddress", s, err)
		}
	}
}
