package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestAdminRunsAWorkspaceLifecycle creates a workspace on /admin, renames,
// archives, unarchives and deletes one, as an admin; a member can do none
// of it.
func TestAdminRunsAWorkspaceLifecycle(t *testing.T) {
	t.Parallel()
	e, logs := webtest.SetupLogged(t, postgres.DefaultReadTimeout)
	defer func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	}()
	e.Provider("globex", "crm")
	admin := e.Operator("root@example.com", true)
	owner := e.Operator("ann@example.com", false, "acme", "globex")
	token := e.Token("acme")

	// Not an admin: refused, nothing changed.
	for _, path := range []string{"/admin/tenants", "/admin/tenants/acme/rename", "/admin/tenants/acme/archive",
		"/admin/tenants/acme/unarchive", "/admin/tenants/acme/delete"} {
		form := url.Values{"slug": {"initech"}, "name": {"Initech"}, "confirm": {"acme"}}
		if status, _, _ := owner.Post(path, form); status != http.StatusForbidden {
			t.Errorf("owner POST %s: %d, want 403", path, status)
		}
	}
	if _, err := e.Store.Tenant(context.Background(), "initech"); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("a member created a workspace: %v", err)
	}

	// Create: a bad or taken slug comes back beside the form.
	for _, c := range []struct {
		slug   string
		status int
		says   string
	}{
		{"Not A Slug", http.StatusBadRequest, "must be 1-63 characters"},
		{"apps", http.StatusBadRequest, "reserved name"},
		{"acme", http.StatusConflict, "already exists"},
	} {
		status, doc, _ := admin.Post("/admin/tenants", url.Values{"slug": {c.slug}, "name": {"X"}})
		if status != c.status || !strings.Contains(webtest.Text(doc, "[role=alert]"), c.says) {
			t.Fatalf("create %q: %d %q", c.slug, status, webtest.Text(doc, "[role=alert]"))
		}
		if v, _ := doc.Find(`input[name=slug]`).Attr("value"); v != c.slug {
			t.Fatalf("slug field after refusal %q", v)
		}
	}
	status, _, loc := admin.Post("/admin/tenants", url.Values{"slug": {"initech"}, "name": {"Initech Corp"}})
	if status != http.StatusSeeOther || loc != "/t/initech" {
		t.Fatalf("create: %d to %q", status, loc)
	}
	if status, doc := admin.Get("/t/initech"); status != http.StatusOK || !strings.Contains(doc.Text(), "Initech Corp") {
		t.Fatalf("new workspace: %d", status)
	}

	// Rename: the name changes, the slug stays.
	if status, _, loc := admin.Post("/admin/tenants/initech/rename", url.Values{"name": {"Initech Inc"}}); status != http.StatusSeeOther || loc != "/admin" {
		t.Fatalf("rename: %d to %q", status, loc)
	}
	if tn, err := e.Store.Tenant(context.Background(), "initech"); err != nil || tn.Name != "Initech Inc" {
		t.Fatalf("renamed: %+v %v", tn, err)
	}

	// Archive acme: deliveries 404 and are not stored, the API 404s, the
	// workspace is hidden; its data stays.
	if got := e.Outcome("acme", "crm", e.Secret, "a1", webtest.SnapshotBody("c-1", 1, `{}`)); got != "applied" {
		t.Fatalf("before archive: %s", got)
	}
	if status, _, _ := admin.Post("/admin/tenants/acme/archive", nil); status != http.StatusSeeOther {
		t.Fatalf("archive: %d", status)
	}
	stored := e.Count(`SELECT count(*) FROM deliveries`)
	if status, body := e.Deliver1("a2", webtest.SnapshotBody("c-1", 2, `{}`)); status != http.StatusNotFound {
		t.Fatalf("delivery to an archived workspace: %d %v", status, body)
	}
	e.FlushRefusals()
	if n := e.Count(`SELECT count(*) FROM deliveries`); n != stored {
		t.Fatalf("deliveries stored %d, want %d", n, stored)
	}
	if status, _ := e.Get("/api/v1/tenants/acme/records/crm/contact/c-1", token); status != http.StatusNotFound {
		t.Fatalf("API of an archived workspace: %d", status)
	}
	if status, _ := owner.Get("/t/acme"); status != http.StatusNotFound {
		t.Fatalf("console of an archived workspace: %d", status)
	}
	_, doc := admin.Get("/t/globex")
	if menu := webtest.Text(doc, ".switcher ul"); strings.Contains(menu, "acme") || !strings.Contains(menu, "initech") {
		t.Fatalf("workspace switcher %q", menu)
	}
	_, doc = admin.Get("/admin")
	if tiles := webtest.Text(doc, ".tiles"); strings.Contains(tiles, "acme") || !strings.Contains(tiles, "globex") {
		t.Fatalf("active workspaces shown %q", tiles)
	}
	if doc.Find(`.admin-tenant[data-tenant=acme] form[action="/admin/tenants/acme/unarchive"]`).Length() != 1 {
		t.Fatal("the admin home does not offer to unarchive acme")
	}
	if n := e.Count(`SELECT count(*) FROM records WHERE tenant_id = (SELECT id FROM tenants WHERE slug = 'acme')`); n != 1 {
		t.Fatalf("archived workspace's records %d, want 1 (kept)", n)
	}

	// Unarchive: deliveries apply again, the API answers.
	if status, _, _ := admin.Post("/admin/tenants/acme/unarchive", nil); status != http.StatusSeeOther {
		t.Fatalf("unarchive: %d", status)
	}
	if got := e.Outcome("acme", "crm", e.Secret, "a3", webtest.SnapshotBody("c-1", 3, `{}`)); got != "applied" {
		t.Fatalf("after unarchive: %s", got)
	}
	if status, _ := e.Get("/api/v1/tenants/acme/records/crm/contact/c-1", token); status != http.StatusOK {
		t.Fatalf("API after unarchive: %d", status)
	}

	// Delete: refused without the slug typed; then every tenant table is
	// emptied of acme's rows, and the deletion is audited outside it.
	acme := e.Tenant("acme")
	if status, _, _ := admin.Post("/admin/tenants/acme/delete", url.Values{"confirm": {"acm"}}); status != http.StatusSeeOther {
		t.Fatalf("delete unconfirmed: %d", status)
	}
	if _, err := e.Store.Tenant(context.Background(), "acme"); err != nil {
		t.Fatalf("deleted without confirmation: %v", err)
	}
	if status, _, loc := admin.Post("/admin/tenants/acme/delete", url.Values{"confirm": {"acme"}}); status != http.StatusSeeOther || loc != "/admin" {
		t.Fatalf("delete: %d to %q", status, loc)
	}
	if _, err := e.Store.Tenant(context.Background(), "acme"); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("deleted workspace still found: %v", err)
	}
	webtest.AssertNoTenantRows(t, e.Store.Pool(), acme.ID)
	if n := e.Count(`SELECT count(*) FROM records WHERE tenant_id = (SELECT id FROM tenants WHERE slug = 'globex')`) +
		e.Count(`SELECT count(*) FROM providers WHERE tenant_id = (SELECT id FROM tenants WHERE slug = 'globex')`); n != 1 {
		t.Fatalf("globex's rows %d, want its provider alone", n)
	}
	audit := e.Strings(`SELECT actor || ' ' || action || ' ' || target FROM audit_log WHERE tenant_id = 0 AND action LIKE 'tenant\_%' ORDER BY id`)
	want := []string{
		"root@example.com tenant_create tenant initech", "root@example.com tenant_rename tenant initech",
		"root@example.com tenant_archive tenant acme", "root@example.com tenant_unarchive tenant acme",
		"root@example.com tenant_delete tenant acme",
	}
	if strings.Join(audit, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit:\n%s\nwant:\n%s", strings.Join(audit, "\n"), strings.Join(want, "\n"))
	}
	if status, _ := e.Deliver1("a4", webtest.SnapshotBody("c-1", 4, `{}`)); status != http.StatusNotFound {
		t.Fatalf("delivery to a deleted workspace: %d", status)
	}
}
