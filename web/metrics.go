package web

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are labelled by provider kind, never by tenant, so their
// cardinality stays fixed however many tenants there are.
type metrics struct {
	registry   *prometheus.Registry
	deliveries *prometheus.CounterVec
	events     *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	limited    *prometheus.CounterVec // 429s, by the budget that ran out
	tenantBusy prometheus.Counter     // 503s of a tenant holding its share of the ingest pool
}

// newMetrics registers Tidemark's metrics and extra, those of other
// packages (such as storage's group sizes).
func newMetrics(extra ...prometheus.Collector) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidemark_deliveries_total", Help: "Webhook deliveries by provider kind and HTTP status.",
		}, []string{"kind", "status"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidemark_events_total", Help: "Events by provider kind and outcome.",
		}, []string{"kind", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tidemark_ingest_duration_seconds",
			Help:    "Time from receiving a delivery to answering it, by provider kind.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"kind"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidemark_refusals_limited_total", Help: "Deliveries answered 429, by the refusal budget that ran out (address or provider).",
		}, []string{"limit"}),
		tenantBusy: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tidemark_tenant_busy_total", Help: "Deliveries answered 503 because their tenant held its share of the ingest pool.",
		}),
	}
	m.registry.MustRegister(m.deliveries, m.events, m.latency, m.limited, m.tenantBusy,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.registry.MustRegister(extra...)
	return m
}

func (m *metrics) delivery(kind string, status int, seconds float64) {
	m.deliveries.WithLabelValues(kind, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(kind).Observe(seconds)
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}
