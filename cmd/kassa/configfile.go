package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	chainrpc "github.com/kassapay/kassa/chain/rpc"
	"github.com/kassapay/kassa/dashboard"
	"github.com/kassapay/kassa/lightning/lnd"
)

// configFlag names the configuration file. It is a flag and a variable
// (KASSA_CONFIG) but no key of the file: a file cannot name another.
const configFlag = "config"

// maxConfigSize bounds the configuration file; a real one is a few
// hundred bytes.
const maxConfigSize = 1 << 20

// configSources says where each setting that is not a default came
// from: "--name" for the command line, "KASSA_NAME" for the environment,
// "FILE:LINE" for the configuration file. The keys are flag names.
type configSources map[string]string

// envName is the environment variable of a flag.
func envName(flagName string) string {
	return "KASSA_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// newConfigFlags returns the flag set of `kassa serve` and `kassa config
// check`: every setting of c, and --config, which sets *file.
func newConfigFlags(c *Config, name string, file *string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	c.flags(fs)
	fs.StringVar(file, configFlag, "", "read settings from this YAML `FILE` (keys are the flag names); flags and KASSA_* variables win over it")
	return fs
}

// loadConfig parses args into c and fills every setting the command line
// did not give from its KASSA_* variable, then every one still unset from
// the configuration file (--config or KASSA_CONFIG): flag > environment >
// file > default. It then validates the result. Every error names its
// key and where the value came from; all of them are reported at once.
// header is the first line of the usage text.
func (c *Config) load(name, header string, args []string, stdout, stderr io.Writer) (file string, src configSources, err error) {
	fs := newConfigFlags(c, name, &file)
	usage := func(w io.Writer) {
		fmt.Fprintln(w, header+"\n\nSettings come from flags, then KASSA_<NAME> variables, then the --config file\n(NAME: value, keys are the flag names), then the defaults.\n\nflags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	rest, err := parseFlags(fs, args, usage, stdout, stderr)
	if err != nil {
		return "", nil, err
	}
	if len(rest) > 0 {
		return "", nil, fmt.Errorf("%s takes no arguments, got %q", name, rest)
	}
	src = configSources{}
	fs.Visit(func(f *flag.Flag) { src[f.Name] = "--" + f.Name })
	errs := applyEnv(fs, src)
	if file != "" {
		errs = append(errs, applyConfigFile(fs, file, src)...)
	}
	delete(src, configFlag)
	c.devDefaults(src)
	if len(errs) == 0 {
		errs = c.validate(src)
	}
	if len(errs) > 0 {
		return file, src, configError(errs)
	}
	return file, src, nil
}

// configError joins the errors of a configuration, one a line.
type configError []error

func (e configError) Error() string {
	lines := make([]string, len(e))
	for i, err := range e {
		lines[i] = err.Error()
	}
	if len(lines) == 1 {
		return "configuration: " + lines[0]
	}
	return "configuration has " + fmt.Sprint(len(lines)) + " errors:\n  " + strings.Join(lines, "\n  ")
}

// applyEnv sets every flag not in src from its KASSA_<NAME> variable and
// records it in src.
func applyEnv(fs *flag.FlagSet, src configSources) []error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if _, set := src[f.Name]; set {
			return
		}
		name := envName(f.Name)
		if v, ok := os.LookupEnv(name); ok {
			if err := setFlag(f, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s=%q: %w", f.Name, name, v, err))
				return
			}
			src[f.Name] = name
		}
	})
	return errs
}

// setFlag sets f to value; a parse error of the flag package says what
// kind of value the key wants.
func setFlag(f *flag.Flag, value string) error {
	err := f.Value.Set(value)
	if err == nil {
		return nil
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return err
	}
	switch g.Get().(type) {
	case time.Duration:
		return errors.New("want a duration such as 90s, 15m or 1h30m")
	case bool:
		return errors.New("want true or false")
	case int, int64, uint, uint64:
		return errors.New("want a whole number")
	case float64:
		return errors.New("want a number")
	}
	return err
}

// repeatable says whether a flag takes a list (a YAML sequence in the
// file).
func repeatable(f *flag.Flag) bool {
	_, ok := f.Value.(*sigAliases)
	return ok
}

