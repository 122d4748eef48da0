package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/identity"
	"github.com/tidemark/tidemark/internal/sso"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/httpx"
)

// Single sign-on (docs/contract/console.md#single-sign-on). The sign-in
// page links to /login/sso, which keeps a flow (state, nonce, PKCE
// verifier) in the browser's session and sends the browser to the
// identity provider; the provider sends it back to /login/sso/callback,
// which takes the flow out of the session (so an answer is used once),
// verifies the ID token and signs the operator in as the group rules say.
// An SSO session ends after the setup's session length; the next page then
// asks the provider again without a prompt, and signs in again silently
// (the rules applied anew) while the provider still says yes.

const (
	ssoStartPath    = "/login/sso"
	ssoCallbackPath = "/login/sso/callback"
)

// Session keys of single sign-on.
const (
	sessionSSOFlow   = "sso_flow"   // the sign-in under way (sso.Flow, JSON)
	sessionSSOUntil  = "sso_until"  // Unix seconds: when an SSO session ends
	sessionSSOReauth = "sso_reauth" // the SSO session ended: sign in again silently
)

// ssoSetup is the identity provider when single sign-on is on; ok false
// when it is off or was never set.
func (h *Handler) ssoSetup(r *http.Request) (c identity.SSOConfig, ok bool, err error) {
	c, err = h.store.SSOConfig(r.Context())
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		return c, false, nil
	}
	return c, err == nil && c.Enabled, err
}

// loginForm is the sign-in page's form for r, with single sign-on's button
// when it is on, as the setup is now.
func (h *Handler) loginForm(r *http.Request, email, message, next string) views.LoginForm {
	f := views.LoginForm{Email: email, Message: message, Next: next, Password: identity.PasswordSignInAll}
	if c, ok, err := h.ssoSetup(r); err != nil {
		h.log.ErrorContext(r.Context(), "read the single sign-on setup", "err", err)
	} else if ok {
		f.SSOName, f.Password = c.Name, c.PasswordSignIn
	}
	h.lastLogin.Store(&views.LoginForm{SSOName: f.SSOName, Password: f.Password})
	return f
}

// knownLoginForm is the sign-in form as loginForm last drew it, without a
// query: for the refusals that must cost none (a flood of sign-ins).
func (h *Handler) knownLoginForm(email, message, next string) views.LoginForm {
	f := views.LoginForm{Email: email, Message: message, Next: next, Password: identity.PasswordSignInAll}
	if last := h.lastLogin.Load(); last != nil {
		f.SSOName, f.Password = last.SSOName, last.Password
	}
	return f
}

