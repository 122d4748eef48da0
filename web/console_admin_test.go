package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// operatorID finds an operator's id from the store.
func (e *env) operatorID(email string) int64 {
	e.t.Helper()
	ops, err := e.store.Operators(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, o := range ops {
		if o.Email == email {
			return o.ID
		}
	}
	e.t.Fatalf("no operator %s", email)
	return 0
}

// redirectOf fetches path and returns the status and the redirect target.
func (b *browser) redirectOf(path string) (int, string) {
	b.e.t.Helper()
	resp, err := b.client.Get(b.e.srv.URL + path)
	if err != nil {
		b.e.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// operatorRow is the row of the operators page showing email.
func operatorRow(doc *goquery.Document, email string) *goquery.Selection {
	return doc.Find("table.operators tbody tr").FilterFunction(func(_ int, s *goquery.Selection) bool {
		f := strings.Fields(s.Find(".operator-email").Text())
		return len(f) > 0 && f[0] == email
	})
}

// memberships lists the workspace links of an operator's row.
func memberships(row *goquery.Selection) []string {
	var slugs []string
	row.Find("ul.memberships li a").Each(func(_ int, a *goquery.Selection) { slugs = append(slugs, a.Text()) })
	return slugs
}

func userPath(id int64, path string) string {
	return "/admin/users/" + strconv.FormatInt(id, 10) + path
}

func TestAdminManagesOperatorAccess(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.provider("globex", "crm")
	admin := e.operator("root@example.com", true)

	status, doc := admin.get("/admin/users")
	if status != http.StatusOK || text(doc, "h1") != "Operators" {
		t.Fatalf("operators page: %d %q", status, text(doc, "h1"))
	}
	if row := operatorRow(doc, "root@example.com"); !strings.Contains(row.Text(), "(you)") {
		t.Fatalf("own row %q", row.Text())
	}
	if nav := text(doc, "header a.active"); nav != "Operators" {
		t.Fatalf("active nav %q", nav)
	}

	// A short password is refused beside the form, keeping what was typed.
	status, doc, _ = admin.post("/admin/users", url.Values{"email": {"ann@example.com"}, "password": {"short"}, "tenant": {"acme"}})
	if status != http.StatusBadRequest || !strings.Contains(text(doc, "[role=alert]"), "at least 8 characters") {
		t.Fatalf("short password: %d %q", status, text(doc, "[role=alert]"))
	}
	if v, _ := doc.Find(`.new-operator input[name=email]`).Attr("value"); v != "ann@example.com" {
		t.Fatalf("email field after refusal %q", v)
	}
	if _, ok := doc.Find(`.new-operator select[name=tenant] option[value=acme]`).Attr("selected"); !ok {
		t.Fatal("the chosen workspace is not kept after a refusal")
	}

	status, _, loc := admin.post("/admin/users", url.Values{"email": {"Ann@Example.com "}, "password": {"long enough pw"}})
	if status != http.StatusSeeOther || loc != "/admin/users" {
		t.Fatalf("create operator: %d to %q", status, loc)
	}
	_, doc = admin.get("/admin/users")
	if msg := text(doc, ".flash-ok"); !strings.Contains(msg, "ann@example.com added") {
		t.Fatalf("flash %q", msg)
	}
	row := operatorRow(doc, "ann@example.com")
	if row.Length() != 1 || strings.TrimSpace(row.Find(".badge").Text()) != "member" {
		t.Fatalf("new operator row %q", row.Text())
	}
	status, doc, _ = admin.post("/admin/users", url.Values{"email": {"ann@example.com"}, "password": {"another password"}})
	if status != http.StatusConflict || !strings.Contains(text(doc, "[role=alert]"), "already exists") {
		t.Fatalf("duplicate email: %d %q", status, text(doc, "[role=alert]"))
	}

	// Without a membership she signs in to an empty home.
	ann := e.anonymous()
	if status, _, loc := ann.post("/login", url.Values{"email": {"ann@example.com"}, "password": {"long enough pw"}}); status != http.StatusSeeOther || loc != "/" {
		t.Fatalf("sign in: %d to %q", status, loc)
	}
	if status, doc := ann.get("/"); status != http.StatusOK || !strings.Contains(text(doc, ".empty"), "not a member of any workspace") {
		t.Fatalf("home without membership: %d %q", status, text(doc, ".empty"))
	}

	id := e.operatorID("ann@example.com")
	if status, _, loc := admin.post(userPath(id, "/memberships"), url.Values{"tenant": {"acme"}}); status != http.StatusSeeOther || loc != "/admin/users" {
		t.Fatalf("add membership: %d to %q", status, loc)
	}
	_, doc = admin.get("/admin/users")
	if msg := text(doc, ".flash-ok"); msg != "ann@example.com can now open acme as an operator." {
		t.Fatalf("flash %q", msg)
	}
	if got := memberships(operatorRow(doc, "ann@example.com")); len(got) != 1 || got[0] != "acme" {
		t.Fatalf("memberships shown %v, want [acme]", got)
	}
	// The add select offers only the workspaces she is not in yet.
	if opts := operatorRow(doc, "ann@example.com").Find(`.membership-add select[name=tenant] option`); opts.Length() != 1 || opts.Text() != "globex" {
		t.Fatalf("addable workspaces %q", opts.Text())
	}

	// She now sees acme, and only acme.
	if status, loc := ann.redirectOf("/"); status != http.StatusSeeOther || loc != "/t/acme" {
		t.Fatalf("home: %d to %q, want /t/acme", status, loc)
	}
	if status, _ := ann.get("/t/acme"); status != http.StatusOK {
		t.Fatalf("member's tenant answered %d", status)
	}
	if status, _ := ann.get("/t/globex"); status != http.StatusNotFound {
		t.Fatalf("other tenant answered %d, want 404", status)
	}

	if status, _, _ := admin.post(userPath(id, "/memberships/acme/remove"), nil); status != http.StatusSeeOther {
		t.Fatalf("remove membership: %d", status)
	}
	_, doc = admin.get("/admin/users")
	if msg := text(doc, ".flash-ok"); msg != "ann@example.com can no longer open acme." {
		t.Fatalf("flash %q", msg)
	}
	if got := memberships(operatorRow(doc, "ann@example.com")); len(got) != 0 {
		t.Fatalf("memberships after removal %v", got)
	}
	if status, _ := ann.get("/t/acme"); status != http.StatusNotFound {
		t.Fatalf("removed member's tenant answered %d, want 404", status)
	}

	// Removing it again says so instead of failing.
	admin.post(userPath(id, "/memberships/acme/remove"), nil)
	if _, doc = admin.get("/admin/users"); text(doc, ".flash-error") != "ann@example.com is not a member of acme." {
		t.Fatalf("second removal flash %q", text(doc, ".flash-error"))
	}
}

func TestAdminCreatesOperatorWithFirstWorkspace(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.provider("globex", "crm")
	admin := e.operator("root@example.com", true)

	status, _, _ := admin.post("/admin/users", url.Values{"email": {"bob@example.com"}, "password": {"bob's password"}, "tenant": {"globex"}})
	if status != http.StatusSeeOther {
		t.Fatalf("create: %d", status)
	}
	_, doc := admin.get("/admin/users")
	if got := memberships(operatorRow(doc, "bob@example.com")); len(got) != 1 || got[0] != "globex" {
		t.Fatalf("memberships %v, want [globex]", got)
	}
	bob := e.anonymous()
	bob.post("/login", url.Values{"email": {"bob@example.com"}, "password": {"bob's password"}})
	if status, loc := bob.redirectOf("/"); status != http.StatusSeeOther || loc != "/t/globex" {
		t.Fatalf("home: %d to %q", status, loc)
	}
	if status, _ := bob.get("/t/acme"); status != http.StatusNotFound {
		t.Fatalf("acme answered %d", status)
	}

	status, doc, _ = admin.post("/admin/users", url.Values{"email": {"cy@example.com"}, "password": {"long enough"}, "tenant": {"nope"}})
	if status != http.StatusBadRequest || !strings.Contains(text(doc, "[role=alert]"), `"nope" not found`) {
		t.Fatalf("unknown workspace: %d %q", status, text(doc, "[role=alert]"))
	}
}

func TestAdminRoleToggle(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.provider("globex", "crm")
	admin := e.operator("root@example.com", true)
	member := e.operator("m@example.com", false, "acme")
	id := e.operatorID("m@example.com")

	if status, _, _ := admin.post(userPath(id, "/admin"), url.Values{"admin": {"true"}}); status != http.StatusSeeOther {
		t.Fatalf("make admin: %d", status)
	}
	if status, _ := member.get("/t/globex"); status != http.StatusOK {
		t.Fatalf("new admin opening globex: %d", status)
	}
	if status, _ := member.get("/admin/users"); status != http.StatusOK {
		t.Fatalf("new admin opening operators: %d", status)
	}
	// Without a value the role flips back.
	admin.post(userPath(id, "/admin"), nil)
	if _, doc := admin.get("/admin/users"); !strings.Contains(text(doc, ".flash-ok"), "no longer an admin") {
		t.Fatalf("flash %q", text(doc, ".flash-ok"))
	}
	if status, _ := member.get("/t/globex"); status != http.StatusNotFound {
		t.Fatalf("former admin opening globex: %d", status)
	}

	// An admin cannot drop their own role.
	self := e.operatorID("root@example.com")
	if status, _, _ := admin.post(userPath(self, "/admin"), url.Values{"admin": {"false"}}); status != http.StatusSeeOther {
		t.Fatalf("own role: %d", status)
	}
	_, doc := admin.get("/admin/users")
	if msg := text(doc, ".flash-error"); !strings.Contains(msg, "cannot remove your own admin role") {
		t.Fatalf("flash %q", msg)
	}
	if status, _ := admin.get("/admin/users"); status != http.StatusOK {
		t.Fatalf("admin lost access: %d", status)
	}
	if row := operatorRow(doc, "root@example.com"); row.Find(`form[action$="/admin"]`).Length() != 0 {
		t.Fatal("own row offers to remove the admin role")
	}

	if status, _ := admin.get(userPath(999999, "/admin")); status == http.StatusOK {
		t.Fatal("GET on a form route answered 200")
	}
	if status, _, _ := admin.post(userPath(999999, "/admin"), nil); status != http.StatusNotFound {
		t.Fatalf("unknown operator: %d", status)
	}
	if status, _, _ := admin.post("/admin/users/abc/memberships", url.Values{"tenant": {"acme"}}); status != http.StatusNotFound {
		t.Fatalf("malformed id: %d", status)
	}
}

func TestAdminRoutesRefuseMembers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.provider("globex", "crm")
	e.operator("root@example.com", true)
	member := e.operator("m@example.com", false, "acme", "globex")
	rootID, selfID := e.operatorID("root@example.com"), e.operatorID("m@example.com")

	status, doc := member.get("/admin/users")
	if status != http.StatusForbidden || text(doc, "h1") != "Not allowed" || !strings.Contains(text(doc, "main p"), "Only admins") {
		t.Fatalf("member GET /admin/users: %d %q %q", status, text(doc, "h1"), text(doc, "main p"))
	}
	if doc.Find(`a[href="/admin/users"]`).Length() != 0 {
		t.Fatal("a member is shown the operators link")
	}
	posts := []struct {
		path string
		form url.Values
	}{
		{"/admin/users", url.Values{"email": {"evil@example.com"}, "password": {"long enough pw"}, "admin": {"true"}}},
		{userPath(selfID, "/admin"), url.Values{"admin": {"true"}}},
		{userPath(rootID, "/admin"), url.Values{"admin": {"false"}}},
		{userPath(rootID, "/memberships"), url.Values{"tenant": {"acme"}}},
		{userPath(selfID, "/memberships/globex/remove"), nil},
	}
	for _, p := range posts {
		if status, _, _ := member.post(p.path, p.form); status != http.StatusForbidden {
			t.Errorf("member POST %s: %d, want 403", p.path, status)
		}
	}
	ops, err := e.store.Operators(context.Background())
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
	e := setup(t)
	admin := e.operator("root@example.com", true)
	form := url.Values{"email": {"evil@example.com"}, "password": {"long enough pw"}, "admin": {"true"}}
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/admin/users", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := admin.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin POST answered %d, want 403", resp.StatusCode)
	}
	if _, doc := admin.get("/admin/users"); operatorRow(doc, "evil@example.com").Length() != 0 {
		t.Fatal("the cross-origin POST created an operator")
	}
}
