package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigCheckRedactsEverySpelling runs `kassa config check` with
// every setting that can hold a secret, the secret spelled as the
// setting's parser reads it: percent-encoded keys and values, upper- and
// lower-case hex (in the escapes and in a macaroon), '+', query keys in
// another case, duplicate keys, a ';' inside a pair, a fragment. The
// printed configuration must hold no secret in any spelling, and it
// must still show what is not secret (paths, hosts, the network).
func TestConfigCheckRedactsEverySpelling(t *testing.T) {
	dir := t.TempDir()
	tlsCert := filepath.Join(dir, "tls.cert")
	macPath := filepath.Join(dir, "admin.macaroon")
	for _, p := range []string{tlsCert, macPath} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const mac = "0201036c6e6402f801030a10b2c3d4e5f6a7b8c9"
	lnd := "lnd://127.0.0.1:10009?tls=" + tlsCert
	for _, tt := range []struct {
		name    string
		flag    string
		value   string
		secrets []string // none of these may be printed, in any case
		want    string   // the printed value
	}{
		// --lightning: the macaroon in hex is the credential itself.
		{name: "macaroon, first digit percent-encoded", flag: "lightning",
			value: lnd + "&macaroon=%3" + mac, secrets: []string{mac, "%3" + mac},
			want: lnd + "&macaroon=REDACTED"},
		{name: "macaroon, every byte percent-encoded, lower-case escapes", flag: "lightning",
			value: lnd + "&macaroon=" + percentAll(mac, false), secrets: []string{mac, percentAll(mac, false)},
			want: lnd + "&macaroon=REDACTED"},
		{name: "macaroon, percent-encoded with upper-case escapes", flag: "lightning",
			value: lnd + "&macaroon=" + percentAll(mac, true), secrets: []string{mac, percentAll(mac, true)},
			want: lnd + "&macaroon=REDACTED"},
		{name: "macaroon in upper-case hex", flag: "lightning",
			value: lnd + "&macaroon=" + strings.ToUpper(mac), secrets: []string{mac},
			want: lnd + "&macaroon=REDACTED"},
		{name: "macaroon key percent-encoded", flag: "lightning",
			value: lnd + "&mac%61roon=" + mac, secrets: []string{mac},
			want: lnd + "&macaroon=REDACTED"},
		{name: "macaroon key in upper case beside the path", flag: "lightning",
			value: lnd + "&macaroon=" + macPath + "&MACAROON=" + mac, secrets: []string{mac},
			want: lnd + "&macaroon=" + macPath + "&MACAROON=REDACTED"},
		{name: "macaroon given twice, hex second", flag: "lightning",
			value: lnd + "&macaroon=" + macPath + "&macaroon=" + mac, secrets: []string{mac},
			want: lnd + "&macaroon=" + macPath + "&macaroon=REDACTED"},
		{name: "macaroon path stays visible, percent-encoded", flag: "lightning",
			value: lnd + "&macaroon=" + strings.ReplaceAll(macPath, "/", "%2f"),
			want:  lnd + "&macaroon=" + macPath},
		{name: "macaroon behind a fragment", flag: "lightning",
			value: lnd + "&macaroon=" + macPath + "#macaroon=" + mac, secrets: []string{mac},
			want: lnd + "&macaroon=" + macPath + "#REDACTED"},

		// --chain: the RPC password, and any secret-named query key.
		{name: "rpc password percent-encoded", flag: "chain",
			value: "rpc://kassa:%68unter%32secret@127.0.0.1:8332?network=regtest", secrets: []string{"hunter2secret", "%68unter%32secret", "unter"},
			want: "rpc://kassa:REDACTED@127.0.0.1:8332?network=regtest"},
		{name: "rpc password with '+'", flag: "chain",
			value: "rpc://kassa:hunter+2@127.0.0.1:8332?network=regtest", secrets: []string{"hunter+2", "hunter 2"},
			want: "rpc://kassa:REDACTED@127.0.0.1:8332?network=regtest"},
		{name: "rpc secret query key percent-encoded", flag: "chain",
			value: "rpc://kassa:x@127.0.0.1:8332?network=regtest&p%61ssword=hunter2secret", secrets: []string{"hunter2secret"},
			want: "rpc://kassa:REDACTED@127.0.0.1:8332?network=regtest&password=REDACTED"},

		// --store: pgx reads password and sslpassword from the query,
		// decoding the keys first.
		{name: "postgres password key percent-encoded", flag: "store",
			value: "postgres://kassa@db:5432/kassa?sslmode=disable&p%61ssword=hunter2secret", secrets: []string{"hunter2secret"},
			want: "postgres://kassa@db:5432/kassa?sslmode=disable&password=REDACTED"},
		{name: "postgres sslpassword with '+' in the key", flag: "store",
			value: "postgresql://kassa@db/kassa?ssl+p%41ssword=hunter2secret", secrets: []string{"hunter2secret"},
			want: "postgresql://kassa@db/kassa?ssl%20pAssword=REDACTED"},
		{name: "postgres password key in another case, twice", flag: "store",
			value: "postgres://kassa@db/kassa?PassWord=hunter2secret&password=hunter3secret", secrets: []string{"hunter2secret", "hunter3secret"},
			want: "postgres://kassa@db/kassa?PassWord=REDACTED&password=REDACTED"},
		{name: "postgres password hidden behind ';'", flag: "store",
			value: "postgres://kassa@db/kassa?sslmode=disable;password=hunter2secret", secrets: []string{"hunter2secret"},
			want: "postgres://kassa@db/kassa?REDACTED"},
		{name: "postgres userinfo password percent-encoded", flag: "store",
			value: "postgres://kassa:%68unter2secret@db/kassa", secrets: []string{"hunter2secret", "unter2secret"},
			want: "postgres://kassa:REDACTED@db/kassa"},

		// --cluster: etcd credentials (kassa serve refuses them, config
		// check prints them all the same).
		{name: "etcd token key percent-encoded", flag: "cluster",
			value: "etcd://10.0.0.9:2379,10.0.0.10:2379?t%6Fken=hunter2secret", secrets: []string{"hunter2secret"},
			want: "etcd://10.0.0.9:2379,10.0.0.10:2379?token=REDACTED"},
		{name: "etcd password percent-encoded", flag: "cluster",
			value: "etcd://root:%68unter2secret@10.0.0.9:2379", secrets: []string{"hunter2secret", "unter2secret"},
			want: "etcd://root:REDACTED@10.0.0.9:2379"},

		// --rates-url: a provider's URL, NAME=URL,NAME=URL.
		{name: "rates api key, key percent-encoded", flag: "rates-url",
			value: "kraken=https://k.example/api?ap%69_k%65y=hunter2secret,coinbase=https://u:hunter3secret@c.example", secrets: []string{"hunter2secret", "hunter3secret"},
			want: "kraken=https://k.example/api?api_key=REDACTED,coinbase=https://u:REDACTED@c.example"},

		// --public-url and --otlp-endpoint are URLs too.
		{name: "public URL token percent-encoded", flag: "public-url",
			value: "https://pay.example/?T%4fKEN=hunter2secret", secrets: []string{"hunter2secret"},
			want: "https://pay.example/?TOKEN=REDACTED"},
		{name: "otlp endpoint credentials", flag: "otlp-endpoint",
			value: "http://u:%68unter2secret@collector:4317?%61uth=hunter3secret", secrets: []string{"hunter2secret", "unter2secret", "hunter3secret"},
			want: "http://u:REDACTED@collector:4317?auth=REDACTED"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clearKassaEnv(t)
			var out bytes.Buffer
			if err := runConfig([]string{"check", "--" + tt.flag, tt.value}, &out, io.Discard); err != nil {
				t.Fatal(err)
			}
			text := out.String()
			for _, s := range tt.secrets {
				if strings.Contains(strings.ToLower(text), strings.ToLower(s)) {
					t.Errorf("the secret %q is printed:\n%s", s, text)
				}
			}
			if want := tt.flag + ": " + yamlValue(tt.want) + "  # --" + tt.flag; !strings.Contains(text, want) {
				t.Errorf("config check does not print %q:\n%s", want, text)
			}
		})
	}
}

