package rates

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// Provider fetches the price of one bitcoin from one public source.
type Provider interface {
	// Name is the provider's lower-case name, as written in --rates
	// ("kraken").
	Name() string
	// Quotes lists the fiat currencies the provider quotes bitcoin in;
	// Fetch is asked for no others.
	Quotes() []kassa.Currency
	// Fetch returns the price of one bitcoin in each of currencies that
	// the provider quotes; currencies it does not quote are left out.
	// When only some currencies fail, it returns the rates it got together
	// with an error that says what is missing.
	Fetch(ctx context.Context, currencies []kassa.Currency) (map[kassa.Currency]decimal.Decimal, error)
}

// ErrTimeout says that a provider did not answer in time.
var ErrTimeout = errors.New("timed out")

// HTTPError is a provider's answer with a status other than 200 OK.
type HTTPError struct {
	StatusCode int
	// Message is the provider's own error text from the body, if any.
	Message string
	// RetryAfter is how long the provider asked callers to wait (the
	// Retry-After header in seconds), zero when it did not say.
	RetryAfter time.Duration
}

// Error says the status, the provider's message and how long to wait:
// "HTTP 429 Too Many Requests: Rate limit exceeded (retry after 30s)".
func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return msg
}

// userAgent identifies Kassa to the public APIs; some refuse requests
// without one.
const userAgent = "kassa-rates/1 (+https://github.com/kassapay/kassa)"

// maxBody bounds what is read of an answer: a ticker is a few kilobytes.
const maxBody = 1 << 20

// defaultClient is used when a constructor is given no client. Each
// Fetch also runs under its caller's deadline.
var defaultClient = &http.Client{Timeout: 30 * time.Second}

// httpSource is what the four HTTP providers share: a base URL, a client
// and the way to GET and decode a JSON answer.
type httpSource struct {
	baseURL string
	client  *http.Client
	// errorText extracts the provider's error message from a body.
	errorText func(body []byte) string
}

func newHTTPSource(baseURL, defaultURL string, client *http.Client, errorText func([]byte) string) httpSource {
	if baseURL == "" {
		baseURL = defaultURL
	}
	if client == nil {
		client = defaultClient
	}
	return httpSource{baseURL: strings.TrimRight(baseURL, "/"), client: client, errorText: errorText}
}

