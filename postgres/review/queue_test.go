package review_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// conflictIDs makes n revision conflicts of provider p (one per contact),
// oldest first.
func conflictIDs(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, prefix string, n int) []int64 {
	t.Helper()
	var ids []int64
	for i := range n {
		c := fmt.Sprintf("%s%d", prefix, i)
		pgtest.WantOutcome(t, pgtest.Ingest(t, s, p, pgtest.Event(c+"-a", c, 5, `{"a":1}`)), domain.Applied)
		r := pgtest.Ingest(t, s, p, pgtest.Event(c+"-b", c, 5, `{"a":2}`))
		pgtest.WantOutcome(t, r, domain.RevisionConflict)
		ids = append(ids, r.ConflictID)
	}
	return ids
}

func idsOf(cs []domain.Conflict) []int64 {
	var ids []int64
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids
}

// TestQueuePagesBothWays: the open queue read forward page by page, then
// back from its last page, gives the conflicts in the queue's order; the
// resolved list likewise, latest resolution first; another tenant's
// conflicts never appear; a bad cursor is EINVALID.
func TestQueuePagesBothWays(t *testing.T) {
	t.Parallel()
	ctx := pgtest.AsOperator(context.Background())
	s, p := pgtest.Setup(t, postgres.New)
	other := pgtest.Provider(t, s, "globex", "crm")
	conflictIDs(t, s, other, "g", 2)
	ids := conflictIDs(t, s, p, "c", 7)
	var resolved []int64
	for _, id := range ids[:4] { // resolved in this order: the list shows the last first
		if _, err := s.ResolveConflict(ctx, p.TenantID, id, domain.ResolveKeep, "", "ops"); err != nil {
			t.Fatal(err)
		}
		resolved = append([]int64{id}, resolved...)
	}
	open := ids[4:]

	type walk struct {
		name string
		page func(domain.Page) (domain.ConflictQueue, []domain.Conflict, domain.PageCursors)
		want []int64
	}
	for _, w := range []walk{
		{"open", func(pg domain.Page) (domain.ConflictQueue, []domain.Conflict, domain.PageCursors) {
			q, err := s.ConflictQueue(ctx, p.TenantID, pg, domain.Page{Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			return q, q.Open, q.OpenPages
		}, open},
		{"resolved", func(pg domain.Page) (domain.ConflictQueue, []domain.Conflict, domain.PageCursors) {
			q, err := s.ConflictQueue(ctx, p.TenantID, domain.Page{Limit: 1}, pg)
			if err != nil {
				t.Fatal(err)
			}
			return q, q.Resolved, q.ResolvedPages
		}, resolved},
	} {
		var forward, lastPage []int64
		q, list, c := w.page(domain.Page{Limit: 2})
		if c.Prev != "" {
			t.Errorf("%s: the first page has a way back", w.name)
		}
		if q.OpenTotal != len(open) || q.ResolvedTotal != len(resolved) {
			t.Errorf("%s: totals %d open, %d resolved; want %d, %d", w.name, q.OpenTotal, q.ResolvedTotal, len(open), len(resolved))
		}
		for {
			lastPage = idsOf(list)
			forward = append(forward, lastPage...)
			if c.Next == "" {
				break
			}
			_, list, c = w.page(domain.Page{Limit: 2, Cursor: c.Next})
			if c.Prev == "" {
				t.Errorf("%s: a later page has no way back", w.name)
			}
		}
		if !slices.Equal(forward, w.want) {
			t.Errorf("%s forward: %v, want %v", w.name, forward, w.want)
		}
		// Back from the last page to the first.
		backward := lastPage
		for c.Prev != "" {
			_, list, c = w.page(domain.Page{Limit: 2, Before: c.Prev})
			backward = append(idsOf(list), backward...)
		}
		if !slices.Equal(backward, w.want) {
			t.Errorf("%s backward: %v, want %v", w.name, backward, w.want)
		}
	}

	if _, err := s.ConflictQueue(ctx, p.TenantID, domain.Page{Cursor: "not-a-cursor"}, domain.Page{}); domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("a bad cursor: %v", err)
	}
}

// TestOpenNeighbours: an open conflict's neighbours are the open ones
// around it in the queue's order, skipping resolved ones and other
// tenants'.
func TestOpenNeighbours(t *testing.T) {
	t.Parallel()
	ctx := pgtest.AsOperator(context.Background())
	s, p := pgtest.Setup(t, postgres.New)
	ids := conflictIDs(t, s, p, "c", 4)
	conflictIDs(t, s, pgtest.Provider(t, s, "globex", "crm"), "g", 2)
	if _, err := s.ResolveConflict(ctx, p.TenantID, ids[1], domain.ResolveKeep, "", "ops"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id, prev, next int64
	}{
		{ids[0], 0, ids[2]},
		{ids[1], ids[0], ids[2]}, // resolved itself: its place in the queue still counts
		{ids[2], ids[0], ids[3]},
		{ids[3], ids[2], 0},
	} {
		prev, next, err := s.OpenNeighbours(ctx, p.TenantID, tc.id)
		if err != nil || prev != tc.prev || next != tc.next {
			t.Errorf("neighbours of %d: %d, %d, %v; want %d, %d", tc.id, prev, next, err, tc.prev, tc.next)
		}
	}
}