// percentAll percent-encodes every byte of s.
func percentAll(s string, upper bool) string {
	const lower, upperHex = "0123456789abcdef", "0123456789ABCDEF"
	digits := lower
	if upper {
		digits = upperHex
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte('%')
		b.WriteByte(digits[s[i]>>4])
		b.WriteByte(digits[s[i]&15])
	}
	return b.String()
}

// TestConfigCheckRefusesStoreDSN refuses a --store that is neither pebble
// nor a postgres:// URL, such as pgx's key=value form, without printing
// it: config check would otherwise print its password as given.
func TestConfigCheckRefusesStoreDSN(t *testing.T) {
	clearKassaEnv(t)
	var out bytes.Buffer
	err := runConfig([]string{"check", "--store", "host=db user=kassa password=hunter2secret"}, &out, io.Discard)
	if err == nil {
		t.Fatalf("accepted; printed:\n%s", out.String())
	}
	if strings.Contains(err.Error()+out.String(), "hunter2secret") {
		t.Errorf("the password is printed: %v\n%s", err, out.String())
	}
	if !strings.Contains(err.Error(), "store: use pebble or postgres://") {
		t.Errorf("error %q does not say what --store takes", err)
	}
}

// TestRedactRendersTheParsedURL checks redact on what is not secret: the
// output is the parsed URL written again, so that it loads back to the
// same values, and values that are not URLs print as given.
func TestRedactRendersTheParsedURL(t *testing.T) {
	for value, want := range map[string]string{
		"sim":            "sim",
		"":               "",
		"127.0.0.1:4317": "127.0.0.1:4317",
		"rpc://kassa:pw@127.0.0.1:8332?network=regtest&cookie=/a/b%20c&notls=true": "rpc://kassa:REDACTED@127.0.0.1:8332?network=regtest&cookie=/a/b%20c&notls=true",
		"https://pay.example/shop?lang=de#top":                                     "https://pay.example/shop?lang=de#REDACTED",
		"rpc://kassa:pw@[::1]:8332?network=regtest":                                "rpc://kassa:REDACTED@[::1]:8332?network=regtest",
		"postgres://db/kassa?sslmode=disable&sslrootcert=/etc/ca.pem":              "postgres://db/kassa?sslmode=disable&sslrootcert=/etc/ca.pem",
		"rpc://kassa:pw@127.0.0.1:bad":                                             "REDACTED",
		"kraken=https://k.example?x=1, coinbase = https://c.example":               "kraken=https://k.example?x=1,coinbase=https://c.example",
		"https://u:pw@host?%zz=1":                                                  "https://u:REDACTED@host?REDACTED",
	} {
		name := "chain"
		if strings.HasPrefix(value, "kraken=") {
			name = "rates-url"
		}
		if got := redactSetting(name, value); got != want {
			t.Errorf("redactSetting(%q, %q) = %q, want %q", name, value, got, want)
		}
	}
}
