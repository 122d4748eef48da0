package webtest

import (
	"net/http"
	"net/url"
)

// operator2 signs in an existing operator again.
func (e *Env) Operator2(email string) *Browser {
	e.T.Helper()
	b := e.Anonymous()
	status, _, loc := b.Post("/login", url.Values{"email": {email}, "password": {TestPassword}})
	if status != http.StatusSeeOther || loc == "/login" {
		e.T.Fatalf("sign in as %s: %d to %q", email, status, loc)
	}
	return b
}
