package views_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

func conflictPage(status string, current *domain.Record) views.ConflictPage {
	accepted := json.RawMessage(`{"company":"Acme","job_title":"Director"}`)
	conflicting := json.RawMessage(`{"company":"Acme","job_title":"<script>alert(1)</script>"}`)
	c := domain.Conflict{ID: 4, Provider: "crm", ObjectType: "contact", ObjectID: "c-1", Revision: 12,
		AcceptedEventID: "m2", AcceptedSnapshot: accepted, ConflictingEventID: "m4", ConflictingSnapshot: conflicting,
		Status: status, DetectedAt: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	if status != domain.ConflictOpen {
		at := c.DetectedAt.Add(time.Hour)
		c.ResolvedBy, c.ResolvedAt, c.Note = "ops@example.com", &at, "confirmed by the owner"
	}
	return views.ConflictPage{ConflictDetail: domain.ConflictDetail{Conflict: c, Current: current},
		Age: "3 h", Diff: views.DiffFields(accepted, conflicting)}
}

func TestConflictView(t *testing.T) {
	t.Parallel()
	atConflict := &domain.Record{Revision: 12, Snapshot: json.RawMessage(`{"job_title":"Director","company":"Acme"}`),
		ApplicationCount: 2, LastAppliedEvent: "m2"}
	movedOn := &domain.Record{Revision: 13, Snapshot: json.RawMessage(`{"job_title":"VP"}`), ApplicationCount: 3, LastAppliedEvent: "m9"}
	for _, tc := range []struct {
		name     string
		page     views.ConflictPage
		form     bool   // the resolve form is shown
		adopt    bool   // and adopting is possible
		decision string // the decision card's text; "" when open
		current  string // what the current-record card says
	}{
		{"open, record at the conflict's revision", conflictPage(domain.ConflictOpen, atConflict), true, true, "",
			"The record holds the accepted snapshot."},
		{"open, record moved on", conflictPage(domain.ConflictOpen, movedOn), true, false, "",
			"Adopting the conflicting snapshot is no longer possible"},
		{"open, record gone", conflictPage(domain.ConflictOpen, nil), true, false, "", "The record no longer exists."},
		{"kept", conflictPage(domain.ConflictKept, atConflict), false, false,
			"Kept the accepted snapshot · by ops@example.com on 2026-11-29 11:00:00 UTC", "The record holds the accepted snapshot."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, html := render(t, views.ConflictView(acme("conflicts"), tc.page))
			if got := seen(doc.Find("main h1")); got != "Conflict #4 "+tc.page.Status {
				t.Errorf("heading %q", got)
			}
			// The two payloads, side by side, as text.
			if got := doc.Find(".conflict-sides .accepted pre").Text(); got != "{\n  \"company\": \"Acme\",\n  \"job_title\": \"Director\"\n}" {
				t.Errorf("accepted snapshot shown as %q", got)
			}
			if got := doc.Find(".conflict-sides .conflicting pre").Text(); !strings.Contains(got, `"job_title": "<script>alert(1)</script>"`) {
				t.Errorf("conflicting snapshot shown as %q", got)
			}
			if strings.Contains(html, "<script>alert") || doc.Find("script:not([src])").Length() != 0 {
				t.Error("a snapshot became markup")
			}
			if got := text(doc, ".accepted .event-id") + " " + text(doc, ".conflicting .event-id"); got != "m2 m4" {
				t.Errorf("event ids %q", got)
			}
			changed := doc.Find("table.field-diff tr.diff-changed td:first-child")
			if changed.Length() != 1 || changed.Text() != "job_title" {
				t.Errorf("changed fields: %d (%q), want job_title", changed.Length(), changed.Text())
			}

			form := doc.Find(`form[method=post][action="/t/acme/conflicts/4/resolve"]`)
			if got := form.Length() == 1; got != tc.form {
				t.Fatalf("resolve form shown = %v, want %v", got, tc.form)
			}
			if tc.form {
				if form.Find(`button[value=keep]:not([disabled])`).Length() != 1 {
					t.Error("keep is not offered")
				}
				if got := form.Find(`button[value=adopt]:not([disabled])`).Length() == 1; got != tc.adopt {
					t.Errorf("adopt enabled = %v, want %v", got, tc.adopt)
				}
			}
			if got := seen(doc.Find(".decision p").First()); got != tc.decision {
				t.Errorf("decision %q, want %q", got, tc.decision)
			}
			if got := text(doc, ".current-record"); !strings.Contains(got, tc.current) {
				t.Errorf("current record says %q, want %q", got, tc.current)
			}
		})
	}
}

func TestConflictQueue(t *testing.T) {
	t.Parallel()
	open := views.QueuedConflict{Conflict: conflictPage(domain.ConflictOpen, nil).Conflict, Age: "3 h"}
	kept := views.QueuedConflict{Conflict: conflictPage(domain.ConflictKept, nil).Conflict}
	kept.ID = 3
	for _, tc := range []struct {
		name           string
		page           views.ConflictQueuePage
		openRows, done int
		says           string
	}{
		{"empty", views.ConflictQueuePage{}, 0, 0, "No revision conflicts."},
		{"one open, one resolved", views.ConflictQueuePage{Open: []views.QueuedConflict{open}, OpenTotal: 1,
			Resolved: []views.QueuedConflict{kept}}, 1, 1, "Open 1"},
		{"more open than listed", views.ConflictQueuePage{Open: []views.QueuedConflict{open}, OpenTotal: 5,
			OpenPages: views.Pages{Count: "5 open", Older: "/t/acme/conflicts?open_after=x", OldestFirst: true}},
			1, 0, "5 open Later →"},
		{"nothing open", views.ConflictQueuePage{Resolved: []views.QueuedConflict{kept}}, 0, 1, "nothing waits for a decision"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, _ := render(t, views.ConflictQueueView(acme("conflicts"), tc.page))
			if n := doc.Find("table.open tbody tr").Length(); n != tc.openRows {
				t.Errorf("%d open rows, want %d", n, tc.openRows)
			}
			if n := doc.Find("table.resolved tbody tr").Length(); n != tc.done {
				t.Errorf("%d resolved rows, want %d", n, tc.done)
			}
			if tc.openRows > 0 && doc.Find(`table.open a[href="/t/acme/conflicts/4"]`).Length() != 1 {
				t.Error("no review link")
			}
			if got := seen(doc.Find("#conflict-queue")); !strings.Contains(got, tc.says) {
				t.Errorf("queue says %q, want %q", got, tc.says)
			}
		})
	}
}
