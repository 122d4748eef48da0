package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/identity"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/httpx"
)

func (h *Handler) handleLoginPage(w http.ResponseWriter, r *http.Request) {
	if h.sessions.GetInt64(r.Context(), sessionUserID) != 0 {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	next := r.URL.Query().Get("next")
	if h.ssoReauth(w, r, safeNext(next)) {
		return
	}
	h.render(w, r, http.StatusOK, views.Login(h.loginForm(r, "", "", next)))
}

// signInBusyWait is the Retry-After of a sign-in refused because every
// place to check a password was taken (domain.ErrSignInBusy).
const signInBusyWait = 2 * time.Second

func (h *Handler) handleLogin(w http.ResponseWriter, r *http.Request) {
	email, password, next := r.PostFormValue("email"), r.PostFormValue("password"), r.PostFormValue("next")
	// Until the password is checked, the form is drawn as the page was
	// last drawn (knownLoginForm): a refusal here costs no query. Whether
	// password sign-in is on is decided with the password's check.
	if err := domain.CheckSignIn(email, password); err != nil {
		if len(email) > domain.MaxEmailLength {
			email = ""
		}
		h.render(w, r, http.StatusBadRequest, views.Login(h.knownLoginForm(email, domain.ErrorMessage(err), safeNext(next))))
		return
	}
	// Past its account's or its address's budget (signin_budget.go) a
	// sign-in costs no query, row or hash.
	ticket, refusal, wait := h.signIns.take(email, httpx.ClientPrefix(r), time.Now())
	if refusal != "" {
		w.Header().Set("Retry-After", httpx.RetryAfter(wait))
		h.render(w, r, http.StatusTooManyRequests, views.Login(h.knownLoginForm(email, fmt.Sprintf(
			"%s Wait %s seconds and try again.", refusal, httpx.RetryAfter(wait)), safeNext(next))))
		return
	}
	// The person signing in is the actor of the sign_in audit entry.
	ctx := domain.WithActor(r.Context(), domain.Actor{Kind: domain.ActorOperator,
		Name: strings.TrimSpace(email), Address: httpx.ClientAddress(r)})
	u, err := h.store.Authenticate(ctx, email, password, httpx.ClientAddress(r))
	ticket.settle(err, time.Now()) // only failures spend the budgets
	if err != nil {
		status := httpx.ErrorStatus(err)
		msg := domain.ErrorMessage(err)
		switch {
		case status == http.StatusUnauthorized:
			status = http.StatusOK // the form is shown again with the reason
		case errors.Is(err, domain.ErrSignInBusy):
			w.Header().Set("Retry-After", httpx.RetryAfter(signInBusyWait))
		case status == http.StatusInternalServerError:
			msg = internalErrorText(httpx.LogInternal(h.log, w, r, err))
		}
		f := h.loginForm(r, email, msg, safeNext(next))
		if status == http.StatusOK && f.Password == identity.PasswordSignInOff {
			status, f.Message = http.StatusForbidden, "Password sign-in is turned off. Sign in with "+f.SSOName+"."
		}
		h.render(w, r, status, views.Login(f))
		return
	}
	if err := h.startSession(r, u.ID); err != nil {
		h.consoleError(w, r, err)
		return
	}
	h.sessions.Put(r.Context(), sessionEpoch, u.SessionEpoch)
	http.Redirect(w, r, safeNext(next), http.StatusSeeOther)
}

func (h *Handler) handleLogout(w http.ResponseWriter, r *http.Request) {
	if err := h.sessions.RenewToken(r.Context()); err != nil {
		h.consoleError(w, r, err)
		return
	}
	h.sessions.Destroy(r.Context())
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// handleHome opens the operator's only workspace, or lists them.
func (h *Handler) handleHome(w http.ResponseWriter, r *http.Request) {
	l := h.layout(r, "Workspaces", "")
	if len(l.Tenants) == 1 {
		http.Redirect(w, r, "/t/"+l.Tenants[0].Slug, http.StatusSeeOther)
		return
	}
	h.render(w, r, http.StatusOK, views.Home(l))
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
