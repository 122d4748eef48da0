package workspace_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

func TestOwnerManagesMembers(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	owner := e.Operator("owner@example.com", false, "acme")
	e.Tenant("globex")
	e.Member("ann@example.com", false, domain.RoleOwner, "globex")
	ann := e.SignIn("ann@example.com")

	status, doc := owner.Get("/t/acme/members")
	if status != http.StatusOK || webtest.Text(doc, "main h1") != "Members" || webtest.Text(doc, "header a.active") != "Members" {
		t.Fatalf("members page: %d %q", status, webtest.Text(doc, "main h1"))
	}
	// Only operators who exist can be added, and only once.
	for _, tc := range []struct{ email, says string }{
		{"nobody@example.com", "There is no operator nobody@example.com"},
		{"owner@example.com", "already a member of acme"},
	} {
		status, doc, _ := owner.Post("/t/acme/members", url.Values{"email": {tc.email}, "role": {"viewer"}})
		if status != http.StatusUnprocessableEntity || !strings.Contains(webtest.Text(doc, "[role=alert]"), tc.says) {
			t.Errorf("add %s: %d %q, want %q", tc.email, status, webtest.Text(doc, "[role=alert]"), tc.says)
		}
	}
	status, _, loc := owner.Post("/t/acme/members", url.Values{"email": {"Ann@Example.com"}, "role": {"viewer"}})
	if status != http.StatusSeeOther || loc != "/t/acme/members" {
		t.Fatalf("add ann: %d to %q", status, loc)
	}
	_, doc = owner.Get(loc)
	if msg := webtest.Text(doc, ".flash-ok"); msg != "ann@example.com can now open acme as a viewer." {
		t.Fatalf("flash %q", msg)
	}
	annID := e.OperatorID("ann@example.com")
	// As a viewer she reads, and is told why she cannot rotate.
	if status, doc := ann.Get("/t/acme/providers/crm"); status != http.StatusOK || doc.Find(`form[action$="/rotate"]`).Length() != 0 {
		t.Fatalf("viewer's provider page: %d, rotate forms %d", status, doc.Find(`form[action$="/rotate"]`).Length())
	}
	status, doc, _ = ann.Post("/t/acme/providers/crm/rotate", nil)
	if status != http.StatusForbidden || !strings.Contains(webtest.Text(doc, "main p"), "This needs the owner role in this workspace, and you are a viewer") {
		t.Fatalf("viewer rotating: %d %q", status, webtest.Text(doc, "main p"))
	}
	if doc.Find(`nav.sections a[href="/t/acme/members"]`).Length() != 0 {
		t.Error("a viewer is shown the members page")
	}

	// Made an owner, she creates a token; made an operator again, she loses it.
	if status, _, _ := owner.Post(fmt.Sprintf("/t/acme/members/%d/role", annID), url.Values{"role": {"owner"}}); status != http.StatusSeeOther {
		t.Fatalf("make ann an owner: %d", status)
	}
	_, doc, _ = ann.Post("/t/acme/tokens", url.Values{"name": {"ann's export"}, "access": {"write"}, "expires": {""}})
	token := webtest.Text(doc, "#api-token")
	if status, _ := e.Get("/api/v1/tenants/acme/stats", token); status != http.StatusOK {
		t.Fatalf("ann's token answered %d", status)
	}
	ownerToken := e.TokenWith("acme", domain.NewAPIToken{Name: "cli token", Access: domain.TokenRead})
	status, _, loc = owner.Post(fmt.Sprintf("/t/acme/members/%d/role", annID), url.Values{"role": {"operator"}})
	if status != http.StatusSeeOther || loc != "/t/acme/members" {
		t.Fatalf("demote ann: %d to %q", status, loc)
	}
	_, doc = owner.Get(loc)
	if msg := webtest.Text(doc, ".flash-ok"); msg != "ann@example.com is now an operator of acme. The 1 API token(s) they created there were revoked." {
		t.Fatalf("flash %q", msg)
	}
	if status, _ := e.Get("/api/v1/tenants/acme/stats", token); status != http.StatusUnauthorized {
		t.Fatalf("the token of a demoted owner answered %d, want 401", status)
	}
	if status, _ := e.Get("/api/v1/tenants/acme/stats", ownerToken); status != http.StatusOK {
		t.Fatalf("another token answered %d", status)
	}

	// Removed, she no longer opens acme.
	if status, _, _ := owner.Post(fmt.Sprintf("/t/acme/members/%d/remove", annID), nil); status != http.StatusSeeOther {
		t.Fatalf("remove ann: %d", status)
	}
	if status, _ := ann.Get("/t/acme"); status != http.StatusNotFound {
		t.Fatalf("removed member opening acme: %d", status)
	}
	if status, _, _ := owner.Post(fmt.Sprintf("/t/acme/members/%d/remove", annID), nil); status != http.StatusNotFound {
		t.Fatalf("removing her again: %d", status)
	}

	want := []string{
		"owner@example.com member_add ann@example.com: role viewer",
		"owner@example.com member_role ann@example.com: role viewer → owner",
		"ann@example.com token_create ann's export: read-write",
		"test token_create cli token: read-only",
		"owner@example.com token_revoke ann's export: its creator is no longer an owner",
		"owner@example.com member_role ann@example.com: role owner → operator; revoked 1 API token(s) they created",
		"owner@example.com member_remove ann@example.com: was operator",
	}
	got := e.AuditLog("acme")
	if strings.Join(got[2:], "\n") != strings.Join(want, "\n") { // the first are setup's provider and the owner's own membership
		t.Errorf("audit log:\n%s\nwant after the first:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestOwnerLeavesTheirOwnRole(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	owner := e.Operator("owner@example.com", false, "acme")
	id := e.OperatorID("owner@example.com")
	status, _, loc := owner.Post(fmt.Sprintf("/t/acme/members/%d/role", id), url.Values{"role": {"viewer"}})
	if status != http.StatusSeeOther || loc != "/t/acme" {
		t.Fatalf("own demotion: %d to %q, want the workspace", status, loc)
	}
	if status, _ := owner.Get("/t/acme/members"); status != http.StatusForbidden {
		t.Fatalf("members page after the demotion: %d", status)
	}
}

func TestAdminSetsRolesFromTheOperatorsPage(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	admin := e.Operator("root@example.com", true)
	e.Member("ann@example.com", false, domain.RoleOwner, "acme")
	e.Provider("globex", "crm")
	id := e.OperatorID("ann@example.com")

	_, doc := admin.Get("/admin/users")
	row := webtest.OperatorRow(doc, "ann@example.com")
	form := row.Find(`form.member-role`)
	if form.AttrOr("action", "") != fmt.Sprintf("/t/acme/members/%d/role", id) || form.Find("option[selected]").AttrOr("value", "") != "owner" {
		t.Fatalf("role form %q with %q", form.AttrOr("action", ""), form.Find("option[selected]").AttrOr("value", ""))
	}
	status, _, loc := admin.Post(form.AttrOr("action", ""), url.Values{"role": {"viewer"}, "from": {"admin"}})
	if status != http.StatusSeeOther || loc != "/admin/users" {
		t.Fatalf("change role: %d to %q", status, loc)
	}
	status, _, _ = admin.Post(fmt.Sprintf("/admin/users/%d/memberships", id), url.Values{"tenant": {"globex"}, "role": {"owner"}})
	if status != http.StatusSeeOther {
		t.Fatalf("add to globex: %d", status)
	}
	ops, err := e.Store.Operators(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range ops {
		if o.ID == id && (o.Roles["acme"] != domain.RoleViewer || o.Roles["globex"] != domain.RoleOwner) {
			t.Fatalf("roles %v, want acme viewer and globex owner", o.Roles)
		}
	}
	// A new operator gets the role chosen for their first workspace.
	status, doc, _ = admin.Post("/admin/users", url.Values{"email": {"bob@example.com"}, "password": {webtest.TestPassword}, "tenant": {"acme"}, "role": {"viewer"}})
	if status != http.StatusSeeOther {
		t.Fatalf("create bob: %d %q", status, webtest.Text(doc, "[role=alert]"))
	}
	bob := e.SignIn("bob@example.com")
	if status, _, _ := bob.Post("/t/acme/conflicts/1/resolve", url.Values{"resolution": {"keep"}}); status != http.StatusForbidden {
		t.Fatalf("new viewer resolving: %d", status)
	}
}