// applyConfigFile reads the YAML file at path: a mapping of flag names to
// values, written as they are on the command line (15m, 1GiB, true), or
// a list for a repeatable flag. Every key is checked, even those a flag
// or variable overrides; only the keys not in src are set.
func applyConfigFile(fs *flag.FlagSet, path string, src configSources) []error {
	f, err := os.Open(path)
	if err != nil {
		return []error{fmt.Errorf("config: %w", err)}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return []error{fmt.Errorf("config: read %s: %w", path, err)}
	}
	if len(data) > maxConfigSize {
		return []error{fmt.Errorf("config: %s is larger than %d bytes", path, maxConfigSize)}
	}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // an empty file sets nothing
		}
		return []error{fmt.Errorf("config: %s: %v", path, strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return []error{fmt.Errorf("config: %s:%d: want `key: value` lines at the top level (keys are the flag names)", path, root.Line)}
	}
	var errs []error
	seen := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		at := fmt.Sprintf("%s:%d", path, k.Line)
		key := k.Value
		if k.Kind != yaml.ScalarNode {
			errs = append(errs, fmt.Errorf("%s: a key must be a flag name", at))
			continue
		}
		fl := fs.Lookup(key)
		if fl == nil || key == configFlag {
			msg := fmt.Sprintf("%s: unknown key %q", at, key)
			if key == configFlag {
				msg = fmt.Sprintf("%s: key %q: a configuration file cannot name another", at, key)
			} else if near := suggestKey(fs, key); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", near)
			}
			errs = append(errs, errors.New(msg))
			continue
		}
		if line, dup := seen[key]; dup {
			errs = append(errs, fmt.Errorf("%s: key %q is given twice (first on line %d)", at, key, line))
			continue
		}
		seen[key] = k.Line
		var values []string
		switch {
		case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
			errs = append(errs, fmt.Errorf("%s: %s: no value (remove the key to keep the default)", at, key))
			continue
		case v.Kind == yaml.ScalarNode:
			values = []string{v.Value}
		case v.Kind == yaml.SequenceNode && repeatable(fl):
			bad := false
			for _, item := range v.Content {
				if item.Kind != yaml.ScalarNode {
					bad = true
				}
				values = append(values, item.Value)
			}
			if bad {
				errs = append(errs, fmt.Errorf("%s: %s: want a list of names", at, key))
				continue
			}
		case v.Kind == yaml.SequenceNode:
			errs = append(errs, fmt.Errorf("%s: %s takes one value, not a list", at, key))
			continue
		default:
			errs = append(errs, fmt.Errorf("%s: %s takes a value, not a mapping (keys are flat, e.g. invoice-expiry: 15m)", at, key))
			continue
		}
		if _, set := src[key]; set {
			// The flag or the variable wins; the file's value is checked
			// all the same, on a copy, so that a bad file is never hidden.
			if err := checkValue(fl, values); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %w", at, key, err))
			}
			continue
		}
		for _, value := range values {
			if err := setFlag(fl, value); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %q: %w", at, key, value, err))
				break
			}
		}
		src[key] = at
	}
	return errs
}

// checkValue parses values with a fresh flag of fl's kind, leaving fl as
// it is.
func checkValue(fl *flag.Flag, values []string) error {
	probe := flag.NewFlagSet("probe", flag.ContinueOnError)
	var c Config
	c.flags(probe)
	p := probe.Lookup(fl.Name)
	if p == nil {
		return nil
	}
	for _, v := range values {
		if err := setFlag(p, v); err != nil {
			return fmt.Errorf("%q: %w", v, err)
		}
	}
	return nil
}

