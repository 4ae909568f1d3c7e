// Package metrics holds Kassa's Prometheus metrics: a Set of the
// counters and histograms that the HTTP server, the actors, the store
// and the webhook and forward actors update as they work (each is given
// the service's Set), and collectors that read the backends' state when
// Prometheus scrapes. A Set's Registry, with those collectors, is what
// the admin listener (--metrics-listen) serves. docs/decisions.md,
// "Observability", says why client_golang rather than the OpenTelemetry
// metric SDK.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// latency are the buckets of request and delivery durations, in seconds.
var latency = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// Set is one service's metrics: the counters and histograms its parts
// update as they work, and the registry that holds them with the Go
// runtime's and the process's. The parts are given their Set (the
// Metrics field of their config; a part without one makes its own,
// unserved), so that two services in one process, as in tests, count
// apart.
type Set struct {
	// Registry holds every metric of the Set, plus the Go runtime's and
	// the process's.
	Registry *prometheus.Registry

	// HTTPRequests counts answered requests by method, route pattern
	// ("unmatched" for no route) and status code.
	HTTPRequests *prometheus.CounterVec
	// HTTPDuration is the time to answer a request.
	HTTPDuration *prometheus.HistogramVec

	// InvoicesCreated counts created invoices by each payment method
	// they offer (an invoice offering both counts once under each).
	InvoicesCreated *prometheus.CounterVec
	// InvoicesSettled counts settled invoices by the method that paid.
	InvoicesSettled *prometheus.CounterVec

	// CommitDuration and CommitBytes describe durable Pebble commits.
	CommitDuration prometheus.Histogram
	CommitBytes    prometheus.Histogram

	// WebhookDeliveries counts delivery attempts by outcome: delivered
	// (a 2xx answer), failed (anything else), dropped (the webhook was
	// deleted or disabled before the attempt).
	WebhookDeliveries *prometheus.CounterVec
	// WebhookDuration is the time of a delivery's HTTP request.
	WebhookDuration *prometheus.HistogramVec

	// SettleLag is the time from the Lightning node's settle of an
	// invoice to Kassa's durable record of it.
	SettleLag prometheus.Histogram

	// ForwardAttempts counts forward payment attempts by outcome
	// (succeeded, failed: the node said the payment failed, or an
	// attempt that could not be made).
	ForwardAttempts *prometheus.CounterVec
}

// New returns a Set with every metric registered and the series of
// known label values present from the start, so that a rate() or an
// alert sees 0 rather than nothing.
func New() *Set {
	m := &Set{
		Registry: prometheus.NewRegistry(),
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kassa_http_requests_total", Help: "HTTP requests answered, by method, route pattern and status code.",
		}, []string{"method", "route", "status"}),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kassa_http_request_duration_seconds", Help: "Time to answer an HTTP request, by method and route pattern.",
			Buckets: latency,
		}, []string{"method", "route"}),
		InvoicesCreated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kassa_invoices_created_total", Help: "Invoices created, by payment method offered.",
		}, []string{"method"}),
		InvoicesSettled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kassa_invoices_settled_total", Help: "Invoices settled, by the payment method that paid them.",
		}, []string{"method"}),
		CommitDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kassa_pebble_commit_duration_seconds", Help: "Time of a durable Pebble batch commit.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}),
		CommitBytes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kassa_pebble_commit_bytes", Help: "Size of a committed Pebble batch.",
			Buckets: prometheus.ExponentialBuckets(64, 4, 9), // 64 B to 4 MiB
		}),
		WebhookDeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kassa_webhook_deliveries_total", Help: "Webhook delivery attempts, by outcome (delivered, failed, dropped).",
		}, []string{"outcome"}),
		WebhookDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kassa_webhook_delivery_duration_seconds", Help: "Time of a webhook delivery's HTTP request, by outcome.",
			Buckets: latency,
		}, []string{"outcome"}),
		SettleLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kassa_lightning_settle_lag_seconds", Help: "Time from the Lightning node's settle to Kassa's durable record of it.",
			Buckets: latency,
		}),
		ForwardAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kassa_forward_attempts_total", Help: "Lightning forward attempts, by outcome (succeeded, failed).",
		}, []string{"outcome"}),
	}
	m.Registry.MustRegister(
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.HTTPRequests, m.HTTPDuration, m.InvoicesCreated, m.InvoicesSettled, m.CommitDuration, m.CommitBytes,
		m.WebhookDeliveries, m.WebhookDuration, m.SettleLag, m.ForwardAttempts,
	)
	for _, method := range []string{"onchain", "lightning"} {
		m.InvoicesCreated.WithLabelValues(method)
		m.InvoicesSettled.WithLabelValues(method)
	}
	for _, o := range []string{"delivered", "failed", "dropped"} {
		m.WebhookDeliveries.WithLabelValues(o)
	}
	for _, o := range []string{"succeeded", "failed"} {
		m.ForwardAttempts.WithLabelValues(o)
	}
	return m
}

// Or returns m, or a new Set of its own when m is nil (a part given no
// Set still counts, unserved).
func Or(m *Set) *Set {
	if m == nil {
		return New()
	}
	return m
}
