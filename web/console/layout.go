package console

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/a-h/templ"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/httpx"
)

// layout builds the page frame for the current operator and tenant, and
// takes the pending flash message.
func (h *Handler) layout(r *http.Request, title, nav string) views.Layout {
	u := currentUser(r.Context())
	m := currentMembership(r.Context())
	l := views.Layout{Title: title, UserEmail: u.Email, IsAdmin: u.IsAdmin, Tenant: m.Tenant, Role: m.Role, Nav: nav}
	var err error
	if l.Tenants, err = h.store.VisibleTenants(r.Context(), u); err != nil {
		// The page is still shown, without its workspace menu.
		h.log.Error("reading the operator's workspaces", "user", u.Email, "err", err)
	}
	if m.Tenant.ID != 0 {
		// The banner of firing alerts: a page is still shown without it.
		firing, err := h.store.FiringAlerts(r.Context(), m.Tenant.ID)
		if err != nil {
			h.log.Error("reading firing alerts for the banner", "tenant", m.Tenant.Slug, "err", err)
		}
		l.Firing = firing
	}
	if msg := h.sessions.PopString(r.Context(), sessionFlash); msg != "" {
		l.Flash = views.Flash{Kind: h.sessions.PopString(r.Context(), sessionFlashK), Message: msg}
	}
	return l
}

// flash stores a message for the next page the operator sees.
func (h *Handler) flash(r *http.Request, kind, msg string) {
	h.sessions.Put(r.Context(), sessionFlash, msg)
	h.sessions.Put(r.Context(), sessionFlashK, kind)
}

// redirectWithFlash ends a successful or refused form post (post/redirect/get).
func (h *Handler) redirectWithFlash(w http.ResponseWriter, r *http.Request, to, kind, msg string) {
	h.flash(r, kind, msg)
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// render writes a component through a buffer, so a failed render is a
// clean error page rather than half a page.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	var buf bytes.Buffer
	if err := c.Render(r.Context(), &buf); err != nil {
		httpx.InternalError(h.log, w, r, fmt.Errorf("render: %w", err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	buf.WriteTo(w)
}

// consoleError shows err as a page with the status it maps to.
func (h *Handler) consoleError(w http.ResponseWriter, r *http.Request, err error) {
	status := httpx.ErrorStatus(err)
	heading, text := "Something went wrong", "The error was logged. Try again in a moment."
	switch status {
	case http.StatusNotFound:
		heading, text = "Not found", "There is nothing here, or you do not have access to it."
	case http.StatusServiceUnavailable:
		heading, text = "Database unavailable", "Tidemark cannot reach its database right now. Try again in a moment."
		if errors.Is(err, domain.ErrReadTimeout) {
			heading, text = "The page took too long", domain.ErrReadTimeout.Message
		} else if errors.Is(err, domain.ErrWriteTimeout) {
			heading, text = "The change took too long", domain.ErrWriteTimeout.Message
		}
	case http.StatusBadRequest, http.StatusConflict:
		heading, text = "That did not work", domain.ErrorMessage(err)
	case http.StatusForbidden:
		heading, text = "Not allowed", domain.ErrorMessage(err)
	case http.StatusInternalServerError:
		text = internalErrorText(httpx.LogInternal(h.log, w, r, err))
	}
	if status == http.StatusNotFound {
		h.render(w, r, status, views.NotFound(h.layout(r, heading, ""), heading, text))
		return
	}
	h.render(w, r, status, views.Message(h.layout(r, heading, ""), heading, text))
}

// internalErrorText is what a console page says about an internal error
// logged under request id.
func internalErrorText(id string) string {
	return "Something went wrong and was logged with request id " + id +
		". Try again in a moment; if it keeps happening, give the id to your administrator."
}

// NotFound is the console's page for a URL it does not serve: a styled
// page in the console's frame for a signed-in operator, the sign-in page
// for anyone else (so that it tells a stranger nothing). URLs of the API,
// the webhooks and the metrics (when served on another address) get JSON.
func (h *Handler) NotFound() http.Handler {
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		heading := "Page not found"
		text := "There is no page at " + r.URL.Path + ". It may have moved, or the link may be mistyped."
		h.render(w, r, http.StatusNotFound, views.NotFound(h.layout(r, heading, ""), heading, text))
	})
	framed := h.securityHeaders(limitConsoleBody(h.loadSession(h.requireUser(page))))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/api/"), strings.HasPrefix(r.URL.Path, "/webhooks/"), r.URL.Path == "/metrics":
			httpx.WriteError(w, http.StatusNotFound, "not found")
		case currentUser(r.Context()).ID != 0:
			// Inside the console's routes (an unknown page of a workspace):
			// the session, the operator and the tenant are already known.
			page.ServeHTTP(w, r)
		default:
			framed.ServeHTTP(w, r)
		}
	})
}
