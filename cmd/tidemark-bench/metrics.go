package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/promtext"
	"github.com/tidemark/tidemark/domain"
)

// Names in the server's /metrics that the bench reads.
const (
	// groupSizeMetric is the histogram of deliveries per committed group;
	// servers without group commit do not have it.
	groupSizeMetric = "tidemark_ingest_group_size"
	eventsMetric    = "tidemark_events_total"
	// overloadMetric counts the 503s for overload, by reason.
	overloadMetric = "tidemark_ingest_refusals_total"
)

// overloadsSince are the 503s for overload between two scrapes, by reason.
func overloadsSince(before, after promtext.Metrics) map[string]float64 {
	out := map[string]float64{}
	for _, r := range domain.OverloadReasons {
		out[r] = after.Since(before, overloadMetric, map[string]string{"reason": r})
	}
	return out
}

// scrapeMetrics reads the server's /metrics.
func (p *serverProcess) scrapeMetrics(ctx context.Context) (promtext.Metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return promtext.Parse(resp.Body)
}
