package search

import (
	"context"
	"slices"
	"testing"

	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

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
	pool, p := pgtest.MigratedTo(t, 26)
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
