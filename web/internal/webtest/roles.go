package webtest

import (
	"github.com/tidemark/tidemark/domain"
)

// withRole creates an operator with role in acme and signs them in.
func (e *Env) WithRole(email string, role domain.Role) *Browser {
	e.T.Helper()
	e.Member(email, false, role, "acme")
	return e.SignIn(email)
}
