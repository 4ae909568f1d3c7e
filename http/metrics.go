package http

import (
	"strconv"
	"time"

	"github.com/kassapay/kassa/metrics"
)

// countRequest records an answered request in the metrics, by route
// pattern rather than path, so that ids never become label values.
func countRequest(method, route string, status int, d time.Duration) {
	switch method {
	case "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH":
	default:
		method = "other" // a label value per made-up method would grow without bound
	}
	metrics.HTTPRequests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	metrics.HTTPDuration.WithLabelValues(method, route).Observe(d.Seconds())
}
