package views_test

import (
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// TestDeliverySource: the inspector and the delivery list say where a
// delivery came from, a journal page as such; it cannot be replayed.
func TestDeliverySource(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ source, inspector, badge string }{
		{"", "webhook", ""},
		{domain.SourceBackfill, "backfill: pulled from the provider's API", "backfill"},
		{domain.SourceJournal, "journal: a page of the provider's change journal", "journal"},
		{domain.SourceCDC, "cdc: change events of the provider's Change Data Capture stream", "cdc"},
	} {
		brief := domain.DeliveryBrief{ID: "0190-d1", Provider: "hubspot", ReceivedAt: at, Status: 200,
			Signature: domain.SignatureValid, Source: tc.source}
		d := domain.DeliveryDetail{DeliveryBrief: brief, TenantSlug: "acme", Body: []byte(`[]`),
			Request: domain.Request{Method: "POST", Path: "/webhooks/acme/hubspot"}}
		doc, _ := render(t, views.DeliveryView(acme("events"), views.DeliveryPage{Delivery: d}))
		if got := text(doc, "td.source"); got != tc.inspector {
			t.Errorf("source %q: the inspector says %q, want %q", tc.source, got, tc.inspector)
		}
		doc, _ = render(t, views.DeliveryListView(acme("deliveries"), views.DeliveryListPage{Deliveries: []domain.DeliveryBrief{brief}}))
		if got := text(doc, "span.backfill"); got != tc.badge {
			t.Errorf("source %q: the list's badge %q, want %q", tc.source, got, tc.badge)
		}
		if err := d.Replayable(); (err == nil) != (tc.source == "") {
			t.Errorf("source %q: replayable %v", tc.source, err)
		}
	}
}