// suggestKey returns the flag name closest to key, or "" when none is
// close: it forgives underscores, a KASSA_ prefix, case, a word added or
// left out at the end, and up to a third of the letters (at most 3) wrong.
func suggestKey(fs *flag.FlagSet, key string) string {
	norm := strings.ToLower(strings.ReplaceAll(key, "_", "-"))
	norm = strings.TrimPrefix(norm, "kassa-")
	best, bestDist := "", 0
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == configFlag {
			return
		}
		d := editDistance(norm, f.Name)
		if len(norm) >= 4 && (strings.HasPrefix(norm, f.Name) || strings.HasPrefix(f.Name, norm)) {
			d = min(d, 1) // listen-addr, invoice
		}
		if best == "" || d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	limit := min(3, max(1, len(norm)/3))
	if bestDist <= limit {
		return best
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// validate checks the values that parse but make no sense, each error
// naming the key and where its value came from.
func (c *Config) validate(src configSources) []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		from := src[key]
		if from == "" {
			from = "default"
		}
		errs = append(errs, fmt.Errorf("%s: %s (from %s)", key, fmt.Sprintf(format, args...), from))
	}
	if strings.TrimSpace(c.Data) == "" {
		bad("data", "must name a directory")
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		bad("listen", "%q is not HOST:PORT", c.Listen)
	}
	if c.DebugListen != "" {
		if _, _, err := net.SplitHostPort(c.DebugListen); err != nil {
			bad("debug-listen", "%q is not HOST:PORT", c.DebugListen)
		} else if !c.DebugListenAllowPublic {
			if _, err := loopbackAddr(context.Background(), c.DebugListen, net.DefaultResolver.LookupNetIP); err != nil {
				bad("debug-listen", "%v", err)
			}
		}
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			bad("metrics-listen", "%q is not HOST:PORT", c.MetricsListen)
		} else if !c.MetricsListenAllowPublic {
			if _, err := metricsScope.check(context.Background(), c.MetricsListen, net.DefaultResolver.LookupNetIP); err != nil {
				bad("metrics-listen", "%v", err)
			}
		}
	}
	switch {
	case c.Store == "", c.Store == "pebble", strings.HasPrefix(c.Store, "postgres://"), strings.HasPrefix(c.Store, "postgresql://"):
	default:
		// Not echoed: pgx's key=value form holds the password as text.
		bad("store", "use pebble or postgres://user:pass@host:port/db")
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("public-url", "%q is not an http:// or https:// URL", redact(c.PublicURL))
		}
	}
	switch {
	case c.Chain == "sim":
	case strings.HasPrefix(c.Chain, "rpc://"):
		if _, err := chainrpc.ParseURL(c.Chain); err != nil {
			bad("chain", "%s", strings.TrimPrefix(err.Error(), "--chain: "))
		}
	default:
		bad("chain", "use sim or rpc://user:pass@host:port?network=NAME")
	}
	switch {
	case c.Lightning == "sim":
	case strings.HasPrefix(c.Lightning, "lnd://"):
		if _, err := lnd.ParseTarget(c.Lightning); err != nil {
			bad("lightning", "%s", strings.TrimPrefix(err.Error(), "lightning: "))
		}
	default:
		bad("lightning", "use sim or lnd://host:port?tls=PATH&macaroon=PATH")
	}
	if _, err := parseRateURLs(c.RatesURLs); err != nil {
		bad("rates-url", "use NAME=URL,NAME=URL")
	}
	for _, d := range []struct {
		key   string
		value float64
	}{
		{"invoice-expiry", c.InvoiceExpiry.Seconds()}, {"rates-refresh", c.RatesRefresh.Seconds()},
		{"rates-max-age", c.RatesMaxAge.Seconds()}, {"shutdown-timeout", c.ShutdownTimeout.Seconds()},
	} {
		if d.value <= 0 {
			bad(d.key, "must be positive")
		}
	}
	if c.Monitoring < 0 {
		bad("monitoring", "must not be negative")
	}
	if c.AddressPool < 1 || c.AddressPool > 10_000 {
		bad("address-pool", "must be between 1 and 10000")
	}
	for _, r := range []struct {
		key   string
		value float64
	}{
		{"rate-limit", c.RateLimit}, {"page-rate-limit", c.PageRateLimit},
		{"pay-rate-limit", c.PayRateLimit}, {"paylink-rate-limit", c.PayLinkRateLimit},
	} {
		if r.value < 0 || r.value != r.value {
			bad(r.key, "must be 0 (off) or positive")
		}
	}
	if c.RateLimit > 0 && c.RateBurst < 1 {
		bad("rate-burst", "must be at least 1 while rate-limit is on")
	}
	if c.ClientIPHeader != "" && !headerName.MatchString(c.ClientIPHeader) {
		bad("client-ip-header", "%q is not a header name", c.ClientIPHeader)
	}
	c.checkDashboardLimits(bad)
	switch c.DashboardSignup {
	case dashboard.SignupInvite, dashboard.SignupOpen:
	default:
		bad("dashboard-signup", "%q: use invite or open", c.DashboardSignup)
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		bad("log-format", "%q: use text or json", c.LogFormat)
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		bad("log-level", "%q: use debug, info, warn or error", c.LogLevel)
	}
	switch strings.TrimSpace(strings.ToLower(c.MemoryLimit)) {
	case "", "auto", "off":
	default:
		if _, err := parseSize(c.MemoryLimit); err != nil {
			bad("memory-limit", "%q: %v", c.MemoryLimit, err)
		}
	}
	return errs
}

