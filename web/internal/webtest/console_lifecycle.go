package webtest

import (
	"net/http"
	"net/url"
	"strings"
)

// signIn posts the login form and reports whether it signed in, with the
// message shown when it did not.
func (b *Browser) SignIn(email, password string) (bool, string) {
	b.E.T.Helper()
	status, doc, loc := b.Post("/login", url.Values{"email": {email}, "password": {password}})
	return status == http.StatusSeeOther && loc != "/login", Text(doc, "[role=alert]")
}

// signedIn reports whether the browser's session still opens a page.
func (b *Browser) SignedIn(path string) bool {
	b.E.T.Helper()
	status, loc := b.RedirectOf(path)
	if status == http.StatusOK {
		return true
	}
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, "/login") {
		b.E.T.Fatalf("%s answered %d to %q", path, status, loc)
	}
	return false
}
