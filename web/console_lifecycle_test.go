package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// signIn posts the login form and reports whether it signed in, with the
// message shown when it did not.
func (b *browser) signIn(email, password string) (bool, string) {
	b.e.t.Helper()
	status, doc, loc := b.post("/login", url.Values{"email": {email}, "password": {password}})
	return status == http.StatusSeeOther && loc != "/login", text(doc, "[role=alert]")
}

// signedIn reports whether the browser's session still opens a page.
func (b *browser) signedIn(path string) bool {
	b.e.t.Helper()
	status, loc := b.redirectOf(path)
	if status == http.StatusOK {
		return true
	}
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, "/login") {
		b.e.t.Fatalf("%s answered %d to %q", path, status, loc)
	}
	return false
}

func TestOperatorDisableEndsSessions(t *testing.T) {
	t.Parallel()
	e := setup(t)
	admin := e.operator("root@example.com", true)
	ann := e.operator("ann@example.com", false, "acme")
	annID := e.operatorID("ann@example.com")
	if !ann.signedIn("/t/acme") {
		t.Fatal("ann is not signed in")
	}

	status, _, loc := admin.post(userPath(annID, "/disable"), nil)
	if status != http.StatusSeeOther || loc != "/admin/users" {
		t.Fatalf("disable: %d to %q", status, loc)
	}
	_, doc := admin.get("/admin/users")
	if flash := shownFlash(doc); !strings.Contains(flash, "ann@example.com is disabled") {
		t.Fatalf("flash %q", flash)
	}
	if row := operatorRow(doc, "ann@example.com"); row.Find(".badge.operator-disabled").Length() != 1 ||
		row.Find(`form[action$="/enable"]`).Length() != 1 || row.Find(`form[action$="/disable"]`).Length() != 0 {
		t.Fatalf("disabled row %q", row.Text())
	}
	// Her open session is refused on its next request, GET or POST alike.
	if ann.signedIn("/t/acme") {
		t.Fatal("a disabled operator's open session still opens pages")
	}
	if ok, msg := e.anonymous().signIn("ann@example.com", testPassword); ok || msg != "Wrong email or password." {
		t.Fatalf("a disabled operator signed in: %v %q", ok, msg)
	}

	if status, _, _ := admin.post(userPath(annID, "/enable"), nil); status != http.StatusSeeOther {
		t.Fatalf("enable: %d", status)
	}
	again := e.anonymous()
	if ok, msg := again.signIn("ann@example.com", testPassword); !ok || !again.signedIn("/t/acme") {
		t.Fatalf("re-enabled operator: %v %q", ok, msg)
	}
	if ann.signedIn("/t/acme") {
		t.Fatal("the session ended by disabling came back with the enabling")
	}

	// An admin cannot disable themselves, nor the last enabled admin be lost.
	rootID := e.operatorID("root@example.com")
	if _, _, loc := admin.post(userPath(rootID, "/disable"), nil); loc != "/admin/users" {
		t.Fatalf("self-disable went to %q", loc)
	}
	_, doc = admin.get("/admin/users")
	if flash := shownFlash(doc); !strings.Contains(flash, "You cannot disable yourself") {
		t.Fatalf("self-disable flash %q", flash)
	}
	if !admin.signedIn("/admin/users") {
		t.Fatal("the admin was signed out")
	}
}

func TestOperatorPasswordAndSignOutEverywhere(t *testing.T) {
	t.Parallel()
	e := setup(t)
	admin := e.operator("root@example.com", true)
	laptop := e.operator("ann@example.com", false, "acme")
	phone := e.operator2("ann@example.com")
	annID := e.operatorID("ann@example.com")

	if status, _, _ := admin.post(userPath(annID, "/sign-out"), nil); status != http.StatusSeeOther {
		t.Fatalf("sign out everywhere: %d", status)
	}
	if laptop.signedIn("/t/acme") || phone.signedIn("/t/acme") {
		t.Fatal("a session survived sign out everywhere")
	}
	if !admin.signedIn("/admin/users") {
		t.Fatal("the admin's own session ended")
	}

	laptop = e.operator2("ann@example.com")
	_, _, _ = admin.post(userPath(annID, "/password"), url.Values{"password": {"short"}})
	_, doc := admin.get("/admin/users")
	if flash := shownFlash(doc); !strings.Contains(flash, "was not changed: password must be at least 8 characters") {
		t.Fatalf("short password flash %q", flash)
	}
	if !laptop.signedIn("/t/acme") {
		t.Fatal("a refused reset ended the session")
	}
	if status, _, _ := admin.post(userPath(annID, "/password"), url.Values{"password": {"a brand new secret"}}); status != http.StatusSeeOther {
		t.Fatalf("reset: %d", status)
	}
	if laptop.signedIn("/t/acme") {
		t.Fatal("the session survived the password reset")
	}
	if ok, _ := e.anonymous().signIn("ann@example.com", testPassword); ok {
		t.Fatal("the old password still signs in")
	}
	if ok, msg := e.anonymous().signIn("ann@example.com", "a brand new secret"); !ok {
		t.Fatalf("the new password: %q", msg)
	}
}
