package views_test

import (
	"testing"

	"github.com/tidemark/tidemark/views"
)

// Pages count outcomes by their labels, in display order.
func TestOutcomeCounts(t *testing.T) {
	t.Parallel()
	got := views.OutcomeCounts(map[string]int64{"revision_conflict": 1, "applied": 2, "stale": 0})
	if want := "2 applied, 1 revision conflict"; got != want {
		t.Errorf("OutcomeCounts = %q, want %q", got, want)
	}
	if got := views.OutcomeCounts(nil); got != "" {
		t.Errorf("no counts = %q", got)
	}
}
