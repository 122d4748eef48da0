// Package shell names what a family of console pages uses of the console
// around it. Every family is a package of its own (web/console/admin,
// records, people, ...) that cannot import web/console, which registers
// its routes, so web/console hands it a Console (its frame type).
package shell

import (
	"fmt"
	"net/http"
	"time"

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
	// User is the signed-in operator.
	User(r *http.Request) domain.User
}

// WaitedFor is how long something has waited, coarsely: "< 1 min",
// "5 min", "3 h", "2 d".
func WaitedFor(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "< 1 min"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d/time.Hour))
	}
	return fmt.Sprintf("%d d", int(d/(24*time.Hour)))
}
