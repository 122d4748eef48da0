package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

func TestOperatorDisableEndsSessions(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	admin := e.Operator("root@example.com", true)
	ann := e.Operator("ann@example.com", false, "acme")
	annID := e.OperatorID("ann@example.com")
	if !ann.SignedIn("/t/acme") {
		t.Fatal("ann is not signed in")
	}

	status, _, loc := admin.Post(webtest.UserPath(annID, "/disable"), nil)
	if status != http.StatusSeeOther || loc != "/admin/users" {
		t.Fatalf("disable: %d to %q", status, loc)
	}
	_, doc := admin.Get("/admin/users")
	if flash := webtest.ShownFlash(doc); !strings.Contains(flash, "ann@example.com is disabled") {
		t.Fatalf("flash %q", flash)
	}
	if row := webtest.OperatorRow(doc, "ann@example.com"); row.Find(".badge.operator-disabled").Length() != 1 ||
		row.Find(`form[action$="/enable"]`).Length() != 1 || row.Find(`form[action$="/disable"]`).Length() != 0 {
		t.Fatalf("disabled row %q", row.Text())
	}
	// Her open session is refused on its next request, GET or POST alike.
	if ann.SignedIn("/t/acme") {
		t.Fatal("a disabled operator's open session still opens pages")
	}
	if ok, msg := e.Anonymous().SignIn("ann@example.com", webtest.TestPassword); ok || msg != "Wrong email or password." {
		t.Fatalf("a disabled operator signed in: %v %q", ok, msg)
	}

	if status, _, _ := admin.Post(webtest.UserPath(annID, "/enable"), nil); status != http.StatusSeeOther {
		t.Fatalf("enable: %d", status)
	}
	again := e.Anonymous()
	if ok, msg := again.SignIn("ann@example.com", webtest.TestPassword); !ok || !again.SignedIn("/t/acme") {
		t.Fatalf("re-enabled operator: %v %q", ok, msg)
	}
	if ann.SignedIn("/t/acme") {
		t.Fatal("the session ended by disabling came back with the enabling")
	}

	// An admin cannot disable themselves, nor the last enabled admin be lost.
	rootID := e.OperatorID("root@example.com")
	if _, _, loc := admin.Post(webtest.UserPath(rootID, "/disable"), nil); loc != "/admin/users" {
		t.Fatalf("self-disable went to %q", loc)
	}
	_, doc = admin.Get("/admin/users")
	if flash := webtest.ShownFlash(doc); !strings.Contains(flash, "You cannot disable yourself") {
		t.Fatalf("self-disable flash %q", flash)
	}
	if !admin.SignedIn("/admin/users") {
		t.Fatal("the admin was signed out")
	}
}

func TestOperatorPasswordAndSignOutEverywhere(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	admin := e.Operator("root@example.com", true)
	laptop := e.Operator("ann@example.com", false, "acme")
	phone := e.Operator2("ann@example.com")
	annID := e.OperatorID("ann@example.com")

	if status, _, _ := admin.Post(webtest.UserPath(annID, "/sign-out"), nil); status != http.StatusSeeOther {
		t.Fatalf("sign out everywhere: %d", status)
	}
	if laptop.SignedIn("/t/acme") || phone.SignedIn("/t/acme") {
		t.Fatal("a session survived sign out everywhere")
	}
	if !admin.SignedIn("/admin/users") {
		t.Fatal("the admin's own session ended")
	}

	laptop = e.Operator2("ann@example.com")
	_, _, _ = admin.Post(webtest.UserPath(annID, "/password"), url.Values{"password": {"short"}})
	_, doc := admin.Get("/admin/users")
	if flash := webtest.ShownFlash(doc); !strings.Contains(flash, "was not changed: password must be at least 8 characters") {
		t.Fatalf("short password flash %q", flash)
	}
	if !laptop.SignedIn("/t/acme") {
		t.Fatal("a refused reset ended the session")
	}
	if status, _, _ := admin.Post(webtest.UserPath(annID, "/password"), url.Values{"password": {"a brand new secret"}}); status != http.StatusSeeOther {
		t.Fatalf("reset: %d", status)
	}
	if laptop.SignedIn("/t/acme") {
		t.Fatal("the session survived the password reset")
	}
	if ok, _ := e.Anonymous().SignIn("ann@example.com", webtest.TestPassword); ok {
		t.Fatal("the old password still signs in")
	}
	if ok, msg := e.Anonymous().SignIn("ann@example.com", "a brand new secret"); !ok {
		t.Fatalf("the new password: %q", msg)
	}
}
