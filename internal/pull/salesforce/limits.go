package salesforce

import (
	"context"
	"fmt"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// DeliveryAllocation reads the org's event delivery allocation over the
// last 24 hours from the limits resource (REST API Developer Guide,
// "Limits"): DailyDeliveredPlatformEvents, which change events delivered to
// Pub/Sub API clients count against (Change Data Capture Developer Guide,
// "Change Data Capture Allocations": the delivery allocation is shared by
// change events and high-volume platform events).
func (s *Source) DeliveryAllocation(ctx context.Context) (domain.CDCAllocation, error) {
	var limits map[string]struct {
		Max, Remaining *int64
	}
	if err := s.get(ctx, s.versionPath("limits"), nil, &limits); err != nil {
		return domain.CDCAllocation{}, err
	}
	l, ok := limits["DailyDeliveredPlatformEvents"]
	if !ok || l.Max == nil || l.Remaining == nil {
		return domain.CDCAllocation{}, fmt.Errorf("salesforce: the limits resource has no DailyDeliveredPlatformEvents with Max and Remaining")
	}
	return domain.CDCAllocation{Max: *l.Max, Remaining: *l.Remaining, At: time.Now()}, nil
}
