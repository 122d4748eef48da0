package domain

// OverviewService serves the overview page: outcome counts from the counters, the chart, latest deliveries.
type OverviewService interface{}
