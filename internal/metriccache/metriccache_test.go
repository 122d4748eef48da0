package metriccache

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// reads is a collector that counts how often it is read, as a collector
// that queries the database would.
type reads struct{ n atomic.Int64 }

var readsDesc = prometheus.NewDesc("reads", "How often the collector was read.", nil, nil)

func (r *reads) Describe(ch chan<- *prometheus.Desc) { ch <- readsDesc }
func (r *reads) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(readsDesc, prometheus.GaugeValue, float64(r.n.Add(1)))
}

// TestScrapesWithinAPeriodReadOnce: a flood of scrapes reads the inner
// collector once per period, and each scrape gets that reading.
func TestScrapesWithinAPeriodReadOnce(t *testing.T) {
	inner := &reads{}
	c := New(inner, Period)
	now := time.Unix(1_800_000_000, 0)
	c.now = func() time.Time { return now }
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	scrape := func() float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil || len(mfs) != 1 {
			t.Fatalf("gather: %v, %d families", err, len(mfs))
		}
		return mfs[0].GetMetric()[0].GetGauge().GetValue()
	}
	for i := range 100 {
		if got := scrape(); got != 1 {
			t.Fatalf("scrape %d read %v, want the first reading, 1", i, got)
		}
		now = now.Add(Period / 200)
	}
	now = now.Add(Period)
	if got := scrape(); got != 2 {
		t.Fatalf("a scrape past the period read %v, want a new reading, 2", got)
	}
	if n := inner.n.Load(); n != 2 {
		t.Errorf("the inner collector was read %d times for 101 scrapes over two periods, want 2", n)
	}
}