// checkSimulation refuses the simulated backends as a default outside
// --dev: the simulators settle whatever anyone asks them to, so a server
// runs them only in development or when the operator names them, with
// --chain sim --lightning sim (a flag, a KASSA_* variable or a key of the
// file). It is kassa serve's check, not the file's: kassa config check
// prints such a file.
func (c *Config) checkSimulation(src configSources) error {
	if c.Dev {
		return nil
	}
	var implicit []string
	if c.Chain == "sim" && src["chain"] == "" {
		implicit = append(implicit, "--chain")
	}
	if c.Lightning == "sim" && src["lightning"] == "" {
		implicit = append(implicit, "--lightning")
	}
	if len(implicit) == 0 {
		return nil
	}
	return fmt.Errorf("%s not set: outside --dev kassa serve does not fall back to the simulated backends, which settle any invoice for anyone; "+
		"give real backends (--chain rpc://… and --lightning lnd://…), or --chain sim --lightning sim to run the simulation on purpose, or --dev for development",
		strings.Join(implicit, " and "))
}

// headerName is an HTTP header name (a token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// secretParam matches the names of query parameters that hold a secret,
// read after the name is decoded, in any case.
var secretParam = regexp.MustCompile(`(?i)pass|pwd|secret|token|key|auth|macaroon|cred|signature`)

// secretSetting matches the names of settings whose whole value is a
// secret: printed as REDACTED whatever it holds.
var secretSetting = regexp.MustCompile(`(?i)password|passphrase|secret|token|macaroon`)

// redactSetting is the value of the setting name as kassa config check
// prints it: its secrets hidden (see redact). --rates-url is read as
// the list parseRateURLs reads.
func redactSetting(name, value string) string {
	switch {
	case value == "":
		return ""
	case secretSetting.MatchString(name):
		return "REDACTED"
	case name == "rates-url":
		return redactList(value)
	}
	return redact(value)
}

// redact hides the secrets a setting may hold: the password of a URL
// (rpc://, postgres://, etcd://, lnd://, a provider's https://) and the
// values of query parameters whose name says they are a secret, in one
// URL or in a comma-separated list of URLs or NAME=URL pairs. A value
// without "://" is no URL and prints as given. The URL is written again
// from what url.Parse and url.ParseQuery read, the parsers of every
// consumer, so that a secret is hidden however it is spelled
// (percent-encoded, '+', its key in any case or given twice); what
// cannot be parsed is hidden whole.
func redact(value string) string {
	if !strings.Contains(value, "://") {
		return value
	}
	if u, err := url.Parse(value); err == nil && u.Scheme != "" && u.Host != "" {
		return redactURL(value)
	}
	return redactList(value)
}

// redactList redacts a comma-separated list of URLs or NAME=URL pairs,
// split as parseRateURLs splits it.
func redactList(value string) string {
	var out []string
	for _, part := range strings.Split(value, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		if name, rest, ok := strings.Cut(part, "="); ok && !strings.Contains(name, "://") {
			out = append(out, strings.TrimSpace(name)+"="+redactURL(strings.TrimSpace(rest)))
		} else {
			out = append(out, redactURL(part))
		}
	}
	return strings.Join(out, ",")
}

// redactURL writes the URL s again with its secrets hidden: the scheme,
// the user name, the host and path as given, the password REDACTED, every
// query parameter decoded and encoded again (its value REDACTED when its
// name is a secret's), the fragment, which no consumer reads, REDACTED.
// The user information is read up to the last '@' before the query, so
// that a password holding '@' or '/' is hidden whole even where the
// parser ends it earlier. A value that does not parse as a URL with a
// scheme and a host is REDACTED whole.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" || !strings.HasPrefix(s[len(u.Scheme):], "://") {
		return "REDACTED"
	}
	body, fragment, hasFragment := strings.Cut(s[len(u.Scheme)+3:], "#")
	authPath, query, hasQuery := strings.Cut(body, "?")
	var b strings.Builder
	b.WriteString(u.Scheme + "://")
	if at := strings.LastIndexByte(authPath, '@'); at >= 0 {
		user, _, hasPassword := strings.Cut(authPath[:at], ":")
		b.WriteString(user)
		if hasPassword {
			b.WriteString(":REDACTED")
		}
		authPath = authPath[at:]
	}
	b.WriteString(authPath)
	if hasQuery {
		b.WriteString("?" + redactQuery(query))
	}
	if hasFragment {
		b.WriteString("#")
		if fragment != "" {
			b.WriteString("REDACTED")
		}
	}
	return b.String()
}

