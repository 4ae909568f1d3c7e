package lnurl

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/btcsuite/btcd/btcutil/bech32"
	"github.com/btcsuite/btcd/chaincfg"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/lightning/bolt11"
)

// Limits.
const (
	// MaxResponseBody is the most of an answer that is read: LUD-06
	// metadata may carry a small base64 image.
	MaxResponseBody = 256 << 10
	// MaxAddressLength bounds a Lightning address or LNURL string.
	MaxAddressLength = 2048
	// MaxCommentLength is the longest comment ever sent, whatever a
	// pay request allows.
	MaxCommentLength = 2000
	// DefaultTimeout bounds one request when the context has no sooner
	// deadline.
	DefaultTimeout = 10 * time.Second
)

// Errors a caller may act on. Each is a *kassa.Error, so the HTTP layer
// shows its message.
var (
	// ErrBadAddress is returned for a string that is neither a Lightning
	// address, an lnurl1 string nor an https URL.
	ErrBadAddress = kassa.Errorf(kassa.Invalid, "not a Lightning address (user@domain) or LNURL")

	// ErrAmountBelowMin is returned by Invoice for an amount below the
	// pay request's minSendable: a forward waits until more has
	// accumulated.
	ErrAmountBelowMin = kassa.Errorf(kassa.Invalid, "the amount is below the Lightning address's minimum")

	// ErrAmountAboveMax is returned by Invoice for an amount above the
	// pay request's maxSendable: a forward sends it in parts.
	ErrAmountAboveMax = kassa.Errorf(kassa.Invalid, "the amount is above the Lightning address's maximum")

	// ErrBadPayRequest is returned when the address answers something
	// that is not a valid LUD-06 pay request.
	ErrBadPayRequest = kassa.Errorf(kassa.Unavailable, "the Lightning address did not answer a valid pay request")

	// ErrBadInvoice is returned when the callback answers an invoice that
	// must not be paid: not BOLT11, another network, another amount than
	// asked, or a description hash that does not match the metadata.
	ErrBadInvoice = kassa.Errorf(kassa.Unavailable, "the Lightning address answered an invoice that must not be paid")

	// ErrServer is returned when the address answers an LNURL error or an
	// HTTP status other than 200, or cannot be reached.
	ErrServer = kassa.Errorf(kassa.Unavailable, "the Lightning address cannot be reached or refused the request")
)

// Doer sends HTTP requests. The service passes the egress client's, which
// refuses non-public addresses; *http.Client implements it.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Config configures a Client.
type Config struct {
	// HTTP sends the requests; nil means http.DefaultClient (tests only:
	// it has no SSRF protection).
	HTTP Doer
	// Net is the network invoices must be for; nil means mainnet.
	Net *chaincfg.Params
	// AllowHTTP allows plain http URLs and callbacks, and resolves
	// Lightning addresses over http (tests and local servers only).
	AllowHTTP bool
	// Timeout bounds each request; zero means DefaultTimeout.
	Timeout time.Duration
	// UserAgent is sent with every request; empty means "Kassa-LNURL/1".
	UserAgent string
}

// Client fetches pay requests and invoices. It is safe for concurrent use.
type Client struct {
	http      Doer
	net       *chaincfg.Params
	allowHTTP bool
	timeout   time.Duration
	userAgent string
}

