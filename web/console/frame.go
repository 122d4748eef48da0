package console

import (
	"net/http"

	"github.com/a-h/templ"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/console/shell"
)

// frame is the console as its page families (web/console/admin, records,
// people, ...) see it: a shell.Console.
type frame struct{ *Handler }

var _ shell.Console = frame{}

// Layout is the page frame, with the pending flash message.
func (f frame) Layout(r *http.Request, title, nav string) views.Layout {
	return f.layout(r, title, nav)
}

// Render writes a page through a buffer.
func (f frame) Render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	f.render(w, r, status, c)
}

// Error shows err as a page with the status it maps to.
func (f frame) Error(w http.ResponseWriter, r *http.Request, err error) { f.consoleError(w, r, err) }

// RedirectWithFlash ends a form post with a message for the next page.
func (f frame) RedirectWithFlash(w http.ResponseWriter, r *http.Request, to, kind, msg string) {
	f.redirectWithFlash(w, r, to, kind, msg)
}

// Membership is the request's tenant and the operator's role there.
func (f frame) Membership(r *http.Request) domain.Membership { return currentMembership(r.Context()) }

// User is the signed-in operator.
func (f frame) User(r *http.Request) domain.User { return currentUser(r.Context()) }
