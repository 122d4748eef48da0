package queue

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// collector reads the queue's state at each scrape of /metrics.
type collector struct {
	q                       *Queue
	up, depth, oldest, dead *prometheus.Desc
}

// Collector returns the queue's gauges for serve's /metrics:
// tidemark_queue_depth, tidemark_queue_oldest_seconds,
// tidemark_queue_dead_letters and tidemark_queue_up (0 while the stream
// cannot be read; the others are then left out).
func (q *Queue) Collector() prometheus.Collector {
	return &collector{q: q,
		up:     prometheus.NewDesc("tidemark_queue_up", "1 when the delivery queue's stream could be read at this scrape, else 0.", nil, nil),
		depth:  prometheus.NewDesc("tidemark_queue_depth", "Deliveries queued and not yet applied by a worker.", nil, nil),
		oldest: prometheus.NewDesc("tidemark_queue_oldest_seconds", "Age of the oldest queued delivery; 0 when none waits.", nil, nil),
		dead:   prometheus.NewDesc("tidemark_queue_dead_letters", "Deliveries moved to the dead-letter stream after failing too often.", nil, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.depth
	ch <- c.oldest
	ch <- c.dead
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := c.q.State(ctx, 0)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	age := 0.0
	if !st.Oldest.IsZero() {
		age = max(0, time.Since(st.Oldest).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(st.Depth))
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age)
	ch <- prometheus.MustNewConstMetric(c.dead, prometheus.GaugeValue, float64(st.DeadLetters))
}
