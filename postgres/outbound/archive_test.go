package outbound_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// TestArchivedTenantIsNotSentTo: an archived tenant's destinations are
// neither taken nor renewed, so its sender stops; unarchived, they are
// taken again with what waits.
func TestArchivedTenantIsNotSentTo(t *testing.T) {
	t.Parallel()
	s, acme := pgtest.Setup(t, postgres.New)
	ctx := pgtest.AsCLI(context.Background())
	if _, _, err := s.CreateDestination(ctx, acme.TenantID, stream.NewDestination{URL: "https://203.0.113.1/hook"}); err != nil {
		t.Fatal(err)
	}
	pgtest.Ingest(t, s, acme, pgtest.Event("e1", "c1", 1, `{}`))
	if taken, err := s.TakeDestinations(ctx, "a", time.Minute, 10, 10, nil); err != nil || len(taken) != 1 {
		t.Fatalf("took %d (%v), want the destination", len(taken), err)
	}
	if _, err := s.ArchiveTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if held, err := s.RenewDestinations(ctx, "a", time.Minute); err != nil || len(held) != 0 {
		t.Fatalf("renewed %d (%v) of an archived tenant, want none", len(held), err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE destinations SET lease_until = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if taken, err := s.TakeDestinations(ctx, "b", time.Minute, 10, 10, nil); err != nil || len(taken) != 0 {
		t.Fatalf("took %d (%v) of an archived tenant, want none", len(taken), err)
	}
	if _, err := s.UnarchiveTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if taken, err := s.TakeDestinations(ctx, "b", time.Minute, 10, 10, nil); err != nil || len(taken) != 1 {
		t.Fatalf("took %d (%v) after unarchive, want the destination", len(taken), err)
	}
}