// handleSSOStart sends the browser to the identity provider, with a new
// flow in its session. ?prompt=none asks for a silent sign-in.
func (h *Handler) handleSSOStart(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	p, ok := h.ssoProvider(w, r, next)
	if !ok {
		return
	}
	flow := sso.NewFlow(next, r.URL.Query().Get("prompt") == "none", h.now())
	target, err := h.rp.AuthURL(r.Context(), p, flow)
	if err != nil {
		h.ssoRefused(w, r, next, err)
		return
	}
	b, _ := json.Marshal(flow)
	h.sessions.Put(r.Context(), sessionSSOFlow, string(b))
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// ssoProvider is the identity provider with its secret and this
// console's callback; false, the page answered, when single sign-on is
// off or its setup cannot be read.
func (h *Handler) ssoProvider(w http.ResponseWriter, r *http.Request, next string) (sso.Provider, bool) {
	c, ok, err := h.ssoSetup(r)
	if err != nil {
		h.consoleError(w, r, err)
		return sso.Provider{}, false
	}
	if !ok {
		h.render(w, r, http.StatusNotFound, views.Login(h.loginForm(r, "", "Single sign-on is not turned on.", next)))
		return sso.Provider{}, false
	}
	secret, err := h.store.SSOClientSecret(r.Context())
	if err != nil {
		h.ssoRefused(w, r, next, err)
		return sso.Provider{}, false
	}
	return sso.Provider{Config: c, ClientSecret: secret, RedirectURL: httpx.BaseURL(h.publicURL, r) + ssoCallbackPath}, true
}

// handleSSOCallback finishes a sign-in: the flow taken out of the session
// first, so that a replayed answer finds none.
func (h *Handler) handleSSOCallback(w http.ResponseWriter, r *http.Request) {
	var flow sso.Flow
	if raw := h.sessions.PopString(r.Context(), sessionSSOFlow); raw != "" {
		_ = json.Unmarshal([]byte(raw), &flow) // a malformed flow fails the state check
	}
	next := safeNext(flow.Next)
	p, ok := h.ssoProvider(w, r, next)
	if !ok {
		return
	}
	q := r.URL.Query()
	id, err := h.rp.Finish(r.Context(), p, flow, sso.Answer{Code: q.Get("code"), State: q.Get("state"),
		Error: q.Get("error"), ErrorDescription: q.Get("error_description")})
	if errors.Is(err, sso.ErrLoginRequired) {
		h.render(w, r, http.StatusOK, views.Login(h.loginForm(r, "", "Your session ended. Sign in again.", next)))
		return
	}
	if err != nil {
		h.ssoRefused(w, r, next, err)
		return
	}
	// The person signing in is the actor of what their sign-in changes.
	ctx := domain.WithActor(r.Context(), domain.Actor{Kind: domain.ActorOperator,
		Name: domain.NormalizeEmail(id.Email), Address: httpx.ClientAddress(r)})
	u, err := h.store.SignInSSO(ctx, id)
	if err != nil {
		h.ssoRefused(w, r, next, err)
		return
	}
	if err := h.startSession(r, u.ID); err != nil {
		h.consoleError(w, r, err)
		return
	}
	h.sessions.Put(r.Context(), sessionEpoch, u.SessionEpoch)
	h.sessions.Put(r.Context(), sessionSSOUntil, h.now().Add(p.Config.SessionLength).Unix())
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// ssoRefused shows the sign-in page with why single sign-on did not sign
// the person in: 403 when the rules or the account refuse them, 401 when
// the provider's answer does not hold, 503 when it cannot be reached.
func (h *Handler) ssoRefused(w http.ResponseWriter, r *http.Request, next string, err error) {
	status, msg := httpx.ErrorStatus(err), domain.ErrorMessage(err)
	if status == http.StatusInternalServerError {
		msg = internalErrorText(httpx.LogInternal(h.log, w, r, err))
	} else {
		h.log.InfoContext(r.Context(), "single sign-on refused", "status", status, "reason", msg)
	}
	h.render(w, r, status, views.Login(h.loginForm(r, "", msg, next)))
}

// endSSOSession ends a session whose SSO length has passed, keeping a
// mark that the next sign-in page asks the provider again silently.
func (h *Handler) endSSOSession(r *http.Request) error {
	if err := h.sessions.RenewToken(r.Context()); err != nil {
		return err
	}
	for _, key := range []string{sessionUserID, sessionEpoch, sessionSignedIn, sessionSeen, sessionSSOUntil} {
		h.sessions.Remove(r.Context(), key)
	}
	h.sessions.Put(r.Context(), sessionSSOReauth, true)
	return nil
}

// ssoReauth sends a browser whose SSO session ended to a silent sign-in,
// once: true when it did.
func (h *Handler) ssoReauth(w http.ResponseWriter, r *http.Request, next string) bool {
	if !h.sessions.PopBool(r.Context(), sessionSSOReauth) {
		return false
	}
	if _, ok, err := h.ssoSetup(r); err != nil || !ok {
		return false
	}
	target := ssoStartPath + "?prompt=none"
	if next != "/" {
		target += "&next=" + url.QueryEscape(next)
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
	return true
}

// ssoSessionOver reports whether r's session is an SSO one past its length.
func (h *Handler) ssoSessionOver(r *http.Request, now time.Time) bool {
	until := h.sessions.GetInt64(r.Context(), sessionSSOUntil)
	return until != 0 && now.Unix() >= until
}
