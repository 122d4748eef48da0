package httpx

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tidemark/tidemark/domain"
)

// Metrics are labelled by provider kind, never by tenant, so their
// cardinality stays fixed however many tenants there are. The webhook
// receiver and replays count on them; the server serves them.
type Metrics struct {
	registry   *prometheus.Registry
	deliveries *prometheus.CounterVec
	events     *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	limited    *prometheus.CounterVec // 429s, by the budget that ran out
	tenantBusy prometheus.Counter     // 503s of a tenant holding its share of the ingest pool
	overloaded *prometheus.CounterVec // 503s for overload, by reason (domain.OverloadReasons)
}

// NewMetrics registers Tidemark's metrics and extra, those of other
// packages (such as storage's group sizes).
func NewMetrics(extra ...prometheus.Collector) *Metrics {
	m := &Metrics{
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
		overloaded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidemark_ingest_refusals_total",
			Help: "Deliveries answered 503 for overload, by reason: queue_full, budget, memory, lookup_gate.",
		}, []string{"reason"}),
	}
	for _, reason := range domain.OverloadReasons { // each shows, at 0, from the start
		m.overloaded.WithLabelValues(reason)
	}
	m.registry.MustRegister(m.deliveries, m.events, m.latency, m.limited, m.tenantBusy, m.overloaded,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.registry.MustRegister(extra...)
	return m
}

// Delivery counts a delivery answered with status after seconds.
func (m *Metrics) Delivery(kind string, status int, seconds float64) {
	m.deliveries.WithLabelValues(kind, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(kind).Observe(seconds)
}

// Events counts a committed delivery's (or replay's) outcomes.
func (m *Metrics) Events(kind string, results []domain.Result) {
	for _, res := range results {
		m.events.WithLabelValues(kind, string(res.Outcome)).Inc()
	}
}

// Limited counts a 429 of the refusal budget over ("address" or "provider").
func (m *Metrics) Limited(over string) { m.limited.WithLabelValues(over).Inc() }

// TenantBusy counts a 503 of a tenant holding its share of the ingest pool.
func (m *Metrics) TenantBusy() { m.tenantBusy.Inc() }

// Overloaded counts a 503 for overload for reason (domain.OverloadReason);
// "" is no overload, and counts nothing.
func (m *Metrics) Overloaded(reason string) {
	if reason != "" {
		m.overloaded.WithLabelValues(reason).Inc()
	}
}

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}
