package maintain_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// TestCleanupRemovesOldRefusalMinutes: the per-minute counts of refused
// deliveries older than the refusals alert's longest window (and its first
// minute) go; younger ones stay, even past a shorter retention of the
// logs, since a 30-day window still counts them.
func TestCleanupRemovesOldRefusalMinutes(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	ctx := context.Background()
	now := time.Now()
	var counts []domain.RefusalCount
	for _, age := range []time.Duration{alerting.MaxWindow + 3*time.Minute, alerting.MaxWindow - time.Minute, 20 * 24 * time.Hour, time.Hour} {
		counts = append(counts, domain.RefusalCount{TenantID: p.TenantID, ProviderID: p.ID, Minute: domain.RefusalMinute(now.Add(-age)), N: 2})
	}
	if err := s.LogRefusals(ctx, counts, nil); err != nil {
		t.Fatal(err)
	}
	r, err := s.Cleanup(ctx, now, domain.MinRetention)
	if err != nil || r.ExpiredRefusals != 1 || !strings.Contains(r.String(), "removed 1 per-minute counts of refused deliveries") {
		t.Fatalf("cleanup: %v, %+v", err, r)
	}
	if n := cleanupCount(t, s, `SELECT count(*) FROM refusal_minutes WHERE tenant_id = $1`, p.TenantID); n != 3 {
		t.Fatalf("%d minutes left, want the 3 within the longest window", n)
	}
}
