package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"unicode"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// Session keys.
const (
	sessionUserID = "user_id"
	sessionEpoch  = "session_epoch" // the operator's session epoch at sign-in
	sessionFlash  = "flash"
	sessionFlashK = "flash_kind"
)

// securityHeaders sets the console's response headers. The CSP allows only
// our own scripts and styles: no inline script, no CDN. Behind an https
// public URL, HSTS keeps browsers from ever trying plain HTTP.
func (s *Server) securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		if s.httpsPublic {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		next.ServeHTTP(w, r)
	})
}

type userKey struct{}
type consoleTenantKey struct{}

func currentUser(ctx context.Context) domain.User {
	u, _ := ctx.Value(userKey{}).(domain.User)
	return u
}

// currentTenant is the tenant of a /t/{tenant} page, resolved from the
// operator's verified membership.
func currentTenant(ctx context.Context) domain.Tenant {
	return currentMembership(ctx).Tenant
}

// currentMembership is the tenant of a /t/{tenant} page with the operator's
// role in it; zero outside a tenant.
func currentMembership(ctx context.Context) domain.Membership {
	m, _ := ctx.Value(consoleTenantKey{}).(domain.Membership)
	return m
}

// requireUser sends signed-out visitors to the login page. The operator is
// read again on every request, so a session ends at once when they are
// removed or disabled, or when their session epoch has moved past the one
// the session was signed in with (password reset, sign out everywhere).
func (s *Server) requireUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := s.sessions.GetInt64(r.Context(), sessionUserID)
		if id == 0 {
			s.toLogin(w, r)
			return
		}
		u, err := s.operators.User(r.Context(), id)
		if domain.ErrorCode(err) == domain.ENOTFOUND || err == nil && (u.Disabled ||
			u.SessionEpoch != s.sessions.GetInt64(r.Context(), sessionEpoch)) {
			if err := s.sessions.Destroy(r.Context()); err != nil {
				s.consoleError(w, r, err)
				return
			}
			s.toLogin(w, r)
			return
		}
		if err != nil {
			s.consoleError(w, r, err)
			return
		}
		ctx := context.WithValue(r.Context(), userKey{}, u)
		ctx = domain.WithActor(ctx, domain.Actor{Kind: domain.ActorOperator, Name: u.Email, Address: clientAddress(r)})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func (s *Server) toLogin(w http.ResponseWriter, r *http.Request) {
	target := "/login"
	if r.Method == http.MethodGet && r.URL.Path != "/" {
		target += "?next=" + url.QueryEscape(r.URL.RequestURI())
	}
	if r.Header.Get("HX-Request") == "true" {
		w.Header().Set("HX-Redirect", target)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// requireTenant resolves /t/{tenant} from the operator's membership. A
// tenant the operator may not see answers 404, exactly like one that does
// not exist.
func (s *Server) requireTenant(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m, err := s.access.TenantFor(r.Context(), currentUser(r.Context()), chi.URLParam(r, "tenant"))
		if err != nil {
			s.consoleError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), consoleTenantKey{}, m)))
	})
}