// getJSON GETs path (with its query) below the base URL and decodes the
// JSON answer into v, keeping numbers as json.Number so that they reach
// decimals without passing through float64. A status other than 200
// gives an *HTTPError. Errors never contain the URL, which may carry a
// proxy's credentials.
func (h httpSource) getJSON(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.baseURL+path, nil)
	if err != nil {
		return errors.New("invalid base URL")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	resp, err := h.client.Do(req)
	if err != nil {
		return transportError(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return transportError(err)
	}
	if resp.StatusCode != http.StatusOK {
		e := &HTTPError{StatusCode: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
		if h.errorText != nil {
			e.Message = cleanMessage(h.errorText(body))
		}
		return e
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("malformed answer: %w", err)
	}
	return nil
}

// transportError describes a failed request without its URL or the
// provider's address.
func transportError(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	var nerr net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &nerr) && nerr.Timeout() {
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	// "dial tcp 203.0.113.9:443: connect: connection refused" becomes
	// "dial: connect: connection refused": callers see these messages.
	var operr *net.OpError
	if errors.As(err, &operr) && operr.Err != nil {
		err = fmt.Errorf("%s: %w", operr.Op, operr.Err)
	}
	return fmt.Errorf("request failed: %w", err)
}

// maxRetryAfter caps how long a provider may ask to be left alone.
const maxRetryAfter = 10 * time.Minute

// retryAfter reads a Retry-After header given in seconds. The HTTP-date
// form is ignored: it would need the wall clock.
func retryAfter(h string) time.Duration {
	secs, err := strconv.Atoi(strings.TrimSpace(h))
	if err != nil || secs <= 0 {
		return 0
	}
	return min(time.Duration(secs)*time.Second, maxRetryAfter)
}

// cleanMessage makes a provider's error text safe to log and to show:
// one line of printable characters, at most 200 of them.
func cleanMessage(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return ' '
		}
		if !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// maxRate bounds a plausible price of one bitcoin in any currency.
var maxRate = decimal.New(1, 15)

// maxPricePlaces bounds the decimal places of a price.
const maxPricePlaces = 18

// parseRate reads a price given as a JSON number or a JSON string holding
// a decimal number, straight into a decimal: never through float64.
func parseRate(raw json.RawMessage) (decimal.Decimal, error) {
	s := strings.TrimSpace(string(raw))
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(raw, &s); err != nil {
			return decimal.Zero, errors.New("malformed price")
		}
		s = strings.TrimSpace(s)
	}
	if s == "" || s == "null" {
		return decimal.Zero, errors.New("no price")
	}
	if len(s) > 40 {
		return decimal.Zero, errors.New("price is too long")
	}
	if s == "" {
		return decimal.Zero, errors.New("empty price")
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Zero, fmt.Errorf("price %q is not a number", cleanMessage(s))
	}
	// Bound the exponent before comparing: "1e-9999" is a number, but
	// no price, and rescaling it would be costly.
	if exp := d.Exponent(); exp < -maxPricePlaces || exp > 15 || !d.IsPositive() || d.GreaterThanOrEqual(maxRate) {
		return decimal.Zero, fmt.Errorf("implausible price %q", cleanMessage(s))
	}
	return d, nil
}

// quotedOf returns the currencies of cs that quotes lists, each once, in
// the order of cs.
func quotedOf(cs, quotes []kassa.Currency) []kassa.Currency {
	var out []kassa.Currency
	seen := map[kassa.Currency]bool{}
	for _, c := range cs {
		if c.IsFiat() && slices.Contains(quotes, c) && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// PairErrors is the error of a Fetch that failed for some currencies:
// why each of them is missing. Currencies neither in the answer nor here
// are ones the provider does not quote.
type PairErrors map[kassa.Currency]error

// Error lists the failures by currency; currencies that failed alike
// share one entry ("EUR, USD: HTTP 429 Too Many Requests").
func (e PairErrors) Error() string {
	var msgs []string
	byMsg := map[string][]string{}
	for _, c := range e.currencies() {
		msg := e[c].Error()
		if _, ok := byMsg[msg]; !ok {
			msgs = append(msgs, msg)
		}
		byMsg[msg] = append(byMsg[msg], string(c))
	}
	parts := make([]string, len(msgs))
	for i, msg := range msgs {
		parts[i] = strings.Join(byMsg[msg], ", ") + ": " + msg
	}
	return strings.Join(parts, "; ")
}

// Unwrap returns the failures, so that errors.As finds an *HTTPError.
func (e PairErrors) Unwrap() []error {
	var errs []error
	for _, c := range e.currencies() {
		errs = append(errs, e[c])
	}
	return errs
}

// currencies returns the currencies of e in a stable order.
func (e PairErrors) currencies() []kassa.Currency {
	cs := make([]kassa.Currency, 0, len(e))
	for c := range e {
		cs = append(cs, c)
	}
	slices.Sort(cs)
	return cs
}

// missingError returns the PairErrors of the currencies asked for but
// absent from got, or nil when none failed.
func missingError(asked []kassa.Currency, got map[kassa.Currency]decimal.Decimal, why map[kassa.Currency]error) error {
	pe := PairErrors{}
	for _, c := range asked {
		if _, ok := got[c]; ok {
			continue
		}
		if err := why[c]; err != nil {
			pe[c] = err
		}
	}
	if len(pe) == 0 {
		return nil
	}
	return pe
}

// jsonString returns raw as a string when it is a JSON string, else its
// compact JSON text.
func jsonString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
