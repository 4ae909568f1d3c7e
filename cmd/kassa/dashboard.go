package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/dashboard"
	kassahttp "github.com/kassapay/kassa/http"
	"github.com/kassapay/kassa/topup"
)

func (c *Config) dashboardFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.DashboardSignup, "dashboard-signup", c.DashboardSignup,
		"who may create a dashboard account: invite (an operator's invitation; make the first operator with `kassa user create --admin`) or open (anyone; logged as a warning at start). Default invite, open with --dev")
	fs.StringVar(&c.DashboardPercentFee, "dashboard-percent-fee", c.DashboardPercentFee,
		"service fee in percent of stores created in the dashboard")
	l := &c.DashboardLimits
	fs.IntVar(&l.StoresPerAccount, "dashboard-stores-per-account", l.StoresPerAccount, "most stores one dashboard account may create (0: no cap)")
	fs.IntVar(&l.WritesPerMinute, "dashboard-write-rate", l.WritesPerMinute, "dashboard forms one account may post per minute (0: off)")
	fs.IntVar(&l.WriteBurst, "dashboard-write-burst", l.WriteBurst, "burst of the dashboard write rate")
	fs.IntVar(&l.SearchesPerMinute, "dashboard-search-rate", l.SearchesPerMinute, "dashboard searches (filtered invoice lists, CSV exports) one account may run per minute (0: off)")
	fs.IntVar(&l.SearchBurst, "dashboard-search-burst", l.SearchBurst, "burst of the dashboard search rate")
}

// checkDashboardLimits reports the dashboard limits that are out of
// range to bad (Config.validate).
func (c *Config) checkDashboardLimits(bad func(key, format string, args ...any)) {
	l := c.DashboardLimits
	for _, v := range []struct {
		key   string
		value int
	}{
		{"dashboard-stores-per-account", l.StoresPerAccount}, {"dashboard-write-rate", l.WritesPerMinute},
		{"dashboard-search-rate", l.SearchesPerMinute},
	} {
		if v.value < 0 {
			bad(v.key, "must be 0 (off) or positive")
		}
	}
	if l.WritesPerMinute > 0 && l.WriteBurst < 1 {
		bad("dashboard-write-burst", "must be at least 1 while dashboard-write-rate is on")
	}
	if l.SearchesPerMinute > 0 && l.SearchBurst < 1 {
		bad("dashboard-search-burst", "must be at least 1 while dashboard-search-rate is on")
	}
}

// dashboardLimits are the flags' limits for dashboard.Deps, where 0
// means the default and a negative value off.
func (c Config) dashboardLimits() dashboard.Limits {
	l := c.DashboardLimits
	for _, v := range []*int{&l.StoresPerAccount, &l.WritesPerMinute, &l.SearchesPerMinute} {
		if *v == 0 {
			*v = -1
		}
	}
	return l
}

// topUpEvery is how often every node credits paid top-ups.
const topUpEvery = 5 * time.Second

// newDashboard builds the merchant dashboard over the API's services and
// the top-ups ledger.
func (m *Main) newDashboard(d kassahttp.Deps, topUps *topup.Ledger) (*dashboard.Dashboard, error) {
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
	var services dashboard.Services // none before the actors start (tests of the flags)
	if m.sys != nil {
		services = m.sys.Service
	}
	var history kassa.HistoryReader // none before the store opens (tests of the flags)
	if m.db != nil {
		history = m.db
	}
	return dashboard.New(dashboard.Deps{
		Reader: d.Reader, Services: services, KV: d.KV, TopUps: topUps, Simulator: d.Simulator, Simulated: d.Simulated, Clock: d.Clock, Logger: d.Logger,
		PublicURL: d.PublicURL, AdminToken: d.AdminToken, Signup: c.DashboardSignup, SignupOperator: c.Dev, PercentFee: fee,
		ClientIPHeader: d.ClientIPHeader, Dev: c.Dev, Operator: d.Operator, Currencies: d.Rates.Currencies(),
		Limits: c.dashboardLimits(), Refunds: d.Refunds, Payouts: d.Payouts, History: history,
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
