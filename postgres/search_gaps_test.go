package postgres

import (
	"context"
	"slices"
	"testing"

	"github.com/tidemark/tidemark/domain"
)

// TestIndexSearchRereadsOnlyTheGaps: IndexSearch remembers, of the ids it
// read, only the ones no committed row held (a transaction still running
// drew them), reads those again once that transaction has ended, and
// forgets them then; the ids it found are not read a second time.
func TestIndexSearchRereadsOnlyTheGaps(t *testing.T) {
	t.Parallel()
	s, crm := setup(t)
	ctx := context.Background()
	var before int64
	if err := s.pool.QueryRow(ctx, recordFeedSequenceSQL).Scan(&before); err != nil {
		t.Fatal(err)
	}
	slow := slowAndFast(t, s, crm, recordWithRevisionSQL) // slow draws before+1, fast before+2
	progress := func() (scanned int64, gaps []idGap, pending bool) {
		t.Helper()
		var ranges idRanges
		var pendingID *int64
		if err := s.pool.QueryRow(ctx, `SELECT scanned_id, gaps, pending_id FROM search_progress WHERE feed = 'records'`).
			Scan(&scanned, &ranges, &pendingID); err != nil {
			t.Fatal(err)
		}
		return scanned, fromRanges(ranges), pendingID != nil
	}
	indexSearch(t, s)
	scanned, gaps, pending := progress()
	if want := []idGap{{before, before + 1}}; scanned != before+2 || !slices.Equal(gaps, want) || !pending {
		t.Fatalf("while the slow one runs: scanned %d, gaps %v, pending %v; want %d, %v, pending", scanned, gaps, pending, before+2, want)
	}
	if _, err := s.pool.Exec(ctx, recordWithRevisionSQL, crm.TenantID, crm.ID, "third"); err != nil {
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
	got := ids(directory(t, s, crm.TenantID, domain.RecordQuery{Search: "late"}))
	slices.Sort(got)
	if want := []string{"crm/fast", "crm/slow", "crm/third"}; !slices.Equal(got, want) {
		t.Errorf("directory: %v, want %v", got, want)
	}
}

// TestSplitGaps: the runs up to an id are read again, a run across it is
// cut there, and too many runs become the one that spans them.
func TestSplitGaps(t *testing.T) {
	upTo, rest := splitGaps([]idGap{{1, 3}, {5, 9}, {12, 14}}, 7)
	if want := []idGap{{1, 3}, {5, 7}}; !slices.Equal(upTo, want) {
		t.Errorf("up to 7: %v, want %v", upTo, want)
	}
	if want := []idGap{{7, 9}, {12, 14}}; !slices.Equal(rest, want) {
		t.Errorf("after 7: %v, want %v", rest, want)
	}
	many := make([]idGap, maxSearchGaps+1)
	for i := range many {
		many[i] = idGap{int64(2 * i), int64(2*i + 1)}
	}
	if got, want := boundGaps(many), []idGap{{0, 2*maxSearchGaps + 1}}; !slices.Equal(got, want) {
		t.Errorf("%d runs bound to %v, want %v", len(many), got, want)
	}
	if got := boundGaps(many[:3]); !slices.Equal(got, many[:3]) {
		t.Errorf("3 runs bound to %v, want them unchanged", got)
	}
}

// Migration 00027 turns the range read once but not yet again (safe_id,
// scanned_id] into one gap, so a range read before it is read again after;
// down again, the gap's start is safe_id.
func TestMigrationSearchGaps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, p := migratedTo(t, 26)
	if _, err := pool.Exec(ctx, `UPDATE search_progress SET safe_id = CASE feed WHEN 'records' THEN 40 ELSE 70 END,
	    scanned_id = CASE feed WHEN 'records' THEN 55 ELSE 70 END`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string][]idGap{"records": {{40, 55}}, "events": {}}
	for feed, wantGaps := range want {
		var ranges idRanges
		if err := pool.QueryRow(ctx, `SELECT gaps FROM search_progress WHERE feed = $1`, feed).Scan(&ranges); err != nil {
			t.Fatal(err)
		}
		if got := fromRanges(ranges); !slices.Equal(got, wantGaps) {
			t.Errorf("%s: gaps %v, want %v", feed, got, wantGaps)
		}
	}
	if _, err := p.DownTo(ctx, 26); err != nil {
		t.Fatal(err)
	}
	var safe int64
	if err := pool.QueryRow(ctx, `SELECT safe_id FROM search_progress WHERE feed = 'records'`).Scan(&safe); err != nil || safe != 40 {
		t.Errorf("down again: records safe_id %d (%v), want 40", safe, err)
	}
}
