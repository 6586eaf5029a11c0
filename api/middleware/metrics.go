package middleware

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

// Label values of finsync_http_request_duration_seconds that do not come
// from the route table.
const (
	// RouteUnmatched labels every request that matched no route (404, or
	// 405 for a known path with another method), whatever its path.
	RouteUnmatched = "unmatched"
	// MethodOther labels every method outside the standard set.
	MethodOther = "OTHER"
)

// Metrics counts requests by route and status with a latency histogram.
// Guarantee: its label values are bounded whatever clients send: the route
// is a route template of the router (or RouteUnmatched), the method one of
// the nine standard methods (or MethodOther), the status one the handlers
// write. Caveat: a series, once created, is kept for the process's life.
type Metrics struct {
	duration *prometheus.HistogramVec
}

// NewMetrics registers the HTTP metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "finsync_http_request_duration_seconds",
			Help:    "HTTP request latency by route template, method (standard ones; others are OTHER) and status.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "method", "status"}),
	}
	reg.MustRegister(m.duration)
	return m
}

// Handler observes every request.
func (m *Metrics) Handler() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = RouteUnmatched
		}
		m.duration.WithLabelValues(route, MethodLabel(c.Request.Method), strconv.Itoa(c.Writer.Status())).Observe(time.Since(start).Seconds())
	}
}

// MethodLabel returns method when it is one of the standard HTTP methods
// (RFC 9110 and PATCH, matched exactly: methods are case-sensitive), and
// MethodOther for anything else.
func MethodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return MethodOther
}
