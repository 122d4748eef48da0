package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

// An unknown console URL is a page of the console, in its frame, with a
// way back; signed out, it is the sign-in page; under /api/ it is JSON.
func TestUnknownPagesAreStyled(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	ops := e.Operator("ops@example.com", false, "acme")

	for _, tc := range []struct {
		path     string
		overview bool // a link to the workspace's overview
	}{
		{"/t/acme/nothing", true},
		{"/t/acme/overview", true},
		{"/nothing/at/all", false},
		{"/admin/nothing", false},
	} {
		status, doc := ops.Get(tc.path)
		if status != http.StatusNotFound || webtest.Text(doc, "main h1") != "Page not found" {
			t.Errorf("%s: %d %q", tc.path, status, webtest.Text(doc, "main h1"))
			continue
		}
		if doc.Find(`header.sidebar .account form[action="/logout"]`).Length() != 1 {
			t.Errorf("%s: the 404 page is not in the console's frame", tc.path)
		}
		if got := doc.Find(`main a[href="/t/acme"]`).Length() == 1; got != tc.overview {
			t.Errorf("%s: overview link shown = %v, want %v", tc.path, got, tc.overview)
		}
		if doc.Find(`main a[href="/"]`).Length() != 1 {
			t.Errorf("%s: no link to all workspaces", tc.path)
		}
	}
	// A workspace the operator is not a member of: the same page, telling
	// nothing of whether it exists.
	if status, doc := ops.Get("/t/globex/events"); status != http.StatusNotFound || doc.Find(`main a[href="/"]`).Length() != 1 {
		t.Errorf("unknown workspace: %d, %q", status, webtest.Text(doc, "main"))
	}

	// Signed out: the sign-in page, whatever the URL.
	if status, loc := e.Anonymous().RedirectOf("/t/acme/nothing"); status != http.StatusSeeOther || !strings.HasPrefix(loc, "/login") {
		t.Errorf("signed out: %d to %q", status, loc)
	}

	// The API's and the webhooks' unknown URLs answer JSON.
	for _, path := range []string{"/api/v1/nothing", "/webhooks/acme/crm/extra"} {
		status, body := e.Get(path, "")
		if status != http.StatusNotFound || body["error"] != "not found" {
			t.Errorf("%s: %d %v", path, status, body)
		}
	}
}

// The admin area has a landing page in the same frame; other operators
// are refused it.
func TestAdminLandingPage(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	admin := e.Operator("root@example.com", true)
	e.Operator("ops@example.com", false, "acme")

	status, doc := admin.Get("/admin")
	if status != http.StatusOK || webtest.Text(doc, "main h1") != "Admin" {
		t.Fatalf("admin landing: %d %q", status, webtest.Text(doc, "main h1"))
	}
	if got := webtest.Text(doc, "header a.active"); got != "Overview" {
		t.Errorf("active nav %q", got)
	}
	for _, href := range []string{"/admin/users", "/admin/reconciliation", "/admin/audit", "/t/acme"} {
		if doc.Find(`main a[href="`+href+`"]`).Length() == 0 {
			t.Errorf("the landing page does not link to %s", href)
		}
	}
	if got := webtest.Text(doc, ".admin-home .card:first-child .stat"); got != "2" {
		t.Errorf("operators counted %q, want 2", got)
	}
	if !strings.Contains(webtest.Text(doc, ".admin-home"), "Not run yet") {
		t.Errorf("reconciliation card: %q", webtest.Text(doc, ".admin-home"))
	}
	// From a workspace, an admin reaches the admin area by its link.
	if _, doc := admin.Get("/t/acme"); doc.Find(`.account a[href="/admin"]`).Length() != 1 {
		t.Error("no link to the admin area from a workspace")
	}

	ops := e.Operator("ops2@example.com", false, "acme")
	if status, _ := ops.Get("/admin"); status != http.StatusForbidden {
		t.Errorf("a non-admin got the admin landing page: %d", status)
	}
}
