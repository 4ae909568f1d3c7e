package main

import (
	"bytes"
	"github.com/kassapay/kassa/rates"
	"log/slog"
	"strings"
	"testing"

	"github.com/kassapay/kassa/dashboard"
	kassahttp "github.com/kassapay/kassa/http"
)

// TestDashboardSignupDefault: dashboard sign-up needs an invitation
// unless asked otherwise; --dev makes open sign-up the default, which a
// flag, variable or file still overrides; other values are refused.
func TestDashboardSignupDefault(t *testing.T) {
	clearKassaEnv(t)
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{nil, "", dashboard.SignupInvite},
		{[]string{"--dev"}, "", dashboard.SignupOpen},
		{[]string{"--dev", "--dashboard-signup", "invite"}, "", dashboard.SignupInvite},
		{[]string{"--dashboard-signup", "open"}, "", dashboard.SignupOpen},
		{[]string{"--dev"}, "invite", dashboard.SignupInvite},
	} {
		t.Setenv("KASSA_DASHBOARD_SIGNUP", tc.env)
		if tc.env == "" {
			clearKassaEnv(t)
		}
		c, _, err := loadTest(t, tc.args...)
		if err != nil || c.DashboardSignup != tc.want {
			t.Errorf("%v (KASSA_DASHBOARD_SIGNUP=%q): sign-up %q, %v; want %q", tc.args, tc.env, c.DashboardSignup, err, tc.want)
		}
	}
	clearKassaEnv(t)
	if _, _, err := loadTest(t, "--dashboard-signup", "sometimes"); err == nil || !strings.Contains(err.Error(), "dashboard-signup") {
		t.Errorf("an unknown sign-up mode: %v", err)
	}
}

// TestOpenSignupWarns: open sign-up is logged as a warning at start;
// invitation-only sign-up is not.
func TestOpenSignupWarns(t *testing.T) {
	for _, mode := range []string{dashboard.SignupOpen, dashboard.SignupInvite} {
		var logs bytes.Buffer
		m := NewMain()
		m.Config.DashboardSignup = mode
		if _, err := m.newDashboard(kassahttp.Deps{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Rates: rates.Fixed{}}, nil); err != nil {
			t.Fatal(err)
		}
		warned := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "sign-up is open")
		if warned != (mode == dashboard.SignupOpen) {
			t.Errorf("sign-up %s: logged %q", mode, logs.String())
		}
	}
}
