package main

import (
	"strings"
	"testing"

	"github.com/kassapay/kassa/dashboard"
)

// TestDashboardLimitFlags: the dashboard's per-account limits are flags,
// KASSA_* variables and file keys, default to dashboard.DefaultLimits,
// take 0 as off, and refuse negative values.
func TestDashboardLimitFlags(t *testing.T) {
	clearKassaEnv(t)
	c, _, err := loadTest(t)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.dashboardLimits(); got != dashboard.DefaultLimits() {
		t.Errorf("default limits %+v, want %+v", got, dashboard.DefaultLimits())
	}
	t.Setenv("KASSA_DASHBOARD_WRITE_RATE", "5")
	t.Setenv("KASSA_DASHBOARD_STORES_PER_ACCOUNT", "0")
	c, src, err := loadTest(t, "--dashboard-search-rate", "0", "--dashboard-search-burst", "2", "--dashboard-write-burst", "3")
	if err != nil {
		t.Fatal(err)
	}
	want := dashboard.Limits{StoresPerAccount: -1, WritesPerMinute: 5, WriteBurst: 3, SearchesPerMinute: -1, SearchBurst: 2}
	if got := c.dashboardLimits(); got != want || src["dashboard-write-rate"] != "KASSA_DASHBOARD_WRITE_RATE" {
		t.Errorf("limits %+v from %q, want %+v", got, src["dashboard-write-rate"], want)
	}
	clearKassaEnv(t)
	for _, args := range [][]string{
		{"--dashboard-stores-per-account", "-1"},
		{"--dashboard-write-rate", "-3"},
		{"--dashboard-search-burst", "0"},
	} {
		if _, _, err := loadTest(t, args...); err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(args[0], "--")) {
			t.Errorf("%v: %v, want an error naming the flag", args, err)
		}
	}
}
