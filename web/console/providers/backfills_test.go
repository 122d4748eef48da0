package providers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestBackfillSection: owners and operators start a backfill from the
// provider page and cancel it; viewers see the jobs but neither form, and
// are refused if they post; a window the form cannot take is said so.
func TestBackfillSection(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Provider("acme", "billing")
	hubReady(t, e)
	owner := e.Operator("owner@example.com", false, "acme")
	operator := e.WithRole("op@example.com", domain.RoleOperator)
	viewer := e.WithRole("viewer@example.com", domain.RoleViewer)
	page := "/t/acme/providers/hub"

	_, doc := owner.Get(page)
	form := doc.Find(`#backfill form.backfill-form[method=post][action="/t/acme/providers/hub/backfills"]`)
	if form.Length() != 1 || form.Find("input[name=since]").AttrOr("value", "") != "72h" {
		t.Fatalf("owner's form: %d, since %q", form.Length(), form.Find("input[name=since]").AttrOr("value", ""))
	}
	var types []string
	form.Find("select[name=object_type] option").Each(func(_ int, o *goquery.Selection) { types = append(types, o.AttrOr("value", "?")) })
	if strings.Join(types, ",") != ",contact" {
		t.Errorf("object types %q, want every one and contact", types)
	}
	if !strings.Contains(webtest.Text(doc, "#backfill"), "No backfill of hub yet") ||
		!strings.Contains(webtest.Text(doc, "#backfill .backfill-about"), "API credentials") {
		t.Errorf("empty section: %q", webtest.Text(doc, "#backfill"))
	}

	status, _, loc := operator.Post(page+"/backfills", url.Values{"since": {"48h"}, "object_type": {"contact"}})
	if status != http.StatusSeeOther || loc != page+"#backfill" {
		t.Fatalf("operator's pull: %d to %q", status, loc)
	}
	_, doc = operator.Get(page)
	if flash := webtest.ShownFlash(doc); !strings.Contains(flash, "queued: 48h0m0s of changes") {
		t.Errorf("flash %q", flash)
	}
	row := doc.Find("#backfill table.backfill-jobs tbody tr")
	if got := cells(row); row.Length() != 1 || !strings.Contains(got, "| op@example.com | 48 h | contact |") ||
		!strings.Contains(got, "| contact | queued | 0 | 0 | 0 |  | Cancel") || row.Find(".badge.job-queued").Length() != 1 {
		t.Fatalf("job row: %q", got)
	}
	id := row.AttrOr("data-job", "")
	cancel := fmt.Sprintf("%s/backfills/%s/cancel", page, id)
	if row.Find(`form[action="`+cancel+`"] button`).Length() != 1 {
		t.Fatal("no cancel button on a queued job")
	}
	// One job of the provider queued or running at a time.
	operator.Post(page+"/backfills", url.Values{"since": {"24h"}})
	if _, doc = operator.Get(page); !strings.Contains(webtest.ShownFlash(doc), "backfill job "+id+" of provider hub is already queued") ||
		doc.Find("#backfill tbody tr").Length() != 1 {
		t.Errorf("a second pull: flash %q, %d jobs", webtest.ShownFlash(doc), doc.Find("#backfill tbody tr").Length())
	}

	// The viewer sees the job but no form, and cannot post either.
	_, doc = viewer.Get(page)
	if doc.Find("#backfill form").Length() != 0 || doc.Find("#backfill table.backfill-jobs tbody tr").Length() != 1 {
		t.Fatalf("viewer: %d forms, %d jobs", doc.Find("#backfill form").Length(), doc.Find("#backfill tbody tr").Length())
	}
	if status, _, _ := viewer.Post(page+"/backfills", url.Values{"since": {"72h"}}); status != http.StatusForbidden {
		t.Errorf("viewer's pull: %d", status)
	}
	if status, _, _ := viewer.Post(cancel, nil); status != http.StatusForbidden {
		t.Errorf("viewer's cancel: %d", status)
	}

	// Cancelling: once, then it has ended; another provider's page does
	// not reach the job.
	if status, _, _ := owner.Post(fmt.Sprintf("/t/acme/providers/billing/backfills/%s/cancel", id), nil); status != http.StatusNotFound {
		t.Errorf("cancel through billing: %d", status)
	}
	if status, _, loc := owner.Post(cancel, nil); status != http.StatusSeeOther || loc != page+"#backfill" {
		t.Fatalf("cancel: %d to %q", status, loc)
	}
	_, doc = owner.Get(page)
	if flash := webtest.ShownFlash(doc); !strings.Contains(flash, "cancelled before it started") ||
		doc.Find("#backfill .badge.job-cancelled").Length() != 1 || doc.Find("#backfill tbody form").Length() != 0 {
		t.Errorf("after the cancel: flash %q, %q", flash, webtest.Text(doc, "#backfill tbody"))
	}
	owner.Post(cancel, nil)
	if _, doc = owner.Get(page); !strings.Contains(webtest.ShownFlash(doc), "has already ended (cancelled)") {
		t.Errorf("second cancel: %q", webtest.ShownFlash(doc))
	}

	// A window the form cannot take starts nothing.
	for _, since := range []string{"", "91d", "2161h"} {
		owner.Post(page+"/backfills", url.Values{"since": {since}})
		if _, doc = owner.Get(page); webtest.ShownFlash(doc) == "" || doc.Find("#backfill tbody tr").Length() != 1 {
			t.Errorf("since %q: flash %q, %d jobs", since, webtest.ShownFlash(doc), doc.Find("#backfill tbody tr").Length())
		}
	}
	if got := e.AuditLog("acme"); !strings.Contains(strings.Join(got, "\n"), "op@example.com backfill_start backfill job "+id+": hub, contact") ||
		!strings.Contains(strings.Join(got, "\n"), "owner@example.com backfill_cancel backfill job "+id+": cancelled while queued") {
		t.Errorf("audit %q", got)
	}
}