// New returns a Client for cfg.
func New(cfg Config) *Client {
	c := &Client{http: cfg.HTTP, net: cfg.Net, allowHTTP: cfg.AllowHTTP, timeout: cfg.Timeout, userAgent: cfg.UserAgent}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	if c.net == nil {
		c.net = &chaincfg.MainNetParams
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.userAgent == "" {
		c.userAgent = "Kassa-LNURL/1"
	}
	return c
}

// PayRequest is a LUD-06 pay request, as the address answered it.
type PayRequest struct {
	// Callback is where invoices are requested.
	Callback string
	// MinSendable and MaxSendable bound the amount, in millisatoshis.
	MinSendable kassa.MSat
	MaxSendable kassa.MSat
	// Metadata is the raw metadata string; an invoice's description
	// hash, when it has one, is its SHA-256.
	Metadata string
	// CommentAllowed is the longest comment the callback takes (LUD-12);
	// zero means none.
	CommentAllowed int
}

// Invoice is a checked invoice from a pay request's callback.
type Invoice struct {
	// PaymentRequest is the BOLT11 invoice.
	PaymentRequest string
	// PaymentHash is its payment hash, hex.
	PaymentHash string
	// Amount is its amount, exactly the amount asked for.
	Amount kassa.MSat
	// Destination is the payee's node id, hex.
	Destination string
	// ExpiresAt is when the invoice expires.
	ExpiresAt time.Time
	// Payee is its node, final CLTV delta and route hints: where a
	// route fee to the address is estimated before the next invoice is
	// asked for.
	Payee kassa.Payee
}

// URL returns the address of the pay request that target names: a
// Lightning address (LUD-16), an lnurl1 bech32 string (LUD-01, with or
// without a "lightning:" prefix) or an https URL.
func (c *Client) URL(target string) (*url.URL, error) {
	target = strings.TrimSpace(target)
	if target == "" || len(target) > MaxAddressLength {
		return nil, ErrBadAddress
	}
	if p, ok := strings.CutPrefix(strings.ToLower(target), "lightning:"); ok {
		target = p
	}
	var raw string
	switch {
	case strings.HasPrefix(strings.ToLower(target), "lnurl1"):
		decoded, err := decodeLNURL(target)
		if err != nil {
			return nil, err
		}
		raw = decoded
	case strings.Contains(target, "@"):
		a, err := ParseAddress(target)
		if err != nil {
			return nil, err
		}
		raw = a.URL()
		if c.allowHTTP {
			raw = "http" + strings.TrimPrefix(raw, "https")
		}
	default:
		raw = target
	}
	u, err := c.checkURL(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrBadAddress, err)
	}
	return u, nil
}

// Address is a Lightning address (LUD-16).
type Address struct {
	User   string
	Domain string // may carry a port
}

// ParseAddress parses user@domain by the rule of a store's Lightning
// address (kassa.LightningAddressProblem): the user part of a-z, 0-9,
// '-', '_', '.' and '+', the domain a host name or IP with an optional
// port; both are folded to lower case. Spaces around it are ignored.
func ParseAddress(s string) (Address, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "@") {
		return Address{}, ErrBadAddress
	}
	if msg := kassa.LightningAddressProblem(s); msg != "" {
		return Address{}, fmt.Errorf("%w: %s", ErrBadAddress, msg)
	}
	user, domain, _ := strings.Cut(s, "@")
	return Address{User: strings.ToLower(user), Domain: strings.ToLower(domain)}, nil
}

// URL returns the address's pay request URL.
func (a Address) URL() string {
	scheme := "https"
	if strings.HasSuffix(strings.Split(a.Domain, ":")[0], ".onion") {
		scheme = "http"
	}
	return scheme + "://" + a.Domain + "/.well-known/lnurlp/" + a.User
}

// decodeLNURL decodes an LUD-01 bech32 string to the URL it holds.
func decodeLNURL(s string) (string, error) {
	hrp, data, err := bech32.DecodeNoLimit(s)
	if err != nil || hrp != "lnurl" {
		return "", fmt.Errorf("%w: not a valid lnurl1 string", ErrBadAddress)
	}
	raw, err := bech32.ConvertBits(data, 5, 8, false)
	if err != nil || !utf8.Valid(raw) {
		return "", fmt.Errorf("%w: not a valid lnurl1 string", ErrBadAddress)
	}
	return string(raw), nil
}

// EncodeLNURL encodes a URL as an LUD-01 bech32 string (upper case, as
// QR codes prefer).
func EncodeLNURL(rawURL string) (string, error) {
	data, err := bech32.ConvertBits([]byte(rawURL), 8, 5, true)
	if err != nil {
		return "", err
	}
	s, err := bech32.Encode("lnurl", data)
	if err != nil {
		return "", err
	}
	return strings.ToUpper(s), nil
}

