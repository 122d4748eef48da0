package views_test

import (
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

const hostile = `<script>alert("x")</script>`

func TestEventLogRows(t *testing.T) {
	t.Parallel()
	rev := int64(12)
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		event domain.LoggedEvent
		cells []string // the row's cells as a user reads them (an id's copy button has no text)
	}{
		{"applied",
			domain.LoggedEvent{DeliveryID: "d1", Seq: 0, EventID: "m1", Provider: "crm", ObjectType: "contact", Action: "snapshot",
				ObjectID: "c-1", Revision: &rev, Outcome: domain.Applied, ReceivedAt: at},
			[]string{"2026-11-29 10:00", "crm", "contact.snapshot", "c-1", "12", "applied", "", "m1", "d1"}},
		{"conflict links to its review",
			domain.LoggedEvent{DeliveryID: "d2", Seq: 1, EventID: "m2", Provider: "crm", ObjectType: "contact", Action: "snapshot",
				ObjectID: "c-1", Revision: &rev, Outcome: domain.RevisionConflict, ConflictID: 7, ReceivedAt: at},
			[]string{"2026-11-29 10:00", "crm", "contact.snapshot", "c-1", "12", "revision conflict conflict #7", "", "m2", "d2"}},
		{"rejected, hostile reason shown as text",
			domain.LoggedEvent{DeliveryID: "d3", Seq: 0, EventID: hostile, Provider: "crm", ObjectType: "contact", Action: "snapshot",
				Outcome: domain.Rejected, Reason: hostile, ReceivedAt: at},
			[]string{"2026-11-29 10:00", "crm", "contact.snapshot", "none", "none", "rejected", hostile, hostile + "", "d3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, html := render(t, views.EventLogView(acme("events"), views.EventLogPage{Events: []domain.LoggedEvent{tc.event}}))
			rows := doc.Find("table.events tbody tr")
			if rows.Length() != 1 {
				t.Fatalf("%d rows, want 1", rows.Length())
			}
			var cells []string
			rows.Find("td").Each(func(_ int, td *goquery.Selection) {
				cells = append(cells, seen(td))
			})
			if strings.Join(cells, " | ") != strings.Join(tc.cells, " | ") {
				t.Errorf("row\n got %q\nwant %q", cells, tc.cells)
			}
			if doc.Find("script:not([src])").Length() != 0 || strings.Contains(html, hostile) {
				t.Error("a payload became markup")
			}
			if href := rows.Find("a.event-link").AttrOr("href", ""); !strings.HasPrefix(href, "/t/acme/events/"+tc.event.DeliveryID+"/") {
				t.Errorf("event link %q", href)
			}
			if href := rows.Find("a.delivery-link").AttrOr("href", ""); href != "/t/acme/deliveries/"+tc.event.DeliveryID {
				t.Errorf("delivery link %q", href)
			}
			if tc.event.ConflictID != 0 && rows.Find(`a.event-conflict[href="/t/acme/conflicts/7"]`).Length() != 1 {
				t.Error("no link to the conflict")
			}
		})
	}
}

func TestEventLogEmpty(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		page views.EventLogPage
		want string // the message shown instead of a table
	}{
		{"no events yet", views.EventLogPage{}, "No events yet."},
		{"filters match nothing", views.EventLogPage{Filters: views.EventLogFilters{Outcome: "stale"}},
			"No events match these filters: outcome stale. Clear some filters to see more."},
		{"a time range matches nothing", views.EventLogPage{Filters: views.EventLogFilters{Outcome: "stale", From: "2026-11-29T10:00"}},
			"No events match these filters: outcome stale, received from 2026-11-29 10:00 UTC. Widen the time range or clear some filters."},
		{"search error", views.EventLogPage{Error: "The search took too long"}, "The search took too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, _ := render(t, views.EventLogView(acme("events"), tc.page))
			if doc.Find("table.events").Length() != 0 {
				t.Error("a table is shown")
			}
			if got := text(doc, "main"); !strings.Contains(got, tc.want) {
				t.Errorf("page says %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEventDetailPayloadIsText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, payload, shown string
	}{
		{"JSON is indented", `{"note":"` + strings.ReplaceAll(hostile, `"`, `\"`) + `"}`,
			"{\n  \"note\": \"<script>alert(\\\"x\\\")</script>\"\n}"},
		{"not JSON is shown as sent", hostile, hostile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := views.EventDetailPage{Event: domain.EventDetail{
				LoggedEvent: domain.LoggedEvent{DeliveryID: "d1", EventID: "m1", Provider: "crm", ObjectType: "contact",
					Action: "snapshot", Outcome: domain.Rejected, Reason: "data.snapshot must be an object"},
				Payload:  []byte(tc.payload),
				Delivery: domain.DeliveryBrief{ID: "d1", Status: 200, Signature: domain.SignatureValid, EventCount: 1},
			}}
			doc, html := render(t, views.EventDetailView(acme("events"), p))
			if got := doc.Find("pre.payload").Text(); got != tc.shown {
				t.Errorf("payload shown as\n%s\nwant\n%s", got, tc.shown)
			}
			if doc.Find("script:not([src])").Length() != 0 || strings.Contains(html, "<script>alert") {
				t.Error("the payload became markup")
			}
			if got := text(doc, ".event-reason"); got != "data.snapshot must be an object" {
				t.Errorf("reason %q", got)
			}
		})
	}
}
