package providers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestOwnerRemovesProvider: an operator sees no Remove provider form and
// is refused 403; an owner who mistypes the name is sent back with
// nothing removed; typed right, the provider is removed (303 to the list,
// with a flash, audited), its URL answers 404 to a delivery signed with
// its old secret, which is not stored, its events are shown as of "crm
// (removed)", and a new provider takes the name.
func TestOwnerRemovesProvider(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	body := webtest.SnapshotBody("c-1", 1, `{"a":1}`)
	if status, _ := e.Deliver("acme", "crm", e.Secret, "evt-1", body); status != http.StatusOK {
		t.Fatalf("delivery before removal: %d", status)
	}
	e.Member("ops@example.com", false, domain.RoleOperator, "acme")
	ops := e.SignIn("ops@example.com")
	if _, doc := ops.Get("/t/acme/providers/crm"); doc.Find("#remove form").Length() != 0 {
		t.Fatal("an operator is shown the Remove provider form")
	}
	if status, _, _ := ops.Post("/t/acme/providers/crm/delete", url.Values{"confirm_name": {"crm"}}); status != http.StatusForbidden {
		t.Fatalf("an operator's removal: %d, want 403", status)
	}

	owner := e.Operator("owner@example.com", false, "acme")
	_, doc := owner.Get("/t/acme/providers/crm")
	form := doc.Find(`#remove form[method=post][action="/t/acme/providers/crm/delete"]`)
	if form.Length() != 1 || form.Find("input[name=confirm_name]").Length() != 1 || form.Find("input[type=checkbox][name=erase]").Length() != 1 {
		t.Fatalf("the owner's Remove provider form: %d", form.Length())
	}
	status, _, loc := owner.Post("/t/acme/providers/crm/delete", url.Values{"confirm_name": {"crn"}})
	if _, doc = owner.Get(loc); status != http.StatusSeeOther || loc != "/t/acme/providers/crm#remove" ||
		!strings.Contains(webtest.ShownFlash(doc), "not removed") {
		t.Fatalf("mistyped: %d to %q, %q", status, loc, webtest.ShownFlash(doc))
	}
	if status, _ := e.Deliver("acme", "crm", e.Secret, "evt-2", body); status != http.StatusOK {
		t.Fatalf("after a mistyped confirmation: %d", status)
	}

	status, _, loc = owner.Post("/t/acme/providers/crm/delete", url.Values{"confirm_name": {"crm"}})
	_, doc = owner.Get(loc)
	if status != http.StatusSeeOther || loc != "/t/acme/providers" ||
		!strings.Contains(webtest.ShownFlash(doc), `Provider crm is removed: its webhook URL answers 404`) {
		t.Fatalf("removal: %d to %q, %q", status, loc, webtest.ShownFlash(doc))
	}
	if doc.Find(`a[href="/t/acme/providers/crm"]`).Length() != 0 {
		t.Fatal("the providers list still links the removed provider")
	}
	stored := e.Count(`SELECT count(*) FROM deliveries`)
	if status, _ := e.Deliver("acme", "crm", e.Secret, "evt-3", body); status != http.StatusNotFound {
		t.Fatalf("a delivery signed with the old secret: %d, want 404", status)
	}
	e.FlushRefusals()
	if n := e.Count(`SELECT count(*) FROM deliveries`); n != stored {
		t.Fatalf("the refused delivery was stored: %d deliveries, were %d", n, stored)
	}
	if status, _ := owner.Get("/t/acme/providers/crm"); status != http.StatusNotFound {
		t.Fatalf("the removed provider's page: %d", status)
	}
	if _, doc = owner.Get("/t/acme/events"); !strings.Contains(doc.Find("main").Text(), "crm (removed)") {
		t.Fatal("the event log does not show its events as of the removed provider")
	}
	links := doc.Find(`main a[href*="removed"]`)
	if links.Length() == 0 {
		t.Error("no link to the removed provider's records")
	}
	for _, href := range links.Map(func(_ int, a *goquery.Selection) string { return a.AttrOr("href", "") }) {
		if status, _ := owner.Get(href); status != http.StatusOK {
			t.Errorf("%s of the removed provider's history: %d", href, status)
		}
	}
	if got := e.AuditLog("acme"); !strings.Contains(strings.Join(got, "\n"), `owner@example.com provider_delete crm: removed as "crm (removed)"`) {
		t.Fatalf("audit log %q", got)
	}

	// The name is free again.
	secret := e.Provider("acme", "crm")
	if status, _ := e.Deliver("acme", "crm", secret, "evt-4", body); status != http.StatusOK {
		t.Fatalf("the new provider of the name: %d", status)
	}
}
