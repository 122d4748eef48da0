package domain

import (
	"context"
	"time"
)

// OverviewWindows are the periods the overview counts over, shortest first.
// A window holds the hourly buckets that start after now minus the window,
// so the current, partial hour is always included.
var OverviewWindows = []time.Duration{24 * time.Hour, 7 * 24 * time.Hour, 30 * 24 * time.Hour}

// OverviewChartDays is how many UTC days the overview chart shows, today
// included; OverviewDeliveries how many of the latest deliveries it lists.
const (
	OverviewChartDays  = 14
	OverviewDeliveries = 10
)

// OutcomeCounts counts events by outcome; refused deliveries are counted
// under DeliveryRejected. Absent keys are zero.
type OutcomeCounts map[string]int64

// Events is the number of events counted, refused deliveries excluded.
func (c OutcomeCounts) Events() int64 {
	var n int64
	for _, o := range Outcomes {
		n += c[string(o)]
	}
	return n
}

// Add adds other's counts to c.
func (c OutcomeCounts) Add(other OutcomeCounts) {
	for k, n := range other {
		c[k] += n
	}
}

// ProviderCounts are one provider's counts, one per OverviewWindows entry.
type ProviderCounts struct {
	Provider string
	Windows  []OutcomeCounts
}

// DayCounts are the counts of one UTC day.
type DayCounts struct {
	Day    time.Time // midnight UTC
	Counts OutcomeCounts
}

// Overview is the summary on a tenant's first page.
type Overview struct {
	Providers     []ProviderCounts // every provider of the tenant, by name
	Days          []DayCounts      // OverviewChartDays UTC days, oldest first, ending today
	OpenConflicts int64            // revision conflicts waiting for review
	Deliveries    []DeliveryBrief  // the latest OverviewDeliveries, newest first
	// Overloads are the deliveries answered 503 for overload in the last
	// 24 hours, by reason (OverloadReasons); a reason with none is absent.
	Overloads map[string]int64
}

// Totals sums the providers' counts per window.
func (o Overview) Totals() []OutcomeCounts {
	totals := make([]OutcomeCounts, len(OverviewWindows))
	for i := range totals {
		totals[i] = OutcomeCounts{}
		for _, p := range o.Providers {
			totals[i].Add(p.Windows[i])
		}
	}
	return totals
}

// StatsService counts outcomes: all-time totals for the API and the
// overview's windows, chart, open conflicts and latest deliveries.
type StatsService interface {
	// Stats counts outcomes over all time from the counters; provider may be
	// empty for all providers, and an unknown one is ENOTFOUND.
	Stats(ctx context.Context, tenantID int64, provider string) (map[Outcome]int64, error)
	// Overview summarises the tenant as of now. Counts come from the outcome
	// counters (hourly buckets), never from the event log. A tenant with no
	// providers gets an empty overview, not an error.
	Overview(ctx context.Context, tenantID int64, now time.Time) (Overview, error)
}
