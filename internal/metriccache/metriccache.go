// Package metriccache keeps what a collector that reads the database
// exported for a while, so that scrapes of /metrics, which anyone who
// reaches its address can send, cost the database one read per collector
// and period however many there are.
package metriccache

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Period is how long a reading is served before the next scrape reads
// again: shorter than any rule's evaluation that matters to a scraper.
const Period = 10 * time.Second

// Collector serves its inner collector's last reading while it is younger
// than its period; a scrape past that reads again, one at a time.
type Collector struct {
	inner  prometheus.Collector
	period time.Duration
	now    func() time.Time

	mu      sync.Mutex
	read    time.Time
	metrics []prometheus.Metric
}

// New caches inner's readings for period.
func New(inner prometheus.Collector, period time.Duration) *Collector {
	return &Collector{inner: inner, period: period, now: time.Now}
}

// Describe describes the inner collector's metrics.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { c.inner.Describe(ch) }

// Collect sends the last reading, reading again first when it is older
// than the period. Scrapes that meet a reading in progress wait for it.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read.IsZero() || c.now().Sub(c.read) >= c.period {
		c.metrics = c.collect()
		c.read = c.now()
	}
	for _, m := range c.metrics {
		ch <- m
	}
}

func (c *Collector) collect() []prometheus.Metric {
	got := make(chan prometheus.Metric)
	var metrics []prometheus.Metric
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range got {
			metrics = append(metrics, m)
		}
	}()
	c.inner.Collect(got)
	close(got)
	<-done
	return metrics
}
