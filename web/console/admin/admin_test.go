package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

func TestAdminManagesOperatorAccess(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Provider("globex", "crm")
	admin := e.Operator("root@example.com", true)

	status, doc := admin.Get("/admin/users")
	if status != http.StatusOK || webtest.Text(doc, "h1") != "Operators" {
		t.Fatalf("operators page: %d %q", status, webtest.Text(doc, "h1"))
	}
	if row := webtest.OperatorRow(doc, "root@example.com"); !strings.Contains(row.Text(), "(you)") {
		t.Fatalf("own row %q", row.Text())
	}
	if nav := webtest.Text(doc, "header a.active"); nav != "Operators" {
		t.Fatalf("active nav %q", nav)
	}

	// A short password is refused beside the form, keeping what was typed.
	status, doc, _ = admin.Post("/admin/users", url.Values{"email": {"ann@example.com"}, "password": {"short"}, "tenant": {"acme"}})
	if status != http.StatusBadRequest || !strings.Contains(webtest.Text(doc, "[role=alert]"), "at least 8 characters") {
		t.Fatalf("short password: %d %q", status, webtest.Text(doc, "[role=alert]"))
	}
	if v, _ := doc.Find(`.new-operator input[name=email]`).Attr("value"); v != "ann@example.com" {
		t.Fatalf("email field after refusal %q", v)
	}
	if _, ok := doc.Find(`.new-operator select[name=tenant] option[value=acme]`).Attr("selected"); !ok {
		t.Fatal("the chosen workspace is not kept after a refusal")
	}

	status, _, loc := admin.Post("/admin/users", url.Values{"email": {"Ann@Example.com "}, "password": {"long enough pw"}})
	if status != http.StatusSeeOther || loc != "/admin/users" {
		t.Fatalf("create operator: %d to %q", status, loc)
	}
	_, doc = admin.Get("/admin/users")
	if msg := webtest.Text(doc, ".flash-ok"); !strings.Contains(msg, "ann@example.com added") {
		t.Fatalf("flash %q", msg)
	}
	row := webtest.OperatorRow(doc, "ann@example.com")
	if row.Length() != 1 || strings.TrimSpace(row.Find(".badge").Text()) != "member" {
		t.Fatalf("new operator row %q", row.Text())
	}
	status, doc, _ = admin.Post("/admin/users", url.Values{"email": {"ann@example.com"}, "password": {"another password"}})
	if status != http.StatusConflict || !strings.Contains(webtest.Text(doc, "[role=alert]"), "already exists") {
		t.Fatalf("duplicate email: %d %q", status, webtest.Text(doc, "[role=alert]"))
	}

	// Without a membership she signs in to an empty home.
	ann := e.Anonymous()
	if status, _, loc := ann.Post("/login", url.Values{"email": {"ann@example.com"}, "password": {"long enough pw"}}); status != http.StatusSeeOther || loc != "/" {
		t.Fatalf("sign in: %d to %q", status, loc)
	}
	if status, doc := ann.Get("/"); status != http.StatusOK || !strings.Contains(webtest.Text(doc, ".empty"), "not a member of any workspace") {
		t.Fatalf("home without membership: %d %q", status, webtest.Text(doc, ".empty"))
	}

	id := e.OperatorID("ann@example.com")
	if status, _, loc := admin.Post(webtest.UserPath(id, "/memberships"), url.Values{"tenant": {"acme"}}); status != http.StatusSeeOther || loc != "/admin/users" {
		t.Fatalf("add membership: %d to %q", status, loc)
	}
	_, doc = admin.Get("/admin/users")
	if msg := webtest.Text(doc, ".flash-ok"); msg != "ann@example.com can now open acme as an operator." {
		t.Fatalf("flash %q", msg)
	}
	if got := webtest.Memberships(webtest.OperatorRow(doc, "ann@example.com")); len(got) != 1 || got[0] != "acme" {
		t.Fatalf("memberships shown %v, want [acme]", got)
	}
	// The add select offers only the workspaces she is not in yet.
	if opts := webtest.OperatorRow(doc, "ann@example.com").Find(`.membership-add select[name=tenant] option`); opts.Length() != 1 || opts.Text() != "globex" {
		t.Fatalf("addable workspaces %q", opts.Text())
	}

	// She now sees acme, and only acme.
	if status, loc := ann.RedirectOf("/"); status != http.StatusSeeOther || loc != "/t/acme" {
		t.Fatalf("home: %d to %q, want /t/acme", status, loc)
	}
	if status, _ := ann.Get("/t/acme"); status != http.StatusOK {
		t.Fatalf("member's tenant answered %d", status)
	}
	if status, _ := ann.Get("/t/globex"); status != http.StatusNotFound {
		t.Fatalf("other tenant answered %d, want 404", status)
	}

	if status, _, _ := admin.Post(webtest.UserPath(id, "/memberships/acme/remove"), nil); status != http.StatusSeeOther {
		t.Fatalf("remove membership: %d", status)
	}
	_, doc = admin.Get("/admin/users")
	if msg := webtest.Text(doc, ".flash-ok"); msg != "ann@example.com can no longer open acme." {
		t.Fatalf("flash %q", msg)
	}
	if got := webtest.Memberships(webtest.OperatorRow(doc, "ann@example.com")); len(got) != 0 {
		t.Fatalf("memberships after removal %v", got)
	}
	if status, _ := ann.Get("/t/acme"); status != http.StatusNotFound {
		t.Fatalf("removed member's tenant answered %d, want 404", status)
	}

	// Removing it again says so instead of failing.
	admin.Post(webtest.UserPath(id, "/memberships/acme/remove"), nil)
	if _, doc = admin.Get("/admin/users"); webtest.Text(doc, ".flash-error") != "ann@example.com is not a member of acme." {
		t.Fatalf("second removal flash %q", webtest.Text(doc, ".flash-error"))
	}
}

