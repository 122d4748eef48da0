package changefeed_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/changefeed"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

func all(t *testing.T, s *postgres.Store, tenantID int64) []stream.Change {
	t.Helper()
	cs, err := s.Changes(context.Background(), tenantID, stream.ChangeQuery{Limit: stream.MaxChangeLimit})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func describe(cs []stream.Change) []string {
	var out []string
	for _, c := range cs {
		rev, prev := "-", "-"
		if c.Revision != nil {
			rev = fmt.Sprint(*c.Revision)
		}
		if c.PreviousRevision != nil {
			prev = fmt.Sprint(*c.PreviousRevision)
		}
		out = append(out, fmt.Sprintf("%s %s rev=%s prev=%s changed=%v snapshot=%s", c.Type, c.ObjectID, rev, prev, c.Changed, c.Snapshot))
	}
	return out
}

// TestOwnersChanges: a reset, an adopted conflict and an erasure are
// changes; after a reset the next snapshot is a record's first again, and
// an erasure empties the snapshots of the record's earlier changes.
func TestOwnersChanges(t *testing.T) {
	t.Parallel()
	ctx := pgtest.AsOperator(context.Background())
	s, p := pgtest.Setup(t, postgres.New)
	ref := domain.RecordRef{Provider: "crm", ObjectType: "contact", ObjectID: "c1"}
	pgtest.WantOutcome(t, pgtest.Ingest(t, s, p, pgtest.Event("e1", "c1", 5, `{"a":1}`)), domain.Applied)
	conflict := pgtest.Ingest(t, s, p, pgtest.Event("e2", "c1", 5, `{"a":2}`))
	pgtest.WantOutcome(t, conflict, domain.RevisionConflict)
	if _, err := s.ResolveConflict(ctx, p.TenantID, conflict.ConflictID, domain.ResolveAdopt, "", "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResetRecord(ctx, p.TenantID, ref); err != nil {
		t.Fatal(err)
	}
	pgtest.WantOutcome(t, pgtest.Ingest(t, s, p, pgtest.Event("e3", "c1", 2, `{"a":3}`)), domain.Applied)
	want := []string{
		`record.applied c1 rev=5 prev=- changed=[a] snapshot={"a": 1}`,
		`record.applied c1 rev=5 prev=5 changed=[a] snapshot={"a": 2}`,
		`record.reset c1 rev=- prev=5 changed=[] snapshot=`,
		`record.applied c1 rev=2 prev=- changed=[a] snapshot={"a": 3}`,
	}
	if got := describe(all(t, s, p.TenantID)); !slices.Equal(got, want) {
		t.Fatalf("changes\n%q\nwant\n%q", got, want)
	}
	if got := all(t, s, p.TenantID)[1].EventID; got != "e2" {
		t.Fatalf("the adoption names event %q, want e2", got)
	}

	if _, err := s.EraseRecord(ctx, p.TenantID, ref); err != nil {
		t.Fatal(err)
	}
	got := all(t, s, p.TenantID)
	if len(got) != 5 || got[4].Type != stream.ChangeErased || *got[4].PreviousRevision != 2 {
		t.Fatalf("after the erasure: %q", describe(got))
	}
	for _, c := range got {
		if c.Snapshot != nil {
			t.Fatalf("change %d of the erased record still carries its snapshot %s", c.Position, c.Snapshot)
		}
	}
}

// TestFeedFilters: provider and object type narrow the feed; a bad limit
// is refused; another tenant's feed is its own.
func TestFeedFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, p := pgtest.Setup(t, postgres.New)
	other := pgtest.Provider(t, s, "acme", "other")
	elsewhere := pgtest.Provider(t, s, "globex", "crm")
	pgtest.Ingest(t, s, p, pgtest.Event("e1", "c1", 1, `{}`))
	pgtest.Ingest(t, s, other, pgtest.Event("e2", "c2", 1, `{}`))
	pgtest.Ingest(t, s, elsewhere, pgtest.Event("e3", "c3", 1, `{}`))
	feed := changefeed.New(postgres.Pools{Write: s.Pool()})
	got, err := feed.Changes(ctx, p.TenantID, stream.ChangeQuery{Limit: 10, ChangeFilter: stream.ChangeFilter{Provider: "other"}})
	if err != nil || len(got) != 1 || got[0].EventID != "e2" || got[0].Position != 2 {
		t.Fatalf("provider filter: %v %v", describe(got), err)
	}
	if got, _ := feed.Changes(ctx, p.TenantID, stream.ChangeQuery{Limit: 10, ChangeFilter: stream.ChangeFilter{ObjectType: "deal"}}); len(got) != 0 {
		t.Fatalf("object type filter: %v", describe(got))
	}
	if got, _ := feed.Changes(ctx, elsewhere.TenantID, stream.ChangeQuery{Limit: 10}); len(got) != 1 || got[0].EventID != "e3" || got[0].Position != 1 {
		t.Fatalf("globex's feed: %v", describe(got))
	}
	if head, err := feed.ChangeHead(ctx, p.TenantID); err != nil || head != 2 {
		t.Fatalf("head %d %v, want 2", head, err)
	}
	if _, err := feed.Changes(ctx, p.TenantID, stream.ChangeQuery{Limit: 1001}); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("limit 1001: %v", err)
	}
}
