package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeConfig writes a configuration file into a temporary directory.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kassa.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadTest loads a serve configuration from args as `kassa serve` does.
func loadTest(t *testing.T, args ...string) (Config, configSources, error) {
	t.Helper()
	c := DefaultConfig()
	_, src, err := c.load("kassa serve", "usage: test", args, io.Discard, io.Discard)
	return c, src, err
}

// clearKassaEnv unsets every KASSA_* variable for the test, so that the
// machine's environment cannot change what the test reads.
func clearKassaEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "KASSA_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
}

// TestConfigPrecedence sets one key in every source and removes them one
// by one: flag > KASSA_* variable > file > default, and each value's
// source is recorded.
func TestConfigPrecedence(t *testing.T) {
	clearKassaEnv(t)
	file := writeConfig(t, "invoice-expiry: 20m\nlisten: 127.0.0.1:9001\nrate-limit: 7\n")

	c, src, err := loadTest(t, "--config", file, "--invoice-expiry", "40m")
	if err != nil {
		t.Fatal(err)
	}
	if c.InvoiceExpiry != 40*time.Minute || src["invoice-expiry"] != "--invoice-expiry" {
		t.Errorf("flag over file: invoice-expiry = %v from %q, want 40m from --invoice-expiry", c.InvoiceExpiry, src["invoice-expiry"])
	}
	if c.Listen != "127.0.0.1:9001" || src["listen"] != file+":2" {
		t.Errorf("file over default: listen = %q from %q, want 127.0.0.1:9001 from %s:2", c.Listen, src["listen"], file)
	}
	if c.Monitoring != DefaultConfig().Monitoring || src["monitoring"] != "" {
		t.Errorf("default: monitoring = %v from %q", c.Monitoring, src["monitoring"])
	}

	t.Setenv("KASSA_INVOICE_EXPIRY", "30m")
	t.Setenv("KASSA_RATE_LIMIT", "9")
	c, src, err = loadTest(t, "--config", file, "--invoice-expiry", "40m")
	if err != nil {
		t.Fatal(err)
	}
	if c.InvoiceExpiry != 40*time.Minute {
		t.Errorf("flag over variable: invoice-expiry = %v, want 40m", c.InvoiceExpiry)
	}
	if c.RateLimit != 9 || src["rate-limit"] != "KASSA_RATE_LIMIT" {
		t.Errorf("variable over file: rate-limit = %v from %q, want 9 from KASSA_RATE_LIMIT", c.RateLimit, src["rate-limit"])
	}
	c, _, err = loadTest(t, "--config", file)
	if err != nil {
		t.Fatal(err)
	}
	if c.InvoiceExpiry != 30*time.Minute {
		t.Errorf("variable over file: invoice-expiry = %v, want 30m", c.InvoiceExpiry)
	}

	// KASSA_CONFIG names the file when --config does not.
	t.Setenv("KASSA_CONFIG", file)
	c, _, err = loadTest(t)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9001" {
		t.Errorf("KASSA_CONFIG: listen = %q, want the file's 127.0.0.1:9001", c.Listen)
	}
}

// TestConfigFileLists takes a YAML list for the repeatable flag.
func TestConfigFileLists(t *testing.T) {
	clearKassaEnv(t)
	file := writeConfig(t, "webhook-sig-alias:\n  - X-Coinsnap-Sig\n  - x-other-sig\n")
	c, _, err := loadTest(t, "--config", file)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.WebhookSigAliases, ","); got != "X-Coinsnap-Sig,X-Other-Sig" {
		t.Errorf("webhook-sig-alias = %q", got)
	}
}