func TestAdminCreatesOperatorWithFirstWorkspace(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Provider("globex", "crm")
	admin := e.Operator("root@example.com", true)

	status, _, _ := admin.Post("/admin/users", url.Values{"email": {"bob@example.com"}, "password": {"bob's password"}, "tenant": {"globex"}})
	if status != http.StatusSeeOther {
		t.Fatalf("create: %d", status)
	}
	_, doc := admin.Get("/admin/users")
	if got := webtest.Memberships(webtest.OperatorRow(doc, "bob@example.com")); len(got) != 1 || got[0] != "globex" {
		t.Fatalf("memberships %v, want [globex]", got)
	}
	bob := e.Anonymous()
	bob.Post("/login", url.Values{"email": {"bob@example.com"}, "password": {"bob's password"}})
	if status, loc := bob.RedirectOf("/"); status != http.StatusSeeOther || loc != "/t/globex" {
		t.Fatalf("home: %d to %q", status, loc)
	}
	if status, _ := bob.Get("/t/acme"); status != http.StatusNotFound {
		t.Fatalf("acme answered %d", status)
	}

	status, doc, _ = admin.Post("/admin/users", url.Values{"email": {"cy@example.com"}, "password": {"long enough"}, "tenant": {"nope"}})
	if status != http.StatusBadRequest || !strings.Contains(webtest.Text(doc, "[role=alert]"), `"nope" not found`) {
		t.Fatalf("unknown workspace: %d %q", status, webtest.Text(doc, "[role=alert]"))
	}
}

