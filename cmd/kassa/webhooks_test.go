package main

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestWebhookSigAliasFlag checks --webhook-sig-alias: repeatable, names
// canonical and each once, KASSA_WEBHOOK_SIG_ALIAS comma-separated, bad
// names refused before anything starts. Not parallel: it sets the
// environment.
func TestWebhookSigAliasFlag(t *testing.T) {
	parse := func(args ...string) (Config, error) {
		m := NewMain()
		m.Stdout, m.Stderr = io.Discard, io.Discard
		err := m.ParseFlags(append([]string{"--chain", "sim", "--lightning", "sim"}, args...))
		return m.Config, err
	}
	c, err := parse()
	if err != nil || len(c.WebhookSigAliases) != 0 {
		t.Fatalf("default: %v, %v", c.WebhookSigAliases, err)
	}
	c, err = parse("--webhook-sig-alias", "x-coinsnap-sig", "--webhook-sig-alias", "BTCPay-Sig,X-Coinsnap-Sig")
	if err != nil || fmt.Sprint(c.WebhookSigAliases) != "[X-Coinsnap-Sig Btcpay-Sig]" {
		t.Fatalf("flags: %v, %v", c.WebhookSigAliases, err)
	}
	t.Setenv("KASSA_WEBHOOK_SIG_ALIAS", "X-Coinsnap-Sig, X-Other-Sig")
	c, err = parse()
	if err != nil || fmt.Sprint(c.WebhookSigAliases) != "[X-Coinsnap-Sig X-Other-Sig]" {
		t.Fatalf("environment: %v, %v", c.WebhookSigAliases, err)
	}
	c, err = parse("--webhook-sig-alias", "X-Flag-Sig") // the flag wins
	if err != nil || fmt.Sprint(c.WebhookSigAliases) != "[X-Flag-Sig]" {
		t.Fatalf("flag over environment: %v, %v", c.WebhookSigAliases, err)
	}
	for _, bad := range []string{"X-Service-Sig", "x-service-signature", "Content-Type", "X Sig", ""} {
		var aliases sigAliases
		if err := aliases.Set(bad); err == nil || !strings.Contains(err.Error(), "webhook signature alias") {
			t.Errorf("%q: %v", bad, err)
		}
		if _, err := parse("--webhook-sig-alias", bad); err == nil {
			t.Errorf("--webhook-sig-alias %q accepted", bad)
		}
	}
	t.Setenv("KASSA_WEBHOOK_SIG_ALIAS", "X-Coinsnap-Sig,Host")
	if _, err := parse(); err == nil || !strings.Contains(err.Error(), "KASSA_WEBHOOK_SIG_ALIAS") {
		t.Errorf("bad environment value: %v", err)
	}
}

// TestBadServeFlagIsOneLine: a bad value of a serve flag, or an unknown
// flag, is answered on stderr with one line naming the flag (and the
// value) and one saying where the help is, as the go tool does, not with
// the whole usage text.
func TestBadServeFlagIsOneLine(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"--webhook-sig-alias", "X-Service-Sig"}, []string{"-webhook-sig-alias", `"X-Service-Sig"`}},
		{[]string{"--webhook-sig-alias", "Content-Type"}, []string{"-webhook-sig-alias", `"Content-Type"`}},
		{[]string{"--no-such-flag"}, []string{"-no-such-flag"}},
	} {
		var stdout, stderr strings.Builder
		args := append([]string{"serve", "--chain", "sim", "--lightning", "sim"}, tt.args...)
		if err := dispatch(t.Context(), args, &stdout, &stderr); err != errUsage {
			t.Errorf("kassa %v = %v, want a usage error", args, err)
		}
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if len(lines) != 2 || lines[1] != "run kassa serve -h for help" || stdout.Len() != 0 {
			t.Errorf("kassa %v printed %d lines on stderr, %d bytes on stdout; want the error and %q:\n%s",
				args, len(lines), stdout.Len(), "run kassa serve -h for help", stderr.String())
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(lines[0], w) {
				t.Errorf("kassa %v: %q does not name %s", args, lines[0], w)
			}
		}
	}
}
