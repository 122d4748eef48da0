package search_test

import (
	"context"
	"slices"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
	"github.com/tidemark/tidemark/postgres/search"
)

func indexSearch(t *testing.T, s *postgres.Store) {
	t.Helper()
	if _, err := s.IndexSearch(context.Background()); err != nil {
		t.Fatalf("IndexSearch: %v", err)
	}
}

// directoryIDs lists the provider/id of the tenant's records that match search.
func directoryIDs(t *testing.T, s *postgres.Store, tenantID int64, search string) []string {
	t.Helper()
	list, _, err := s.RecordDirectory(context.Background(), tenantID, domain.RecordQuery{Search: search}, domain.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range list {
		ids = append(ids, r.Provider+"/"+r.ObjectID)
	}
	return ids
}

// TestIndexSearchRereadsOnlyTheGaps: IndexSearch remembers, of the ids it
// read, only the ones no committed row held (a transaction still running
// drew them), reads those again once that transaction has ended, and
// forgets them then; the ids it found are not read a second time.
func TestIndexSearchRereadsOnlyTheGaps(t *testing.T) {
	t.Parallel()
	s, crm := pgtest.Setup(t, postgres.New)
	ctx := context.Background()
	var before int64
	if err := s.Pool().QueryRow(ctx, search.RecordFeedSequenceSQL).Scan(&before); err != nil {
		t.Fatal(err)
	}
	slow := pgtest.SlowAndFast(t, s.Pool(), crm, pgtest.RecordWithRevisionSQL) // slow draws before+1, fast before+2
	progress := func() (scanned int64, gaps []search.IdGap, pending bool) {
		t.Helper()
		var ranges search.IdRanges
		var pendingID *int64
		if err := s.Pool().QueryRow(ctx, `SELECT scanned_id, gaps, pending_id FROM search_progress WHERE feed = 'records'`).
			Scan(&scanned, &ranges, &pendingID); err != nil {
			t.Fatal(err)
		}
		return scanned, search.FromRanges(ranges), pendingID != nil
	}
	indexSearch(t, s)
	scanned, gaps, pending := progress()
	if want := []search.IdGap{search.Gap(before, before+1)}; scanned != before+2 || !slices.Equal(gaps, want) || !pending {
		t.Fatalf("while the slow one runs: scanned %d, gaps %v, pending %v; want %d, %v, pending", scanned, gaps, pending, before+2, want)
	}
	if _, err := s.Pool().Exec(ctx, pgtest.RecordWithRevisionSQL, crm.TenantID, crm.ID, "third"); err != nil {
		t.Fatal(err)
	}
	indexSearch(t, s)
	if scanned, gaps, _ := progress(); scanned != before+3 || len(gaps) != 1 {
		t.Fatalf("after a third committed: scanned %d, gaps %v; want %d and the slow one's id alone", scanned, gaps, before+3)
	}
	if err := slow.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	indexSearch(t, s)
	if scanned, gaps, pending := progress(); scanned != before+3 || len(gaps) != 0 || pending {
		t.Errorf("after the slow one committed: scanned %d, gaps %v, pending %v; want %d, none, none", scanned, gaps, pending, before+3)
	}
	got := directoryIDs(t, s, crm.TenantID, "late")
	slices.Sort(got)
	if want := []string{"crm/fast", "crm/slow", "crm/third"}; !slices.Equal(got, want) {
		t.Errorf("directory: %v, want %v", got, want)
	}
}
