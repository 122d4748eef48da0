package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
)

// auditLog lists "actor action target: summary" of a tenant's audit
// entries, oldest first.
func (e *env) auditLog(tenant string) []string {
	e.t.Helper()
	rows, err := e.store.Pool().Query(context.Background(), `
SELECT actor || ' ' || action || ' ' || target || ': ' || summary FROM audit_log
WHERE tenant_id = $1 ORDER BY id`, e.tenant(tenant).ID)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestOwnerManagesMembers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	owner := e.operator("owner@example.com", false, "acme")
	e.tenant("globex")
	e.member("ann@example.com", false, domain.RoleOwner, "globex")
	ann := e.signIn("ann@example.com")

	status, doc := owner.get("/t/acme/members")
	if status != http.StatusOK || text(doc, "main h1") != "Members" || text(doc, "header a.active") != "Members" {
		t.Fatalf("members page: %d %q", status, text(doc, "main h1"))
	}
	// Only operators who exist can be added, and only once.
	for _, tc := range []struct{ email, says string }{
		{"nobody@example.com", "There is no operator nobody@example.com"},
		{"owner@example.com", "already a member of acme"},
	} {
		status, doc, _ := owner.post("/t/acme/members", url.Values{"email": {tc.email}, "role": {"viewer"}})
		if status != http.StatusUnprocessableEntity || !strings.Contains(text(doc, "[role=alert]"), tc.says) {
			t.Errorf("add %s: %d %q, want %q", tc.email, status, text(doc, "[role=alert]"), tc.says)
		}
	}
	status, _, loc := owner.post("/t/acme/members", url.Values{"email": {"Ann@Example.com"}, "role": {"viewer"}})
	if status != http.StatusSeeOther || loc != "/t/acme/members" {
		t.Fatalf("add ann: %d to %q", status, loc)
	}
	_, doc = owner.get(loc)
	if msg := text(doc, ".flash-ok"); msg != "ann@example.com can now open acme as a viewer." {
		t.Fatalf("flash %q", msg)
	}
	annID := e.operatorID("ann@example.com")
	// As a viewer she reads, and is told why she cannot rotate.
	if status, doc := ann.get("/t/acme/providers/crm"); status != http.StatusOK || doc.Find(`form[action$="/rotate"]`).Length() != 0 {
		t.Fatalf("viewer's provider page: %d, rotate forms %d", status, doc.Find(`form[action$="/rotate"]`).Length())
	}
	status, doc, _ = ann.post("/t/acme/providers/crm/rotate", nil)
	if status != http.StatusForbidden || !strings.Contains(text(doc, "main p"), "This needs the owner role in this workspace, and you are a viewer") {
		t.Fatalf("viewer rotating: %d %q", status, text(doc, "main p"))
	}
	if doc.Find(`nav.sections a[href="/t/acme/members"]`).Length() != 0 {
		t.Error("a viewer is shown the members page")
	}

	// Made an owner, she creates a token; made an operator again, she loses it.
	if status, _, _ := owner.post(fmt.Sprintf("/t/acme/members/%d/role", annID), url.Values{"role": {"owner"}}); status != http.StatusSeeOther {
		t.Fatalf("make ann an owner: %d", status)
	}
	_, doc, _ = ann.post("/t/acme/tokens", url.Values{"name": {"ann's export"}, "access": {"write"}, "expires": {""}})
	token := text(doc, "#api-token")
	if status, _ := e.get("/api/v1/tenants/acme/stats", token); status != http.StatusOK {
		t.Fatalf("ann's token answered %d", status)
	}
	ownerToken := e.tokenWith("acme", domain.NewAPIToken{Name: "cli token", Access: domain.TokenRead})
	status, _, loc = owner.post(fmt.Sprintf("/t/acme/members/%d/role", annID), url.Values{"role": {"operator"}})
	if status != http.StatusSeeOther || loc != "/t/acme/members" {
		t.Fatalf("demote ann: %d to %q", status, loc)
	}
	_, doc = owner.get(loc)
	if msg := text(doc, ".flash-ok"); msg != "ann@example.com is now an operator of acme. The 1 API token(s) they created there were revoked." {
		t.Fatalf("flash %q", msg)
	}
	if status, _ := e.get("/api/v1/tenants/acme/stats", token); status != http.StatusUnauthorized {
		t.Fatalf("the token of a demoted owner answered %d, want 401", status)
	}
	if status, _ := e.get("/api/v1/tenants/acme/stats", ownerToken); status != http.StatusOK {
		t.Fatalf("another token answered %d", status)
	}

	// Removed, she no longer opens acme.
	if status, _, _ := owner.post(fmt.Sprintf("/t/acme/members/%d/remove", annID), nil); status != http.StatusSeeOther {
		t.Fatalf("remove ann: %d", status)
	}
	if status, _ := ann.get("/t/acme"); status != http.StatusNotFound {
		t.Fatalf("removed member opening acme: %d", status)
	}
	if status, _, _ := owner.post(fmt.Sprintf("/t/acme/members/%d/remove", annID), nil); status != http.StatusNotFound {
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
	got := e.auditLog("acme")
	if strings.Join(got[2:], "\n") != strings.Join(want, "\n") { // the first are setup's provider and the owner's own membership
		t.Errorf("audit log:\n%s\nwant after the first:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestOwnerLeavesTheirOwnRole(t *testing.T) {
	t.Parallel()
	e := setup(t)
	owner := e.operator("owner@example.com", false, "acme")
	id := e.operatorID("owner@example.com")
	status, _, loc := owner.post(fmt.Sprintf("/t/acme/members/%d/role", id), url.Values{"role": {"viewer"}})
	if status != http.StatusSeeOther || loc != "/t/acme" {
		t.Fatalf("own demotion: %d to %q, want the workspace", status, loc)
	}
	if status, _ := owner.get("/t/acme/members"); status != http.StatusForbidden {
		t.Fatalf("members page after the demotion: %d", status)
	}
}

func TestAdminSetsRolesFromTheOperatorsPage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	admin := e.operator("root@example.com", true)
	e.member("ann@example.com", false, domain.RoleOwner, "acme")
	e.provider("globex", "crm")
	id := e.operatorID("ann@example.com")

	_, doc := admin.get("/admin/users")
	row := operatorRow(doc, "ann@example.com")
	form := row.Find(`form.member-role`)
	if form.AttrOr("action", "") != fmt.Sprintf("/t/acme/members/%d/role", id) || form.Find("option[selected]").AttrOr("value", "") != "owner" {
		t.Fatalf("role form %q with %q", form.AttrOr("action", ""), form.Find("option[selected]").AttrOr("value", ""))
	}
	status, _, loc := admin.post(form.AttrOr("action", ""), url.Values{"role": {"viewer"}, "from": {"admin"}})
	if status != http.StatusSeeOther || loc != "/admin/users" {
		t.Fatalf("change role: %d to %q", status, loc)
	}
	status, _, _ = admin.post(fmt.Sprintf("/admin/users/%d/memberships", id), url.Values{"tenant": {"globex"}, "role": {"owner"}})
	if status != http.StatusSeeOther {
		t.Fatalf("add to globex: %d", status)
	}
	ops, err := e.store.Operators(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range ops {
		if o.ID == id && (o.Roles["acme"] != domain.RoleViewer || o.Roles["globex"] != domain.RoleOwner) {
			t.Fatalf("roles %v, want acme viewer and globex owner", o.Roles)
		}
	}
	// A new operator gets the role chosen for their first workspace.
	status, doc, _ = admin.post("/admin/users", url.Values{"email": {"bob@example.com"}, "password": {testPassword}, "tenant": {"acme"}, "role": {"viewer"}})
	if status != http.StatusSeeOther {
		t.Fatalf("create bob: %d %q", status, text(doc, "[role=alert]"))
	}
	bob := e.signIn("bob@example.com")
	if status, _, _ := bob.post("/t/acme/conflicts/1/resolve", url.Values{"resolution": {"keep"}}); status != http.StatusForbidden {
		t.Fatalf("new viewer resolving: %d", status)
	}
}
