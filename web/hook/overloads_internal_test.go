package hook

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
)

// TestOverloadsAreFlushed: the 503s for overload a node counted reach the
// database at the next flush, added per tenant, hour and reason, and a
// made-up tenant name is dropped without failing the flush.
func TestOverloadsAreFlushed(t *testing.T) {
	t.Parallel()
	store, err := postgres.New(testdb.New(t), make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := store.CreateTenant(domain.WithActor(ctx, domain.Actor{Kind: domain.ActorCLI, Name: "test"}), "acme", ""); err != nil {
		t.Fatal(err)
	}
	l := newRefusalLog(store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	now := time.Now()
	for range 3 {
		l.overload("acme", domain.OverloadLookupGate, now)
	}
	l.overload("acme", domain.OverloadBudget, now)
	l.overload("made-up", domain.OverloadLookupGate, now)
	if err := l.flush(ctx); err != nil {
		t.Fatal(err)
	}
	l.overload("acme", domain.OverloadLookupGate, now)
	if err := l.flush(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := store.Pool().Query(ctx, `SELECT reason, n FROM overload_refusals ORDER BY reason`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	var (
		reason string
		n      int64
	)
	for rows.Next() {
		if err := rows.Scan(&reason, &n); err != nil {
			t.Fatal(err)
		}
		got[reason] = n
	}
	if len(got) != 2 || got[domain.OverloadLookupGate] != 4 || got[domain.OverloadBudget] != 1 {
		t.Fatalf("stored %v, want lookup_gate 4 and budget 1", got)
	}
}
