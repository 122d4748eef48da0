package overview_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestOverviewShowsOverloadsByReason: the 503s for overload of the last 24
// hours are on the overview, in all and by reason, as the nodes counted
// them; older hours, other tenants and made-up tenant names are not.
func TestOverviewShowsOverloadsByReason(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Provider("acme", "erp")
	e.Tenant("globex")
	b := e.Operator("ops@example.com", false, "acme")
	if _, doc := b.Get("/t/acme"); webtest.Text(doc, ".overload-count") != "0" ||
		webtest.Text(doc, ".overload-reasons") != "None: no delivery was refused for overload." {
		t.Fatalf("before any: %q, %q", webtest.Text(doc, ".overload-count"), webtest.Text(doc, ".overload-reasons"))
	}
	hour := time.Now().UTC().Truncate(time.Hour)
	node := []domain.OverloadCount{
		{TenantSlug: "acme", Hour: hour, Reason: domain.OverloadBudget, N: 3},
		{TenantSlug: "acme", Hour: hour, Reason: domain.OverloadLookupGate, N: 2},
		{TenantSlug: "acme", Hour: hour.Add(-30 * time.Hour), Reason: domain.OverloadQueueFull, N: 7},
		{TenantSlug: "globex", Hour: hour, Reason: domain.OverloadMemory, N: 5},
		{TenantSlug: "no-such-tenant", Hour: hour, Reason: domain.OverloadLookupGate, N: 9},
	}
	for range 2 { // two nodes' flushes add up
		if err := e.Store.LogOverloads(context.Background(), node); err != nil {
			t.Fatal(err)
		}
	}
	status, doc := b.Get("/t/acme")
	if status != http.StatusOK {
		t.Fatalf("overview answered %d", status)
	}
	if got := webtest.Text(doc, ".overload-count"); got != "10" {
		t.Errorf("503s for overload shown %q, want 10", got)
	}
	if got := webtest.Text(doc, ".overload-reasons"); got != "over the time budget 6 · waiting for a lookup 4" {
		t.Errorf("reasons shown %q", got)
	}
}
