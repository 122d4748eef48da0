// Package shell names what a family of console pages kept in a package of
// its own (web/console/deliveries, lists, people, ...) uses of the console
// around it: those packages cannot import web/console, which registers
// their routes, so web/console hands them a Console (its frame type).
package shell

import (
	"net/http"

	"github.com/a-h/templ"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// Console is the page frame and the answers every page family shares.
type Console interface {
	// Layout is the page frame, with the pending flash message.
	Layout(r *http.Request, title, nav string) views.Layout
	// Render writes a page through a buffer.
	Render(w http.ResponseWriter, r *http.Request, status int, c templ.Component)
	// Error shows err as a page with the status it maps to.
	Error(w http.ResponseWriter, r *http.Request, err error)
	// RedirectWithFlash ends a form post with a message for the next page.
	RedirectWithFlash(w http.ResponseWriter, r *http.Request, to, kind, msg string)
	// Membership is the request's tenant and the operator's role there.
	Membership(r *http.Request) domain.Membership
}
