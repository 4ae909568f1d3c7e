package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa/dashboard"
	kassahttp "github.com/kassapay/kassa/http"
)

func (c *Config) dashboardFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.DashboardSignup, "dashboard-signup", c.DashboardSignup,
		"who may create a dashboard account: invite (an operator's invitation; make the first operator with `kassa user create --admin`) or open (anyone; logged as a warning at start). Default invite, open with --dev")
	fs.StringVar(&c.DashboardPercentFee, "dashboard-percent-fee", c.DashboardPercentFee,
		"service fee in percent of stores created in the dashboard")
}

// topUpEvery is how often the dashboard credits paid top-ups.
const topUpEvery = 5 * time.Second

// newDashboard builds the merchant dashboard over the API's services.
func (m *Main) newDashboard(d kassahttp.Deps) (*dashboard.Dashboard, error) {
	c := m.Config
	if c.DashboardSignup != dashboard.SignupOpen && c.DashboardSignup != dashboard.SignupInvite {
		return nil, fmt.Errorf("--dashboard-signup %q: use open or invite", c.DashboardSignup)
	}
	fee, err := decimal.NewFromString(c.DashboardPercentFee)
	if err != nil || fee.IsNegative() || fee.GreaterThan(decimal.NewFromInt(100)) {
		return nil, fmt.Errorf("--dashboard-percent-fee %q: use a percentage between 0 and 100", c.DashboardPercentFee)
	}
	if c.DashboardSignup == dashboard.SignupOpen {
		if c.Dev {
			d.Logger.Warn("dashboard sign-up is open (--dev): anyone who reaches /dashboard can make an account, and the first one made is the operator")
		} else {
			d.Logger.Warn("dashboard sign-up is open (--dashboard-signup open): anyone who reaches /dashboard can make an account; operators are made with `kassa user create --admin`")
		}
	}
	return dashboard.New(dashboard.Deps{
		Reader: d.Reader, Services: m.sys, KV: d.KV, Simulator: d.Simulator, Simulated: d.Simulated, Clock: d.Clock, Logger: d.Logger,
		PublicURL: d.PublicURL, AdminToken: d.AdminToken, Signup: c.DashboardSignup, SignupOperator: c.Dev, PercentFee: fee,
		ClientIPHeader: d.ClientIPHeader, Operator: d.Operator, Currencies: d.Rates.Currencies(),
	}), nil
}

// devDefaults sets the defaults that differ with --dev, for the
// settings no flag, variable or file gave (src): open dashboard sign-up,
// whose first account is the operator.
func (c *Config) devDefaults(src configSources) {
	if c.Dev && src["dashboard-signup"] == "" {
		c.DashboardSignup = dashboard.SignupOpen
	}
}
