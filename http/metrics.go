package http

import (
	"strconv"
	"time"
)

// countRequest records an answered request in the metrics, by route
// pattern rather than path, so that ids never become label values.
func (s *server) countRequest(method, route string, status int, d time.Duration) {
	switch method {
	case "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH":
	default:
		method = "other" // a label value per made-up method would grow without bound
	}
	s.Metrics.HTTPRequests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	s.Metrics.HTTPDuration.WithLabelValues(method, route).Observe(d.Seconds())
}
