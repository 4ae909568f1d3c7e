package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// scrapeTimeout bounds what one collector may spend asking a backend.
const scrapeTimeout = 3 * time.Second

// Func is a collector that computes its samples when scraped: describe
// lists the descriptions, collect sends the samples.
type Func struct {
	Descs   []*prometheus.Desc
	Collect func(ctx context.Context, ch chan<- prometheus.Metric)
}

// Describe sends the descriptions.
func (f Func) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range f.Descs {
		ch <- d
	}
}

// collector adapts Func to prometheus.Collector with a bounded context.
type collector struct{ Func }

func (c collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	c.Func.Collect(ctx, ch)
}

// Collector adapts f to a prometheus.Collector whose Collect gives f a
// context bounded to a few seconds.
func Collector(f Func) prometheus.Collector { return collector{f} }

// Gauge is a shorthand for a constant gauge sample.
func Gauge(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

// Counter is a shorthand for a constant counter sample.
func Counter(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}
