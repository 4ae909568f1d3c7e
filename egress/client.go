package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kassapay/kassa"
)

// Limits and defaults.
const (
	// DefaultTimeout bounds one request, from resolving the host to
	// reading the response: the 5 seconds of the URL validation (docs/api.md, Webhooks).
	DefaultTimeout = 5 * time.Second
	// MaxResponseBody is how much of a response body is read and kept.
	MaxResponseBody = 4 << 10
	// MaxResponseHeaderBytes bounds the response headers.
	MaxResponseHeaderBytes = 64 << 10
	// DefaultUserAgent is sent when Config.UserAgent is empty.
	DefaultUserAgent = "Kassa-Webhooks/1"
	// DefaultAppName is the app of a validation request when none is given.
	DefaultAppName = "Kassa"
)

// Resolver looks up the addresses of a host name. *net.Resolver
// implements it.
type Resolver interface {
	// LookupNetIP returns the addresses of host; network is "ip".
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config configures a Client. The zero value allows plain http; use
// DefaultConfig for production values.
type Config struct {
	// AllowPrivate allows URLs whose host is or resolves to a loopback,
	// private, link-local or other non-public address (the --dev flag).
	AllowPrivate bool
	// RequireHTTPS refuses http URLs (true outside --dev).
	RequireHTTPS bool
	// Timeout bounds each request; zero means DefaultTimeout.
	Timeout time.Duration
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
	// UserAgent is sent with every request; empty means DefaultUserAgent.
	UserAgent string
	// Clock stamps validation requests; nil means the system clock.
	// Durations are always measured on the system's monotonic clock.
	Clock kassa.Clock
}

// DefaultConfig returns the production configuration: https only, public
// addresses only, DefaultTimeout.
func DefaultConfig() Config {
	return Config{RequireHTTPS: true, Timeout: DefaultTimeout}
}

// Client sends webhook requests. It is safe for concurrent use.
type Client struct {
	allowPrivate bool
	requireHTTPS bool
	timeout      time.Duration
	resolver     Resolver
	userAgent    string
	clock        kassa.Clock
	dialer       *net.Dialer
	transport    *http.Transport
	http         *http.Client
}

// New returns a Client for cfg, with zero fields set to their defaults.
func New(cfg Config) *Client {
	c := &Client{
		allowPrivate: cfg.AllowPrivate,
		requireHTTPS: cfg.RequireHTTPS,
		timeout:      cfg.Timeout,
		resolver:     cfg.Resolver,
		userAgent:    cfg.UserAgent,
		clock:        cfg.Clock,
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.resolver == nil {
		c.resolver = net.DefaultResolver
	}
	if c.userAgent == "" {
		c.userAgent = DefaultUserAgent
	}
	if c.clock == nil {
		c.clock = kassa.SystemClock{}
	}
	c.dialer = &net.Dialer{KeepAlive: 30 * time.Second, Control: c.control}
	c.transport = &http.Transport{
		Proxy:                  nil, // a proxy would connect where we cannot check
		DialContext:            c.dialContext,
		ForceAttemptHTTP2:      true,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    c.timeout,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
	}
	c.http = &http.Client{
		Transport: c.transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return c
}

// CloseIdleConnections closes the connections kept open for reuse.
func (c *Client) CloseIdleConnections() { c.transport.CloseIdleConnections() }

// Attempt is the outcome of one delivery request, as stored and shown in
// the dashboard.
type Attempt struct {
	// StatusCode is the response status, 0 when there was no response.
	StatusCode int
	// ResponseBody is the first MaxResponseBody bytes of the response body.
	ResponseBody []byte
	// Duration is the time from sending to having read ResponseBody.
	Duration time.Duration
	// Err says why the attempt failed, for a person; empty when OK.
	Err string
	// OK reports a 2xx response.
	OK bool
}

// Deliver sends one POST of body to rawURL with headers and Content-Type
// application/json, and reports what happened. It never retries. A
// response other than 2xx, a refused URL and a transport failure all give
// OK false and an Err that says what happened.
func (c *Client) Deliver(ctx context.Context, rawURL string, headers http.Header, body []byte) Attempt {
	a, err := c.post(ctx, rawURL, headers, body)
	if err != nil {
		return a
	}
	a.OK = a.StatusCode >= 200 && a.StatusCode <= 299
	if !a.OK {
		a.Err = "webhook URL answered " + statusText(a.StatusCode)
		if isRedirect(a.StatusCode) {
			a.Err += "; redirects are not followed"
		}
	}
	return a
}

// ValidationPurpose is the purpose of a URL validation request.
const ValidationPurpose = "webhook_url_validation"

// ValidationMessage is the fixed message of a URL validation request.
const ValidationMessage = "This is a test request to check that this URL can receive webhooks. " +
	"It is not an event and needs no action. Answer with a 2xx status, 401 or 403."

// ValidationRequest is the body of the unsigned POST that checks a URL
// before a webhook is saved.
type ValidationRequest struct {
	// App names the service that sends the request.
	App string `json:"app"`
	// Message is ValidationMessage.
	Message string `json:"message"`
	// Purpose is ValidationPurpose.
	Purpose string `json:"purpose"`
	// Timestamp is when the request was made, RFC 3339 in UTC.
	Timestamp string `json:"timestamp"`
}

// Validate checks rawURL as the URL validation of docs/api.md (Webhooks) does before a webhook
// is registered: one unsigned POST of a ValidationRequest naming appName
// (DefaultAppName when empty), answered within the timeout. A 2xx status,
// 401 and 403 pass. Anything else (another status, such as 404, 5xx or a
// redirect, a timeout, a DNS failure, a refused connection, a URL that
// fails CheckURL or points to a non-public address) returns a
// kassa.Invalid error whose message says what happened. The Attempt
// describes the request either way.
func (c *Client) Validate(ctx context.Context, rawURL, appName string) (Attempt, error) {
	if appName == "" {
		appName = DefaultAppName
	}
	body, err := json.Marshal(ValidationRequest{
		App:       appName,
		Message:   ValidationMessage,
		Purpose:   ValidationPurpose,
		Timestamp: c.clock.Now().UTC().Format(time.RFC3339),
	})
	if err != nil {
		return Attempt{Err: "internal error"}, fmt.Errorf("egress: encode validation request: %w", err)
	}
	a, err := c.post(ctx, rawURL, nil, body)
	if err != nil {
		return a, err
	}
	a.OK = a.StatusCode >= 200 && a.StatusCode <= 299
	if a.OK || a.StatusCode == http.StatusUnauthorized || a.StatusCode == http.StatusForbidden {
		return a, nil
	}
	a.Err = "webhook URL answered " + statusText(a.StatusCode)
	if isRedirect(a.StatusCode) {
		a.Err += "; redirects are not followed, register the final URL"
	} else {
		a.Err += "; it must answer with a 2xx status, 401 or 403"
	}
	return a, kassa.Errorf(kassa.Invalid, "%s", a.Err)
}

// errTimedOut is the cause of a request context that ran out of time.
var errTimedOut = errors.New("egress: request timed out")

// post sends one POST and reads the start of the response. Its error,
// returned with an Attempt whose Err is the error's message, is a
// kassa.Invalid *kassa.Error when the request could not be sent or
// answered.
func (c *Client) post(ctx context.Context, rawURL string, headers http.Header, body []byte) (Attempt, error) {
	if err := c.CheckURL(rawURL); err != nil {
		return Attempt{Err: kassa.ErrorMessage(err)}, err
	}
	// The duration counts from before the deadline is set, so a request
	// cut by the timeout never reports less than the timeout (it did,
	// by the few milliseconds between the two under load).
	start := time.Now()
	ctx, cancel := context.WithTimeoutCause(ctx, c.timeout, errTimedOut)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		msg := "webhook URL is not valid"
		return Attempt{Err: msg}, kassa.Errorf(kassa.Invalid, "%s", msg)
	}
	for name, values := range headers {
		key := http.CanonicalHeaderKey(name)
		req.Header[key] = append(slices.Clone(req.Header[key]), values...)
	}
	req.Header.Set("Content-Type", "application/json")
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", c.userAgent)
	}

	resp, err := c.http.Do(req)
	if err != nil {
		msg := c.describe(ctx, err)
		return Attempt{Duration: time.Since(start), Err: msg}, kassa.Errorf(kassa.Invalid, "%s", msg)
	}
	defer resp.Body.Close()
	// A body that fails or stops early still leaves the status, which
	// decides.
	head, _ := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody))
	return Attempt{StatusCode: resp.StatusCode, ResponseBody: head, Duration: time.Since(start)}, nil
}

