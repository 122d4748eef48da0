package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestTimelineOutcomeLabel: the record timeline names an outcome as every
// other page does ("revision conflict"), never by its machine value.
func TestTimelineOutcomeLabel(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.ConflictOf("c-1", 3, `{"a":1}`, `{"a":2}`)
	b := e.Operator("ann@example.com", false, "acme")
	status, doc := b.Get("/t/acme/contacts/crm/c-1")
	if status != http.StatusOK {
		t.Fatalf("timeline: %d", status)
	}
	if got := webtest.Text(doc, ".badge.revision_conflict"); got != "revision conflict" {
		t.Errorf("badge %q, want %q", got, "revision conflict")
	}
	if main := webtest.Text(doc, "main"); strings.Contains(main, "revision_conflict") {
		t.Errorf("the timeline shows the machine value: %q", main)
	}
	// The event history and the timeline agree.
	_, doc = b.Get("/t/acme/events?outcome=revision_conflict")
	if got := webtest.Text(doc, ".badge.revision_conflict"); got != "revision conflict" {
		t.Errorf("event history badge %q", got)
	}
}
