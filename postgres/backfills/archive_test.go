package backfills_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// TestArchivedTenantIsNotSwept: an archived tenant's providers are not
// due for a sweep and its queued jobs are not claimed; unarchived, they
// are again.
func TestArchivedTenantIsNotSwept(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	other := pgtest.Provider(t, s, "globex", "crm")
	withScope(t, s, p, other)
	withCredentials(t, s, p)
	withCredentials(t, s, other)
	ctx := pgtest.AsCLI(context.Background())
	now := time.Now()
	if _, err := s.StartBackfill(ctx, other.TenantID, other.ID, now.Add(-time.Hour), now, "", false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ArchiveTenant(ctx, "globex"); err != nil {
		t.Fatal(err)
	}
	if d := due(t, s, now); len(d) != 1 || d[p.ID].TenantID != p.TenantID {
		t.Fatalf("sweeps due with globex archived: %+v, want acme's alone", d)
	}
	if c, ok, err := s.ClaimBackfill(ctx); err != nil || ok {
		t.Fatalf("claimed %+v (%v) of an archived tenant", c, err)
	}
	if _, err := s.UnarchiveTenant(ctx, "globex"); err != nil {
		t.Fatal(err)
	}
	if c, ok, err := s.ClaimBackfill(ctx); err != nil || !ok || c.TenantID != other.TenantID {
		t.Fatalf("claim after unarchive: %+v %v %v", c, ok, err)
	}
}
