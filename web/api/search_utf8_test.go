package api_test

import (
	"net/http"
	"testing"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestSearchNotUTF8 (review 3): a search that is not valid UTF-8 answers
// 400 naming the field, not PostgreSQL's error about the encoding.
func TestSearchNotUTF8(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, `{"job_title":"CTO"}`))
	for _, path := range []string{"records?q=%FF", "records?q=cto%C3", "events?q=%FF", "events?q=cto%ED%A0%80"} {
		status, body := e.Get("/api/v1/tenants/acme/"+path, token)
		webtest.AssertError(t, status, body, http.StatusBadRequest, "the search (q) is not valid UTF-8")
	}
	// So do the other text filters, each named.
	for path, field := range map[string]string{"records?provider=%FF": "provider", "events?object_id=%FF": "record",
		"events?object_type=%FF": "object type"} {
		status, body := e.Get("/api/v1/tenants/acme/"+path, token)
		webtest.AssertError(t, status, body, http.StatusBadRequest, "the "+field+" filter is not valid UTF-8")
	}
	// Valid non-ASCII text is still a search.
	for _, path := range []string{"records?q=caf%C3%A9", "events?q=caf%C3%A9"} {
		if status, body := e.Get("/api/v1/tenants/acme/"+path, token); status != http.StatusOK {
			t.Errorf("%s: %d %v", path, status, body)
		}
	}
}