// redactQuery writes the raw query q again pair by pair, each decoded as
// url.ParseQuery decodes it and encoded again, the value REDACTED when
// the name is a secret's. A pair that url.ParseQuery drops (a bad escape,
// a ';') is REDACTED whole. The first macaroon= is the one lnd reads:
// shown when it is a path, hidden when it is hex (the macaroon itself);
// every other macaroon value is hidden.
func redactQuery(q string) string {
	pairs := strings.Split(q, "&")
	macaroonSeen := false
	for i, p := range pairs {
		if p == "" {
			continue
		}
		k, v, hasValue := strings.Cut(p, "=")
		key, kerr := url.QueryUnescape(k)
		value, verr := url.QueryUnescape(v)
		if kerr != nil || verr != nil || strings.Contains(p, ";") {
			pairs[i] = "REDACTED"
			continue
		}
		macaroonPath := false
		if key == "macaroon" && !macaroonSeen {
			macaroonSeen = true
			_, herr := hex.DecodeString(value)
			macaroonPath = herr != nil
		}
		switch {
		case value != "" && secretParam.MatchString(key) && !macaroonPath:
			pairs[i] = queryEscape(key) + "=REDACTED"
		case hasValue:
			pairs[i] = queryEscape(key) + "=" + queryEscape(value)
		default:
			pairs[i] = queryEscape(key)
		}
	}
	return strings.Join(pairs, "&")
}

// queryEscape percent-encodes s for a query key or value, leaving the
// unreserved characters and '/', ':' and '@' as they are, so that paths
// and addresses read as given. ',' is encoded: a list splits on it.
func queryEscape(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-._~/:@", c) >= 0:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	return b.String()
}

// plainYAML matches values that need no quotes in YAML.
var plainYAML = regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-][A-Za-z0-9_./:@%+=,?&-]*$`)

// yamlValue writes a value so that a YAML parser reads back the same
// text: plain when that is safe, double-quoted otherwise.
func yamlValue(s string) string {
	switch strings.ToLower(s) {
	case "", "null", "~", "yes", "no", "on", "off", "y", "n":
		return fmt.Sprintf("%q", s)
	}
	if plainYAML.MatchString(s) && !strings.Contains(s, ": ") {
		return s
	}
	return fmt.Sprintf("%q", s)
}

// writeEffectiveConfig prints every setting of c as a configuration file
// would hold it, secrets redacted, each with where it came from.
func writeEffectiveConfig(w io.Writer, c *Config, file string, src configSources) {
	var discard string
	fs := newConfigFlags(c, "", &discard)
	fmt.Fprintln(w, "# The effective configuration of kassa serve (secrets redacted).")
	if file != "" {
		fmt.Fprintf(w, "# File: %s\n", file)
	}
	fmt.Fprintln(w, "# Precedence: flag > KASSA_* variable > file > default.")
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != configFlag {
			names = append(names, f.Name)
		}
	})
	sort.Strings(names)
	for _, name := range names {
		f := fs.Lookup(name)
		from := src[name]
		if from == "" {
			from = "default"
		}
		var value string
		if repeatable(f) {
			var items []string
			for _, item := range *f.Value.(*sigAliases) {
				items = append(items, yamlValue(item))
			}
			value = "[" + strings.Join(items, ", ") + "]"
		} else {
			value = yamlValue(redactSetting(name, f.Value.String()))
		}
		fmt.Fprintf(w, "%s: %s  # %s\n", name, value, from)
	}
}

// runConfig is `kassa config check [--config FILE] [serve flags]`.
func runConfig(args []string, stdout, stderr io.Writer) error {
	const header = "usage: kassa config check [--config FILE] [serve flags]\n  check the configuration kassa serve would run with and print it, secrets redacted"
	if len(args) == 0 || args[0] != "check" {
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
			fmt.Fprintln(stdout, header)
			return errHelpShown
		}
		fmt.Fprintln(stderr, header)
		return errUsage
	}
	c := DefaultConfig()
	file, src, err := c.load("kassa config check", header, args[1:], stdout, stderr)
	if err != nil {
		return err
	}
	writeEffectiveConfig(stdout, &c, file, src)
	return nil
}