// TestConfigErrors gives one bad configuration per case; the error must
// name the key and where it came from, and nothing else is accepted.
func TestConfigErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		file string
		env  map[string]string
		args []string
		want []string // substrings of the error; FILE is the file's path
	}{
		{name: "unknown key, close to one", file: "invoce_expiry: 5m\n",
			want: []string{`FILE:1: unknown key "invoce_expiry" (did you mean "invoice-expiry"?)`}},
		{name: "unknown key as a variable name", file: "KASSA_LISTEN: 127.0.0.1:1\n",
			want: []string{`unknown key "KASSA_LISTEN" (did you mean "listen"?)`}},
		{name: "unknown key, nothing close", file: "listen: 127.0.0.1:1\ncolour: blue\n",
			want: []string{`FILE:2: unknown key "colour"`}},
		{name: "bad duration", file: "invoice-expiry: 15x\n",
			want: []string{`FILE:1: invoice-expiry: "15x": want a duration`}},
		{name: "bad number", file: "\n\nrate-limit: lots\n",
			want: []string{`FILE:3: rate-limit: "lots"`}},
		{name: "bad boolean", file: "dev: on\n",
			want: []string{`FILE:1: dev: "on"`}},
		{name: "no value", file: "listen:\n",
			want: []string{`FILE:1: listen: no value`}},
		{name: "list for a single value", file: "listen: [a, b]\n",
			want: []string{`FILE:1: listen takes one value, not a list`}},
		{name: "nested mapping", file: "rates:\n  refresh: 1m\n",
			want: []string{`FILE:1: rates takes a value, not a mapping`}},
		{name: "duplicate key", file: "listen: 127.0.0.1:1\nlisten: 127.0.0.1:2\n",
			want: []string{`FILE:2: key "listen" is given twice (first on line 1)`}},
		{name: "file names a file", file: "config: other.yaml\n",
			want: []string{`FILE:1: key "config": a configuration file cannot name another`}},
		{name: "not a mapping", file: "- listen\n",
			want: []string{`FILE:1: want`, "key: value"}},
		{name: "YAML syntax", file: "listen: [127.0.0.1\n",
			want: []string{"FILE:", "line"}},
		{name: "bad value hidden by a flag", file: "invoice-expiry: soon\n", args: []string{"--invoice-expiry", "1m"},
			want: []string{`FILE:1: invoice-expiry: "soon"`}},
		{name: "semantic, from the file", file: "invoice-expiry: -1m\n",
			want: []string{`invoice-expiry: must be positive (from FILE:1)`}},
		{name: "semantic, from a variable", env: map[string]string{"KASSA_LOG_LEVEL": "loud"},
			want: []string{`log-level: "loud": use debug, info, warn or error (from KASSA_LOG_LEVEL)`}},
		{name: "semantic, from a flag", args: []string{"--chain", "bitcoind://x"},
			want: []string{`chain: use sim or rpc://`, "(from --chain)"}},
		{name: "chain URL without network", file: "chain: rpc://u:p@127.0.0.1:8332\n",
			want: []string{"chain: name the network", "(from FILE:1)"}},
		{name: "lnd files missing", file: "lightning: lnd://127.0.0.1:10009?tls=/nonexistent/tls.cert&macaroon=/nonexistent/m\n",
			want: []string{"lightning: lnd TLS certificate", "(from FILE:1)"}},
		{name: "shutdown timeout", file: "shutdown-timeout: 0s\n",
			want: []string{"shutdown-timeout: must be positive (from FILE:1)"}},
		{name: "memory limit", file: "memory-limit: 1KiB\n",
			want: []string{`memory-limit: "1KiB": at least 64MiB`}},
		{name: "listen address", file: "listen: 8080\n",
			want: []string{`listen: "8080" is not HOST:PORT (from FILE:1)`}},
		{name: "public URL", file: "public-url: pay.example.com\n",
			want: []string{`public-url: "pay.example.com" is not an http:// or https:// URL`}},
		{name: "client ip header", file: "client-ip-header: \"X Forwarded\"\n",
			want: []string{`client-ip-header: "X Forwarded" is not a header name`}},
		{name: "bad variable", env: map[string]string{"KASSA_RATE_LIMIT": "fast"},
			want: []string{`rate-limit: KASSA_RATE_LIMIT="fast"`}},
		{name: "missing file", args: []string{"--config", "/nonexistent/kassa.yaml"},
			want: []string{"config: open /nonexistent/kassa.yaml"}},
		{name: "every error at once", file: "colour: blue\ninvoice-expiry: 15x\nlisten:\n",
			want: []string{"3 errors", "colour", "invoice-expiry", "listen"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clearKassaEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			args := tt.args
			path := ""
			if tt.file != "" {
				path = writeConfig(t, tt.file)
				args = append([]string{"--config", path}, args...)
			}
			_, _, err := loadTest(t, args...)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if w = strings.ReplaceAll(w, "FILE", path); !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestConfigCheckOutput prints the effective configuration: the secret
// of the chain URL is redacted (and a hex macaroon, but not a macaroon
// path), every line names its source, and the output is itself a valid
// configuration file that gives the same settings.
func TestConfigCheckOutput(t *testing.T) {
	clearKassaEnv(t)
	file := writeConfig(t, "chain: rpc://kassa:hunter2secret@127.0.0.1:8332?network=regtest\ninvoice-expiry: 20m\nwebhook-sig-alias: [X-Coinsnap-Sig]\n")
	t.Setenv("KASSA_RATE_LIMIT", "5")
	var out bytes.Buffer
	if err := runConfig([]string{"check", "--config", file, "--listen", "127.0.0.1:9100"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if strings.Contains(text, "hunter2secret") {
		t.Errorf("the chain password is printed:\n%s", text)
	}
	for _, want := range []string{
		"chain: rpc://kassa:REDACTED@127.0.0.1:8332?network=regtest  # " + file + ":1",
		"invoice-expiry: 20m0s  # " + file + ":2",
		"rate-limit: 5  # KASSA_RATE_LIMIT",
		"listen: 127.0.0.1:9100  # --listen",
		"monitoring: 24h0m0s  # default",
		"webhook-sig-alias: [X-Coinsnap-Sig]",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("config check does not print %q:\n%s", want, text)
		}
	}

	// Read back (without the redacted chain, which no longer parses as
	// the original): every other setting is the same.
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, "chain:") {
			lines = append(lines, l)
		}
	}
	again := writeConfig(t, strings.Join(lines, "\n"))
	os.Unsetenv("KASSA_RATE_LIMIT")
	c2, _, err := loadTest(t, "--config", again)
	if err != nil {
		t.Fatalf("the printed configuration does not load: %v\n%s", err, text)
	}
	c1, _, err := loadTest(t, "--config", file, "--listen", "127.0.0.1:9100", "--rate-limit", "5")
	if err != nil {
		t.Fatal(err)
	}
	c1.Chain = c2.Chain
	if c1.String() != c2.String() {
		t.Errorf("read back:\n%s\nwant:\n%s", c2.String(), c1.String())
	}

	for value, want := range map[string]string{
		"lnd://h:1?tls=/a/tls.cert&macaroon=/a/admin.macaroon":                        "lnd://h:1?tls=/a/tls.cert&macaroon=/a/admin.macaroon",
		"lnd://h:1?tls=/a/tls.cert&macaroon=0201036c6e6402f801030a10b2c3d4e5f6a7b8c9": "lnd://h:1?tls=/a/tls.cert&macaroon=REDACTED",
		"kraken=https://user:pw@k.example,coinbase=https://c.example?api_key=abc":     "kraken=https://user:REDACTED@k.example,coinbase=https://c.example?api_key=REDACTED",
		// Issue 18: a short hex macaroon, a password with a comma or an
		// '@', and the other URLs that carry passwords.
		"lnd://h:1?macaroon=0201036c6e64&tls=/a/tls.cert":                          "lnd://h:1?macaroon=REDACTED&tls=/a/tls.cert",
		"lnd://h:1?tls=/a/tls.cert&macaroon=admin.macaroon":                        "lnd://h:1?tls=/a/tls.cert&macaroon=admin.macaroon",
		"rpc://kassa:pa,ss@127.0.0.1:8332?network=regtest":                         "rpc://kassa:REDACTED@127.0.0.1:8332?network=regtest",
		"rpc://kassa:p@ss/w@127.0.0.1:8332?network=regtest":                        "rpc://kassa:REDACTED@127.0.0.1:8332?network=regtest",
		"postgres://kassa:hunter2@db:5432/kassa?sslmode=disable&sslpassword=kpass": "postgres://kassa:REDACTED@db:5432/kassa?sslmode=disable&sslpassword=REDACTED",
		"etcd://root:hunter2@10.0.0.9:2379":                                        "etcd://root:REDACTED@10.0.0.9:2379",
		"postgres://kassa@db/kassa":                                                "postgres://kassa@db/kassa",
	} {
		if got := redact(value); got != want {
			t.Errorf("redact(%q) = %q, want %q", value, got, want)
		}
	}
}

// String prints every setting, for comparisons in tests.
func (c Config) String() string {
	var b bytes.Buffer
	writeEffectiveConfig(&b, &c, "", nil)
	return b.String()
}

// TestConfigCheckCommand runs `kassa config check` in the binary: a good
// configuration prints and exits 0, a bad one exits 1 naming the key.
func TestConfigCheckCommand(t *testing.T) {
	t.Parallel()
	good := writeConfig(t, "invoice-expiry: 20m\n")
	stdout, stderr, code := runBinary(t, "config", "check", "--config", good)
	if code != 0 || !strings.Contains(stdout, "invoice-expiry: 20m0s  # "+good+":1") {
		t.Errorf("config check of a good file exited %d:\n%s%s", code, stdout, stderr)
	}
	bad := writeConfig(t, "invoice-expiry: 20m\nlisten_addr: 1\n")
	stdout, stderr, code = runBinary(t, "config", "check", "--config", bad)
	if code != 1 || !strings.Contains(stderr, `unknown key "listen_addr" (did you mean "listen"?)`) || stdout != "" {
		t.Errorf("config check of a bad file exited %d:\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	// serve refuses the same file before it opens anything.
	data := filepath.Join(t.TempDir(), "data")
	_, stderr, code = runBinary(t, "serve", "--config", bad, "--data", data)
	if code != 1 || !strings.Contains(stderr, "listen_addr") {
		t.Errorf("serve with a bad file exited %d: %s", code, stderr)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("serve with a bad file created its data directory (%v)", err)
	}
	if _, stderr, code = runBinary(t, "config"); code != 2 || !strings.Contains(stderr, "kassa config check") {
		t.Errorf("kassa config exited %d: %s", code, stderr)
	}
}
