package console

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/httpx"
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
func (h *Handler) securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		hdr.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'")
		hdr.Set("X-Content-Type-Options", "nosniff")
		hdr.Set("X-Frame-Options", "DENY")
		hdr.Set("Referrer-Policy", "same-origin")
		if h.httpsPublic {
			hdr.Set("Strict-Transport-Security", "max-age=31536000")
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
func (h *Handler) requireUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := h.sessions.GetInt64(r.Context(), sessionUserID)
		if id == 0 {
			h.toLogin(w, r)
			return
		}
		u, err := h.store.User(r.Context(), id)
		if domain.ErrorCode(err) == domain.ENOTFOUND || err == nil && (u.Disabled ||
			u.SessionEpoch != h.sessions.GetInt64(r.Context(), sessionEpoch)) {
			if err := h.sessions.Destroy(r.Context()); err != nil {
				h.consoleError(w, r, err)
				return
			}
			h.toLogin(w, r)
			return
		}
		if err != nil {
			h.consoleError(w, r, err)
			return
		}
		ctx := context.WithValue(r.Context(), userKey{}, u)
		ctx = domain.WithActor(ctx, domain.Actor{Kind: domain.ActorOperator, Name: u.Email, Address: httpx.ClientAddress(r), ID: u.ID})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func (h *Handler) toLogin(w http.ResponseWriter, r *http.Request) {
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
func (h *Handler) requireTenant(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m, err := h.store.TenantFor(r.Context(), currentUser(r.Context()), chi.URLParam(r, "tenant"))
		if err != nil {
			h.consoleError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), consoleTenantKey{}, m)))
	})
}

// requireRole lets through operators whose role in the tenant allows what
// need may do, and answers the others 403 with a page naming the role.
// It goes on route groups below requireTenant, so that the route table
// says who may use each route.
func (h *Handler) requireRole(need domain.Role) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := domain.CheckRole(currentMembership(r.Context()).Role, need); err != nil {
				h.consoleError(w, r, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// readKeys are the gate's keys of a tenant page: its tenant and the
// operator.
func readKeys(r *http.Request) (tenant, caller string) {
	return strconv.FormatInt(currentMembership(r.Context()).Tenant.ID, 10),
		"operator " + strconv.FormatInt(currentUser(r.Context()).ID, 10)
}

// readsBusy answers a page the read gate refused.
func (h *Handler) readsBusy(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusServiceUnavailable, views.Message(h.layout(r, "Busy", ""), "Busy",
		"Too many pages of this workspace are loading at once. Try again in a moment."))
}
