package http_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kassapay/kassa"
	kassahttp "github.com/kassapay/kassa/http"
)

// scrape serves the stack's registry as /metrics does, fetches it and
// parses the text format: "name{k="v",…}" → value (a histogram gives
// name_count and name_sum).
func (s *stack) scrape() map[string]float64 {
	s.t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		s.t.Fatalf("Content-Type %q, want the text format", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.Metric {
			key := name + labels(m.Label)
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.Counter.GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.Gauge.GetValue()
			case dto.MetricType_HISTOGRAM:
				out[name+"_count"+labels(m.Label)] = float64(m.Histogram.GetSampleCount())
				out[name+"_sum"+labels(m.Label)] = m.Histogram.GetSampleSum()
			}
		}
	}
	return out
}

func labels(ls []*dto.LabelPair) string {
	if len(ls) == 0 {
		return ""
	}
	var parts []string
	for _, l := range ls {
		parts = append(parts, l.GetName()+`="`+l.GetValue()+`"`)
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// commitSpans counts the pebble.Commit spans ended so far and sums their
// batch sizes.
func commitSpans() (n int, bytes float64) {
	for _, sp := range kassahttp.Spans.Ended() {
		if sp.Name() == "pebble.Commit" {
			n++
			for _, a := range sp.Attributes() {
				if a.Key == "batch.bytes" {
					bytes += float64(a.Value.AsInt64())
				}
			}
		}
	}
	return n, bytes
}

// TestMetricsAfterARun scrapes the metrics before and after one invoice
// is created, paid by Lightning, announced to a webhook and forwarded,
// and checks that each series moved as that run implies.
func TestMetricsAfterARun(t *testing.T) {
	s := newStack(t)
	commitsBefore, bytesBefore := commitSpans()
	before := s.scrape()
	r := s.payOneInvoice()
	// The invoice actor passivates once settled and every mailbox
	// empties: wait for that state rather than for time.
	var after map[string]float64
	s.eventually("the actors to go idle", func() bool {
		after = s.scrape()
		return after[`kassa_actors{kind="invoice"}`] == 0 && after[`kassa_actor_mailbox_messages{kind="invoice"}`] == 0 &&
			after[`kassa_actor_mailbox_messages{kind="store"}`] == 0 && after[`kassa_actor_mailbox_messages{kind="webhook"}`] == 0 &&
			after[`kassa_actor_mailbox_messages{kind="forward"}`] == 0
	})
	commitsAfter, bytesAfter := commitSpans()
	inv, err := s.db.Invoice(context.Background(), r.invoiceID)
	if err != nil {
		t.Fatal(err)
	}
	delta := func(key string) float64 { return after[key] - before[key] }

	wantDelta := map[string]float64{
		`kassa_http_requests_total{method="POST",route="/admin/v1/stores",status="200"}`:                     1,
		`kassa_http_requests_total{method="POST",route="/api/v1/stores/{storeId}/webhooks",status="200"}`:    1,
		`kassa_http_requests_total{method="POST",route="/api/v1/stores/{storeId}/invoices",status="200"}`:    1,
		`kassa_http_requests_total{method="POST",route="/checkout/{invoiceId}/sim/pay",status="200"}`:        1,
		`kassa_http_request_duration_seconds_count{method="POST",route="/api/v1/stores/{storeId}/invoices"}`: 1,
		`kassa_invoices_settled_total{method="lightning"}`:                                                   1,
		`kassa_invoices_settled_total{method="onchain"}`:                                                     0,
		`kassa_webhook_deliveries_total{outcome="delivered"}`:                                                3, // New, Processing, Settled
		`kassa_webhook_deliveries_total{outcome="failed"}`:                                                   0,
		`kassa_webhook_delivery_duration_seconds_count{outcome="delivered"}`:                                 3,
		`kassa_lightning_settle_lag_seconds_count`:                                                           1,
		`kassa_forward_attempts_total{outcome="succeeded"}`:                                                  1,
		`kassa_forward_attempts_total{outcome="failed"}`:                                                     0,
		`kassa_pebble_commit_duration_seconds_count`:                                                         float64(commitsAfter - commitsBefore),
		`kassa_pebble_commit_bytes_count`:                                                                    float64(commitsAfter - commitsBefore),
		`kassa_pebble_commit_bytes_sum`:                                                                      bytesAfter - bytesBefore,
		`kassa_actor_restarts_total{kind="invoice"}`:                                                         0,
	}
	for _, m := range []kassa.PaymentMethod{kassa.MethodOnchain, kassa.MethodLightning} {
		label := map[kassa.PaymentMethod]string{kassa.MethodOnchain: "onchain", kassa.MethodLightning: "lightning"}[m]
		offered := 0.0
		for _, e := range inv.EnabledMethods {
			if e == m {
				offered = 1
			}
		}
		wantDelta[`kassa_invoices_created_total{method="`+label+`"}`] = offered
	}
	for key, want := range wantDelta {
		if _, ok := after[key]; !ok {
			t.Errorf("%s: no such series", key)
			continue
		}
		if got := delta(key); got != want {
			t.Errorf("%s moved by %v, want %v", key, got, want)
		}
	}
	if commitsAfter-commitsBefore < 5 {
		t.Errorf("only %d commits in the run", commitsAfter-commitsBefore)
	}

	chain := s.chain.Info(context.Background())
	wantNow := map[string]float64{
		`kassa_actors{kind="store"}`:     1,
		`kassa_actors{kind="webhook"}`:   1,
		`kassa_actors{kind="forward"}`:   1,
		`kassa_actors{kind="invoice"}`:   0,
		`kassa_chain_height`:             float64(chain.Height),
		`kassa_chain_node_height`:        float64(chain.Height),
		`kassa_chain_lag_blocks`:         0,
		`kassa_chain_synced`:             1,
		`kassa_lightning_connected`:      1,
		`kassa_lightning_synced`:         1,
		`kassa_forwards_pending`:         0,
		`kassa_forward_transfers_queued`: 0,
	}
	for key, want := range wantNow {
		got, ok := after[key]
		if !ok {
			t.Errorf("%s: no such series", key)
		} else if got != want {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	if age, ok := after[`kassa_rate_age_seconds{provider="fixed (simulation)"}`]; !ok || age < 0 {
		t.Errorf("rate age of the fixed rates: %v, %v", age, ok)
	}
	if free, size := after["kassa_disk_free_bytes"], after["kassa_disk_size_bytes"]; free <= 0 || size < free {
		t.Errorf("disk free %v of %v", free, size)
	}
	if after[`kassa_lightning_settle_lag_seconds_sum`]-before[`kassa_lightning_settle_lag_seconds_sum`] < 0 {
		t.Error("negative settle lag")
	}
}