// describe says for a person why a request failed.
func (c *Client) describe(ctx context.Context, err error) string {
	if errors.Is(context.Cause(ctx), errTimedOut) {
		return "webhook URL did not answer within " + c.timeout.String()
	}
	var blocked *blockedError
	if errors.As(err, &blocked) {
		return blocked.Error()
	}
	var unresolved *resolveError
	if errors.As(err, &unresolved) {
		return unresolved.Error()
	}
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		return "webhook URL's TLS certificate was not accepted: " + certErr.Err.Error()
	}
	var recordErr tls.RecordHeaderError
	// net/http turns a record header that looks like HTTP into an error
	// that only its text identifies.
	if errors.As(err, &recordErr) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		return "webhook URL did not answer with TLS; check whether it should be http"
	}
	switch {
	case errors.Is(err, context.Canceled):
		return "request to webhook URL was canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "webhook URL did not answer in time"
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		reason := opErr.Err.Error()
		var errno syscall.Errno
		if errors.As(opErr.Err, &errno) {
			reason = errno.Error()
		}
		if opErr.Addr != nil {
			return "cannot connect to " + opErr.Addr.String() + ": " + reason
		}
		return "cannot connect: " + reason
	}
	var netErr net.Error
	switch {
	case errors.As(err, &netErr) && netErr.Timeout():
		return "webhook URL did not answer in time"
	case errors.Is(err, syscall.ECONNRESET):
		return "webhook URL reset the connection without answering"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "webhook URL closed the connection without answering"
	}
	return "cannot reach webhook URL: " + unwrapURLError(err).Error()
}

// unwrapURLError strips the `Post "<url>": ` that *url.Error adds, since
// the merchant knows the URL.
func unwrapURLError(err error) error {
	type unwrapper interface{ Unwrap() error }
	if u, ok := err.(unwrapper); ok {
		if inner := u.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}

func statusText(code int) string {
	if text := http.StatusText(code); text != "" {
		return strconv.Itoa(code) + " " + text
	}
	return strconv.Itoa(code)
}

func isRedirect(code int) bool { return code >= 300 && code <= 399 }
