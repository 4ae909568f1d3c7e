package measure

import "fmt"

// Goal is the target of a figure: its value Op Target, where Target is
// the number, or the value of the figure named Of in the same run.
type Goal struct {
	Op     string // one of >=, >, <=, <
	Target float64
	Of     string
}

// Goals holds the target of every figure that has one, by BENCH name.
// A figure without an entry is summarised without a verdict.
var Goals = map[string]Goal{
	"invoice_create_vs_work_floor":             {Op: ">=", Target: 0.9},
	"invoice_create_p99_ms":                    {Op: "<=", Target: 20},
	"tracing_overhead_pct":                     {Op: "<=", Target: 15},
	"webhook_settle_to_delivery_p99_ms":        {Op: "<", Target: 50},
	"rss_per_closed_invoice_bytes":             {Op: "<=", Target: 20},
	"rss_after_300k_closed_invoices_mb":        {Op: "<", Target: 150},
	"rss_after_1m_closed_invoices_mb":          {Op: "<", Target: 200},
	"restart_ready_s":                          {Op: "<", Target: 2},
	"rss_after_restart_per_open_invoice_bytes": {Op: "<=", Of: "rss_steady_per_open_invoice_bytes"},
	"chain_block_match_ms":                     {Op: "<", Target: 50},
	"cluster_create_postgres_vs_pebble":        {Op: ">=", Target: 0.85},
	"cluster_failover_inflight_max_ms":         {Op: "<=", Target: 4000},
	"ln_invoice_create_vs_lnd":                 {Op: ">=", Target: 0.9},
	"bytes_per_open_invoice":                   {Op: "<", Target: 4096},
	"signin_flood_good_within_2s":              {Op: ">=", Target: 0.95},
	"signin_flood_peak_rss_mb":                 {Op: "<", Target: 256},
	"search_orderid_p99_ms":                    {Op: "<=", Target: 10},
	"search_email_p99_ms":                      {Op: "<=", Target: 10},
	"list_first_page_ms":                       {Op: "<=", Target: 10},
	"expired_webhook_late_p99_s":               {Op: "<=", Target: 5},
	"cluster_expired_webhook_late_p99_s":       {Op: "<=", Target: 5},
	"disk_per_invoice_bytes":                   {Op: "<=", Target: 1100},
	"cluster_scale_2_vs_1":                     {Op: ">=", Target: 1.8},
	"cluster_scale_3_vs_1":                     {Op: ">=", Target: 2.6},
}

// Met tells whether value meets g, given the figures of the run; ok is
// false when g refers to a figure the run did not produce.
func (g Goal) Met(value float64, figures map[string]float64) (met, ok bool) {
	target := g.Target
	if g.Of != "" {
		if target, ok = figures[g.Of]; !ok {
			return false, false
		}
	}
	switch g.Op {
	case ">=":
		return value >= target, true
	case ">":
		return value > target, true
	case "<=":
		return value <= target, true
	case "<":
		return value < target, true
	}
	return false, false
}

// String spells the goal as in `goal >= 0.9`.
func (g Goal) String() string {
	if g.Of != "" {
		return "goal " + g.Op + " " + g.Of
	}
	return fmt.Sprintf("goal %s %.4g", g.Op, g.Target)
}
