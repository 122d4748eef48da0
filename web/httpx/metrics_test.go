package httpx_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/httpx"
)

// TestOverloadRefusalsByReason: /metrics shows every reason of a 503 for
// overload from the start, and counts each refusal under its own.
func TestOverloadRefusalsByReason(t *testing.T) {
	t.Parallel()
	m := httpx.NewMetrics()
	m.Overloaded(domain.OverloadReason(domain.RefuseOverload(domain.OverloadBudget, "slow")))
	m.Overloaded(domain.OverloadLookupGate)
	m.Overloaded(domain.OverloadLookupGate)
	m.Overloaded(domain.OverloadReason(domain.Errorf(domain.EUNAVAILABLE, "the database is down"))) // no overload
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`tidemark_ingest_refusals_total{reason="budget"} 1`,
		`tidemark_ingest_refusals_total{reason="lookup_gate"} 2`,
		`tidemark_ingest_refusals_total{reason="memory"} 0`,
		`tidemark_ingest_refusals_total{reason="queue_full"} 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("no %q in /metrics", want)
		}
	}
}
