package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestConsoleSearchNotUTF8 (review 3): the records directory and the
// event history answer a search that is not valid UTF-8 with 400 and a
// message naming the search, not with PostgreSQL's error.
func TestConsoleSearchNotUTF8(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, `{"job_title":"CTO"}`))
	for _, path := range []string{"/t/acme/records?q=%FF", "/t/acme/events?q=cto%C3"} {
		status, doc := b.Get(path)
		page, _ := doc.Html()
		if status != http.StatusBadRequest || !strings.Contains(page, "the search (q) is not valid UTF-8") {
			t.Errorf("%s: %d, want 400 naming the search:\n%.2000s", path, status, page)
		}
	}
}