// checkURL accepts absolute https URLs (http with AllowHTTP or for
// .onion hosts) without user information or fragment.
func (c *Client) checkURL(raw string) (*url.URL, error) {
	if len(raw) > MaxAddressLength {
		return nil, errors.New("URL too long")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("not a URL")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !c.allowHTTP && !strings.HasSuffix(u.Hostname(), ".onion") {
			return nil, errors.New("URL must use https")
		}
	default:
		return nil, fmt.Errorf("URL scheme %q is not https", u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" || u.User != nil || u.Opaque != "" {
		return nil, errors.New("URL has no host, or has a user name")
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// payRequestJSON is the wire form of a LUD-06 pay request. Amounts are
// JSON numbers; they are decoded as integers, never through float64.
type payRequestJSON struct {
	Tag            string      `json:"tag"`
	Callback       string      `json:"callback"`
	MinSendable    json.Number `json:"minSendable"`
	MaxSendable    json.Number `json:"maxSendable"`
	Metadata       string      `json:"metadata"`
	CommentAllowed json.Number `json:"commentAllowed"`
	Status         string      `json:"status"`
	Reason         string      `json:"reason"`
}

// FetchPayRequest resolves target (see URL) and returns its checked pay
// request.
func (c *Client) FetchPayRequest(ctx context.Context, target string) (*PayRequest, error) {
	u, err := c.URL(target)
	if err != nil {
		return nil, err
	}
	var w payRequestJSON
	if err := c.getJSON(ctx, u, &w); err != nil {
		return nil, err
	}
	if strings.EqualFold(w.Status, "ERROR") {
		return nil, fmt.Errorf("%w: %s", ErrServer, clip(w.Reason))
	}
	if w.Tag != "payRequest" {
		return nil, fmt.Errorf("%w: tag is %q, not payRequest", ErrBadPayRequest, clip(w.Tag))
	}
	minSendable, err := msat(w.MinSendable)
	if err != nil {
		return nil, fmt.Errorf("%w: minSendable: %s", ErrBadPayRequest, err)
	}
	maxSendable, err := msat(w.MaxSendable)
	if err != nil {
		return nil, fmt.Errorf("%w: maxSendable: %s", ErrBadPayRequest, err)
	}
	if minSendable < 1 || maxSendable < minSendable {
		return nil, fmt.Errorf("%w: minSendable %d and maxSendable %d do not make a range", ErrBadPayRequest, minSendable, maxSendable)
	}
	var entries [][]json.RawMessage
	if err := json.Unmarshal([]byte(w.Metadata), &entries); err != nil {
		return nil, fmt.Errorf("%w: metadata is not a JSON array of entries", ErrBadPayRequest)
	}
	callback, err := c.checkURL(w.Callback)
	if err != nil {
		return nil, fmt.Errorf("%w: callback: %s", ErrBadPayRequest, err)
	}
	comment := 0
	if w.CommentAllowed != "" {
		n, err := strconv.ParseInt(w.CommentAllowed.String(), 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: commentAllowed is not a count", ErrBadPayRequest)
		}
		comment = int(min(n, MaxCommentLength))
	}
	return &PayRequest{Callback: callback.String(), MinSendable: minSendable, MaxSendable: maxSendable, Metadata: w.Metadata, CommentAllowed: comment}, nil
}

// invoiceJSON is the wire form of the callback's answer.
type invoiceJSON struct {
	PR     string `json:"pr"`
	Status string `json:"status"`
	Reason string `json:"reason"`
}

// Invoice asks p's callback for an invoice of amount with comment (cut
// to what p allows; left out when it allows none) and checks it: it must
// be a BOLT11 invoice for the client's network, for exactly amount, and
// its description hash, when it has one, must be the SHA-256 of p's
// metadata.
func (c *Client) Invoice(ctx context.Context, p *PayRequest, amount kassa.MSat, comment string) (*Invoice, error) {
	if amount < p.MinSendable {
		return nil, fmt.Errorf("%w: %d msat is below %d msat", ErrAmountBelowMin, amount, p.MinSendable)
	}
	if amount > p.MaxSendable {
		return nil, fmt.Errorf("%w: %d msat is above %d msat", ErrAmountAboveMax, amount, p.MaxSendable)
	}
	u, err := c.checkURL(p.Callback)
	if err != nil {
		return nil, fmt.Errorf("%w: callback: %s", ErrBadPayRequest, err)
	}
	q := u.Query()
	q.Set("amount", strconv.FormatInt(int64(amount), 10))
	if comment = CutComment(comment, p.CommentAllowed); comment != "" {
		q.Set("comment", comment)
	}
	u.RawQuery = q.Encode()
	var w invoiceJSON
	if err := c.getJSON(ctx, u, &w); err != nil {
		return nil, err
	}
	if strings.EqualFold(w.Status, "ERROR") {
		return nil, fmt.Errorf("%w: %s", ErrServer, clip(w.Reason))
	}
	return c.CheckInvoice(w.PR, amount, p.Metadata)
}

// CheckInvoice decodes pr and checks it against what was asked: network,
// exact amount, and the description hash against metadata when the
// invoice has one.
func (c *Client) CheckInvoice(pr string, amount kassa.MSat, metadata string) (*Invoice, error) {
	pr = strings.TrimSpace(pr)
	if p, ok := strings.CutPrefix(strings.ToLower(pr), "lightning:"); ok {
		pr = p
	}
	if pr == "" {
		return nil, fmt.Errorf("%w: no invoice in the answer", ErrBadInvoice)
	}
	inv, err := bolt11.Decode(pr, c.net)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrBadInvoice, clip(err.Error()))
	}
	if inv.MilliSat == nil {
		return nil, fmt.Errorf("%w: the invoice has no amount (asked for %d msat)", ErrBadInvoice, amount)
	}
	if got := kassa.MSat(*inv.MilliSat); got != amount {
		return nil, fmt.Errorf("%w: the invoice is for %d msat, not the %d msat asked for", ErrBadInvoice, got, amount)
	}
	if inv.DescriptionHash != nil {
		want := sha256.Sum256([]byte(metadata))
		if *inv.DescriptionHash != want {
			return nil, fmt.Errorf("%w: its description hash is not the hash of the pay request's metadata", ErrBadInvoice)
		}
	}
	if inv.PaymentHash == nil || inv.Destination == nil {
		return nil, fmt.Errorf("%w: the invoice has no payment hash or payee", ErrBadInvoice)
	}
	dest := hex.EncodeToString(inv.Destination.SerializeCompressed())
	return &Invoice{
		PaymentRequest: pr,
		PaymentHash:    hex.EncodeToString(inv.PaymentHash[:]),
		Amount:         amount,
		Destination:    dest,
		ExpiresAt:      inv.Timestamp.Add(inv.Expiry()),
		Payee:          PayeeOf(inv),
	}, nil
}

// PayeeOf is the node, final CLTV delta and route hints of a decoded
// invoice.
func PayeeOf(inv *bolt11.Invoice) kassa.Payee {
	var p kassa.Payee
	if inv.Destination != nil {
		p.Node = hex.EncodeToString(inv.Destination.SerializeCompressed())
	}
	p.FinalCLTVDelta = inv.MinFinalCLTVExpiry()
	for _, hint := range inv.RouteHints {
		var hops []kassa.HopHint
		for _, h := range hint {
			if h.NodeID == nil {
				continue
			}
			hops = append(hops, kassa.HopHint{
				NodeID: hex.EncodeToString(h.NodeID.SerializeCompressed()), ChannelID: h.ChannelID,
				FeeBaseMSat: h.FeeBaseMSat, FeeProportionalMillionths: h.FeeProportionalMillionths,
				CLTVExpiryDelta: h.CLTVExpiryDelta,
			})
		}
		if len(hops) > 0 {
			p.RouteHints = append(p.RouteHints, hops)
		}
	}
	return p
}

// CutComment cuts comment to at most allowed characters (LUD-12 counts
// characters), and to nothing when allowed is zero.
func CutComment(comment string, allowed int) string {
	if allowed <= 0 {
		return ""
	}
	comment = strings.ToValidUTF8(strings.TrimSpace(comment), "")
	if utf8.RuneCountInString(comment) <= allowed {
		return comment
	}
	n := 0
	for i := range comment {
		if n == allowed {
			return comment[:i]
		}
		n++
	}
	return comment
}

// getJSON GETs u and decodes a JSON object answered with status 200. An
// LNURL error object may come with any status.
func (c *Client) getJSON(ctx context.Context, u *url.URL, into any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrServer, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s: %s", ErrServer, u.Host, clip(unwrap(err).Error()))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody+1))
	if err != nil {
		return fmt.Errorf("%w: %s: reading the answer: %s", ErrServer, u.Host, clip(err.Error()))
	}
	if len(body) > MaxResponseBody {
		return fmt.Errorf("%w: %s answered more than %d bytes", ErrServer, u.Host, MaxResponseBody)
	}
	var status struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
	}
	if json.Unmarshal(body, &status) == nil && strings.EqualFold(status.Status, "ERROR") {
		return fmt.Errorf("%w: %s", ErrServer, clip(status.Reason))
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s answered %s", ErrServer, u.Host, resp.Status)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("%w: %s answered something that is not a JSON object", ErrServer, u.Host)
	}
	return nil
}

// msat parses a JSON number of millisatoshis: a whole number from 0 to
// every bitcoin there is.
func msat(n json.Number) (kassa.MSat, error) {
	v, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number of millisatoshis", clip(n.String()))
	}
	if v < 0 || v > int64(kassa.MaxSats.MSat()) {
		return 0, fmt.Errorf("%d is out of range", v)
	}
	return kassa.MSat(v), nil
}

// clip shortens a server's text before it goes into an error message.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return s[:cut] + "…"
	}
	return s
}

// unwrap strips the `Get "<url>": ` that *url.Error adds.
func unwrap(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