func TestAdminRoleToggle(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Provider("globex", "crm")
	admin := e.Operator("root@example.com", true)
	member := e.Operator("m@example.com", false, "acme")
	id := e.OperatorID("m@example.com")

	if status, _, _ := admin.Post(webtest.UserPath(id, "/admin"), url.Values{"admin": {"true"}}); status != http.StatusSeeOther {
		t.Fatalf("make admin: %d", status)
	}
	if status, _ := member.Get("/t/globex"); status != http.StatusOK {
		t.Fatalf("new admin opening globex: %d", status)
	}
	if status, _ := member.Get("/admin/users"); status != http.StatusOK {
		t.Fatalf("new admin opening operators: %d", status)
	}
	// Without a value the role flips back.
	admin.Post(webtest.UserPath(id, "/admin"), nil)
	if _, doc := admin.Get("/admin/users"); !strings.Contains(webtest.Text(doc, ".flash-ok"), "no longer an admin") {
		t.Fatalf("flash %q", webtest.Text(doc, ".flash-ok"))
	}
	if status, _ := member.Get("/t/globex"); status != http.StatusNotFound {
		t.Fatalf("former admin opening globex: %d", status)
	}

	// An admin cannot drop their own role.
	self := e.OperatorID("root@example.com")
	if status, _, _ := admin.Post(webtest.UserPath(self, "/admin"), url.Values{"admin": {"false"}}); status != http.StatusSeeOther {
		t.Fatalf("own role: %d", status)
	}
	_, doc := admin.Get("/admin/users")
	if msg := webtest.Text(doc, ".flash-error"); !strings.Contains(msg, "cannot remove your own admin role") {
		t.Fatalf("flash %q", msg)
	}
	if status, _ := admin.Get("/admin/users"); status != http.StatusOK {
		t.Fatalf("admin lost access: %d", status)
	}
	if row := webtest.OperatorRow(doc, "root@example.com"); row.Find(`form[action$="/admin"]`).Length() != 0 {
		t.Fatal("own row offers to remove the admin role")
	}

	if status, _ := admin.Get(webtest.UserPath(999999, "/admin")); status == http.StatusOK {
		t.Fatal("GET on a form route answered 200")
	}
	if status, _, _ := admin.Post(webtest.UserPath(999999, "/admin"), nil); status != http.StatusNotFound {
		t.Fatalf("unknown operator: %d", status)
	}
	if status, _, _ := admin.Post("/admin/users/abc/memberships", url.Values{"tenant": {"acme"}}); status != http.StatusNotFound {
		t.Fatalf("malformed id: %d", status)
	}
}

func TestAdminRoutesRefuseMembers(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Provider("globex", "crm")
	e.Operator("root@example.com", true)
	member := e.Operator("m@example.com", false, "acme", "globex")
	rootID, selfID := e.OperatorID("root@example.com"), e.OperatorID("m@example.com")

	status, doc := member.Get("/admin/users")
	if status != http.StatusForbidden || webtest.Text(doc, "h1") != "Not allowed" || !strings.Contains(webtest.Text(doc, "main p"), "Only admins") {
		t.Fatalf("member GET /admin/users: %d %q %q", status, webtest.Text(doc, "h1"), webtest.Text(doc, "main p"))
	}
	if doc.Find(`a[href="/admin/users"]`).Length() != 0 {
		t.Fatal("a member is shown the operators link")
	}
	posts := []struct {
		path string
		form url.Values
	}{
		{"/admin/users", url.Values{"email": {"evil@example.com"}, "password": {"long enough pw"}, "admin": {"true"}}},
		{webtest.UserPath(selfID, "/admin"), url.Values{"admin": {"true"}}},
		{webtest.UserPath(rootID, "/admin"), url.Values{"admin": {"false"}}},
		{webtest.UserPath(rootID, "/memberships"), url.Values{"tenant": {"acme"}}},
		{webtest.UserPath(selfID, "/memberships/globex/remove"), nil},
	}
	for _, p := range posts {
		if status, _, _ := member.Post(p.path, p.form); status != http.StatusForbidden {
			t.Errorf("member POST %s: %d, want 403", p.path, status)
		}
	}
	ops, err := e.Store.Operators(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range ops {
		switch o.Email {
		case "root@example.com":
			if !o.IsAdmin || len(o.Tenants) != 0 {
				t.Errorf("root changed: %+v", o)
			}
		case "m@example.com":
			if o.IsAdmin || len(o.Tenants) != 2 {
				t.Errorf("member changed: %+v", o)
			}
		default:
			t.Errorf("operator %s was created by a member", o.Email)
		}
	}
}

func TestAdminCrossOriginPostRefused(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	admin := e.Operator("root@example.com", true)
	form := url.Values{"email": {"evil@example.com"}, "password": {"long enough pw"}, "admin": {"true"}}
	req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+"/admin/users", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := admin.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin POST answered %d, want 403", resp.StatusCode)
	}
	if _, doc := admin.Get("/admin/users"); webtest.OperatorRow(doc, "evil@example.com").Length() != 0 {
		t.Fatal("the cross-origin POST created an operator")
	}
}
