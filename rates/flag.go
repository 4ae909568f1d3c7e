package rates

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kassapay/kassa"
)

// Backend is the rates that FromFlag builds: a kassa.Rates with the loop
// that keeps it fresh. Start Run in its own goroutine.
type Backend interface {
	kassa.Rates
	// Run keeps the rates fresh until ctx ends.
	Run(ctx context.Context)
}

var _ Backend = (*Service)(nil)

// constructors builds each provider by name.
var constructors = map[string]func(baseURL string, client *http.Client) Provider{
	"kraken":    func(u string, c *http.Client) Provider { return NewKraken(u, c) },
	"coinbase":  func(u string, c *http.Client) Provider { return NewCoinbase(u, c) },
	"bitstamp":  func(u string, c *http.Client) Provider { return NewBitstamp(u, c) },
	"coingecko": func(u string, c *http.Client) Provider { return NewCoinGecko(u, c) },
}

// ProviderNames lists the names NewProvider and FromFlag accept.
func ProviderNames() []string {
	names := make([]string, 0, len(constructors))
	for name := range constructors {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// NewProvider returns the provider called name (any letter case) at
// baseURL (its public address when empty) using client.
func NewProvider(name, baseURL string, client *http.Client) (Provider, error) {
	build, ok := constructors[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return nil, fmt.Errorf("unknown rate provider %q: use one of %s", name, strings.Join(ProviderNames(), ", "))
	}
	if baseURL != "" {
		if err := checkBaseURL(baseURL); err != nil {
			return nil, fmt.Errorf("rate provider %s: %w", name, err)
		}
	}
	return build(baseURL, client), nil
}

// checkBaseURL accepts an absolute http or https URL without query.
func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("base URL %q must be an http or https address without query", redact(raw))
	}
	return nil
}

// redact hides a password in a URL before it is shown.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(unparsable)"
}

// FromFlag builds the rates named by the --rates flag: "fixed" (the
// simulation's constant rates) or a comma-separated list of providers,
// such as "kraken,coinbase,bitstamp", combined by the median rule of the
// package doc. baseURLs optionally overrides a provider's address by
// name (for tests and proxies); client may be nil. Names are read in any
// letter case; unknown, repeated or missing names are errors.
func FromFlag(spec string, baseURLs map[string]string, client *http.Client, clock kassa.Clock, log *slog.Logger) (Backend, error) {
	return FromOptions(spec, Options{BaseURLs: baseURLs, Client: client, Clock: clock, Logger: log})
}

// Options are the settings of FromOptions beyond the provider list.
type Options struct {
	BaseURLs map[string]string
	Client   *http.Client
	Clock    kassa.Clock
	Logger   *slog.Logger
	// Refresh and MaxAge override DefaultRefresh and DefaultMaxAge.
	Refresh, MaxAge time.Duration
}

// FromOptions is FromFlag with every setting of the service.
func FromOptions(spec string, o Options) (Backend, error) {
	baseURLs, client, clock, log := o.BaseURLs, o.Client, o.Clock, o.Logger
	usage := "use fixed or a comma-separated list of " + strings.Join(ProviderNames(), ", ")
	for name := range baseURLs {
		if _, ok := constructors[strings.ToLower(name)]; !ok {
			return nil, fmt.Errorf("rate provider base URL for unknown provider %q: %s", name, usage)
		}
	}
	spec = strings.ToLower(strings.TrimSpace(spec))
	switch spec {
	case "":
		return nil, fmt.Errorf("--rates is empty: %s", usage)
	case "fixed":
		return Fixed{}, nil
	}
	urls := map[string]string{}
	for name, u := range baseURLs {
		urls[strings.ToLower(name)] = u
	}
	var names []string
	var providers []Provider
	for _, name := range strings.Split(spec, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "":
			return nil, fmt.Errorf("--rates %q has an empty provider name: %s", spec, usage)
		case name == "fixed":
			return nil, fmt.Errorf("--rates: fixed cannot be combined with providers")
		case slices.Contains(names, name):
			return nil, fmt.Errorf("--rates names %s twice", name)
		case constructors[name] == nil:
			return nil, fmt.Errorf("--rates: unknown rate provider %q: %s", name, usage)
		}
		p, err := NewProvider(name, urls[name], client)
		if err != nil {
			return nil, fmt.Errorf("--rates: %w", err)
		}
		names = append(names, name)
		providers = append(providers, p)
	}
	return New(Config{Providers: providers, Clock: clock, Logger: log, Refresh: o.Refresh, MaxAge: o.MaxAge}), nil
}