// requireRole lets through operators whose role in the tenant allows what
// need may do, and answers the others 403 with a page naming the role.
// It goes on route groups below requireTenant, so that the route table
// says who may use each route.
func (s *Server) requireRole(need domain.Role) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := domain.CheckRole(currentMembership(r.Context()).Role, need); err != nil {
				s.consoleError(w, r, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// layout builds the page frame for the current operator and tenant, and
// takes the pending flash message.
func (s *Server) layout(r *http.Request, title, nav string) views.Layout {
	u := currentUser(r.Context())
	m := currentMembership(r.Context())
	l := views.Layout{Title: title, UserEmail: u.Email, IsAdmin: u.IsAdmin, Tenant: m.Tenant, Role: m.Role, Nav: nav}
	l.Tenants, _ = s.access.VisibleTenants(r.Context(), u)
	if msg := s.sessions.PopString(r.Context(), sessionFlash); msg != "" {
		l.Flash = views.Flash{Kind: s.sessions.PopString(r.Context(), sessionFlashK), Message: msg}
	}
	return l
}

// flash stores a message for the next page the operator sees.
func (s *Server) flash(r *http.Request, kind, msg string) {
	s.sessions.Put(r.Context(), sessionFlash, msg)
	s.sessions.Put(r.Context(), sessionFlashK, kind)
}

// redirectWithFlash ends a successful or refused form post (post/redirect/get).
func (s *Server) redirectWithFlash(w http.ResponseWriter, r *http.Request, to, kind, msg string) {
	s.flash(r, kind, msg)
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// render writes a component through a buffer, so a failed render is a
// clean error page rather than half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	var buf bytes.Buffer
	if err := c.Render(r.Context(), &buf); err != nil {
		s.internalError(w, r, fmt.Errorf("render: %w", err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	buf.WriteTo(w)
}

// consoleError shows err as a page with the status it maps to.
func (s *Server) consoleError(w http.ResponseWriter, r *http.Request, err error) {
	status := errorStatus(err)
	heading, text := "Something went wrong", "The error was logged. Try again in a moment."
	switch status {
	case http.StatusNotFound:
		heading, text = "Not found", "There is nothing here, or you do not have access to it."
	case http.StatusServiceUnavailable:
		heading, text = "Database unavailable", "Tidemark cannot reach its database right now. Try again in a moment."
		if errors.Is(err, domain.ErrReadTimeout) {
			heading, text = "The page took too long", domain.ErrReadTimeout.Message
		}
	case http.StatusBadRequest, http.StatusConflict:
		heading, text = "That did not work", domain.ErrorMessage(err)
	case http.StatusForbidden:
		heading, text = "Not allowed", domain.ErrorMessage(err)
	case http.StatusInternalServerError:
		text = internalErrorText(s.logInternal(w, r, err))
	}
	s.render(w, r, status, views.Message(s.layout(r, heading, ""), heading, text))
}

// internalErrorText is what a console page says about an internal error
// logged under request id.
func internalErrorText(id string) string {
	return "Something went wrong and was logged with request id " + id +
		". Try again in a moment; if it keeps happening, give the id to your administrator."
}

func (s *Server) handleLoginPage(w http.ResponseWriter, r *http.Request) {
	if s.sessions.GetInt64(r.Context(), sessionUserID) != 0 {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, views.Login("", "", r.URL.Query().Get("next")))
}

func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	email, password, next := r.PostFormValue("email"), r.PostFormValue("password"), r.PostFormValue("next")
	if err := domain.CheckSignIn(email, password); err != nil {
		if len(email) > domain.MaxEmailLength {
			email = ""
		}
		s.render(w, r, http.StatusBadRequest, views.Login(email, domain.ErrorMessage(err), safeNext(next)))
		return
	}
	// The person signing in is the actor of the sign_in audit entry.
	ctx := domain.WithActor(r.Context(), domain.Actor{Kind: domain.ActorOperator,
		Name: strings.TrimSpace(email), Address: clientAddress(r)})
	u, err := s.access.Authenticate(ctx, email, password, clientAddress(r))
	if err != nil {
		status := errorStatus(err)
		msg := domain.ErrorMessage(err)
		if status == http.StatusUnauthorized {
			status = http.StatusOK // the form is shown again with the reason
		} else if status == http.StatusInternalServerError {
			msg = internalErrorText(s.logInternal(w, r, err))
		}
		s.render(w, r, status, views.Login(email, msg, safeNext(next)))
		return
	}
	if err := s.startSession(r, u.ID); err != nil {
		s.consoleError(w, r, err)
		return
	}
	s.sessions.Put(r.Context(), sessionEpoch, u.SessionEpoch)
	http.Redirect(w, r, safeNext(next), http.StatusSeeOther)
}

func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	if err := s.sessions.RenewToken(r.Context()); err != nil {
		s.consoleError(w, r, err)
		return
	}
	s.sessions.Destroy(r.Context())
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// handleHome opens the operator's only workspace, or lists them.
func (s *Server) handleHome(w http.ResponseWriter, r *http.Request) {
	l := s.layout(r, "Workspaces", "")
	if len(l.Tenants) == 1 {
		http.Redirect(w, r, "/t/"+l.Tenants[0].Slug, http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, views.Home(l))
}

// safeNext keeps post-login redirects on this site: next must be a path
// (no scheme, no host) starting with exactly one slash, with no control
// character or backslash in it, as sent or decoded. Browsers drop tabs and
// newlines and read a backslash as a slash, so "/%09/evil.example" or
// "/\evil.example" would leave the site. Anything else is "/".
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" ||
		!strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	decoded, err := url.PathUnescape(next)
	if err != nil || strings.ContainsFunc(next+decoded, func(r rune) bool { return r == '\\' || unicode.IsControl(r) }) {
		return "/"
	}
	return next
}

// clientAddress is the peer's IP, for login throttling.
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