// TestBackfillRunningJob: a running job shows its counts and can be asked
// to stop once; a failed one shows its reason, escaped.
func TestBackfillRunningJob(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("owner@example.com", false, "acme")
	ctx := webtest.CliContext()
	crm := e.Tenant("acme")
	hubReady(t, e)
	p, err := e.Store.ProviderSummary(ctx, crm.ID, "hub")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	// A tenant runs one job at a time: the failed one, then the sweep.
	failed, _ := e.Store.StartBackfill(ctx, crm.ID, p.ID, now.Add(-time.Hour), now, `<img src=x onerror=alert(1)>`, false)
	if _, ok, err := e.Store.ClaimBackfill(context.Background()); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := e.Store.FinishBackfill(context.Background(), crm.ID, failed.ID, pull.Progress{}, pull.Failed,
		`<script>alert("x")</script> refused`); err != nil {
		t.Fatal(err)
	}
	running, _ := e.Store.StartBackfill(ctx, crm.ID, p.ID, now.Add(-90*time.Minute), now, "", true)
	if _, ok, err := e.Store.ClaimBackfill(context.Background()); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, err := e.Store.ReportBackfill(context.Background(), crm.ID, running.ID,
		pull.Progress{Deliveries: 2, Events: 40, Missed: 3, Outcomes: map[string]int{"applied": 3, "duplicate": 37}}); err != nil {
		t.Fatal(err)
	}

	_, doc := b.Get("/t/acme/providers/hub")
	rows := doc.Find("#backfill tbody tr")
	run := rows.Filter(fmt.Sprintf(`[data-job="%d"]`, running.ID))
	if got := cells(run); !strings.Contains(got, "| the sweep | 90 min | every") ||
		!strings.Contains(got, "| every object type | running | 2 | 40 | 3 |  | Cancel") || run.Find("form button").Length() != 1 {
		t.Errorf("running job: %q", got)
	}
	fail := rows.Filter(fmt.Sprintf(`[data-job="%d"]`, failed.ID))
	if fail.Find("script, img").Length() != 0 || doc.Find("#backfill script").Length() != 0 ||
		fail.Find(".reason").Text() != `<script>alert("x")</script> refused` || !strings.Contains(fail.Text(), "<img src=x onerror=alert(1)>") ||
		fail.Find("form").Length() != 0 {
		t.Errorf("failed job, escaped: %q", fail.Text())
	}

	b.Post(fmt.Sprintf("/t/acme/providers/hub/backfills/%d/cancel", running.ID), nil)
	_, doc = b.Get("/t/acme/providers/hub")
	run = doc.Find(fmt.Sprintf(`#backfill tbody tr[data-job="%d"]`, running.ID))
	if flash := webtest.ShownFlash(doc); !strings.Contains(flash, "will stop") || run.Find(".badge").Text() != "stopping" ||
		run.Find("form").Length() != 0 {
		t.Errorf("asked to stop: flash %q, %q", flash, strings.Join(strings.Fields(run.Text()), " "))
	}
}

// cells is the text of a row's cells, joined by " | ".
func cells(row *goquery.Selection) string {
	var out []string
	row.Find("td").Each(func(_ int, td *goquery.Selection) { out = append(out, strings.Join(strings.Fields(td.Text()), " ")) })
	return strings.Join(out, " | ")
}

// hubReady connects acme's HubSpot provider "hub" with API credentials and
// the scope contact.propertyChange, as its first webhook would create it.
func hubReady(t *testing.T, e *webtest.Env) {
	t.Helper()
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	tenant := e.Tenant("acme")
	p, err := e.Store.ConnectProvider(ctx, tenant.ID, "hub", "hubspot", "hubspot-app-secret-0123456789", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Store.SetAPICredentials(ctx, tenant.ID, p.ID, pull.Credentials{Token: "pat-test-0123456789"}); err != nil {
		t.Fatal(err)
	}
	e.Exec(fmt.Sprintf(`INSERT INTO scopes (tenant_id, provider_id, object_type, action) VALUES (%d, %d, 'contact', 'propertyChange')`,
		tenant.ID, p.ID))
}

// TestBackfillNeedsCredentials: a provider whose kind has an API but no
// credentials shows the section without the form, saying what to set; a
// kind without an API has no section.
func TestBackfillNeedsCredentials(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	owner := e.Operator("owner@example.com", false, "acme")
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	if _, err := e.Store.ConnectProvider(ctx, e.Tenant("acme").ID, "hub", "hubspot", "hubspot-app-secret-0123456789", nil); err != nil {
		t.Fatal(err)
	}
	_, doc := owner.Get("/t/acme/providers/hub")
	if doc.Find("#backfill form.backfill-form").Length() != 0 || doc.Find("#backfill .backfill-needs-credentials").Length() != 1 {
		t.Errorf("a provider without credentials: %q", webtest.Text(doc, "#backfill"))
	}
	_, doc = owner.Get("/t/acme/providers/crm")
	if doc.Find("#backfill").Length() != 0 {
		t.Errorf("a standard provider has a backfill section: %q", webtest.Text(doc, "#backfill"))
	}
}
