package changefeed_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/changefeed"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// TestFeedPagesStopAtBytes: asked for 1,000 changes, a page stops before
// its snapshots pass MaxChangePageBytes. Three changes of 3 MiB, one of
// 9 MiB and a small one come as [3, 3], [3], the 9 MiB one alone, then
// the small one; a filter counts only the changes it lets through.
func TestFeedPagesStopAtBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, p := pgtest.Setup(t, postgres.New)
	other := pgtest.Provider(t, s, "acme", "other")
	snapshot := func(mib int) string { return `{"notes":"` + strings.Repeat("x", mib<<20) + `"}` }
	for i, mib := range []int{3, 3, 3, 9, 0} {
		pgtest.Ingest(t, s, p, pgtest.Event(fmt.Sprintf("e%d", i), fmt.Sprintf("c%d", i), 1, snapshot(mib)))
	}
	pgtest.Ingest(t, s, other, pgtest.Event("o1", "o1", 1, snapshot(3)))
	pgtest.Ingest(t, s, other, pgtest.Event("o2", "o2", 1, snapshot(3)))

	feed := changefeed.New(postgres.Pools{Write: s.Pool()})
	pages := func(filter stream.ChangeFilter) [][]string {
		var out [][]string
		for after := int64(0); ; {
			got, err := feed.Changes(ctx, p.TenantID, stream.ChangeQuery{After: after, Limit: stream.MaxChangeLimit, ChangeFilter: filter})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 {
				return out
			}
			var ids []string
			for _, c := range got {
				ids = append(ids, c.ObjectID)
				after = c.Position
			}
			out = append(out, ids)
		}
	}
	want := [][]string{{"c0", "c1"}, {"c2"}, {"c3"}, {"c4", "o1", "o2"}}
	if got := pages(stream.ChangeFilter{}); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("pages %v, want %v", got, want)
	}
	want = [][]string{{"o1", "o2"}}
	if got := pages(stream.ChangeFilter{Provider: "other"}); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("provider other: pages %v, want %v", got, want)
	}
}
