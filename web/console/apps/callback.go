package apps

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/pull/hubspot"
)

// HandleCallback ends an install where the consent page sends the browser
// back: it takes the state (once, whatever follows), checks that the
// operator, their session and their role in the tenant are those that
// started it, trades the code for the tokens, reads their portal and
// installs it in one transaction, then lands on the provider's page. A
// refusal is a 400 page that changes nothing. The code, the tokens and the
// state are never logged.
func (h Pages) HandleCallback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	const failed = "HubSpot install refused"
	if q.Get("state") == "" {
		h.refuse(w, r, failed, "The link has no state: start the install again from the Providers page.", "")
		return
	}
	st, err := h.Store.TakeAppOAuthState(ctx, hash(q.Get("state")))
	switch {
	case err == nil:
	case domain.ErrorCode(err) == domain.ENOTFOUND:
		h.refuse(w, r, failed, "This install's state is unknown or was used already: each install link works once. "+
			"Start the install again from the Providers page.", "")
		return
	case domain.ErrorCode(err) == domain.EINVALID:
		h.refuse(w, r, failed, "This install's state expired: finish an install within "+
			domain.FormatDuration(domain.AppOAuthStateLife)+" of starting it. Start it again.", st.TenantSlug)
		return
	default:
		h.Console.Error(w, r, err)
		return
	}
	user := h.Console.User(r)
	if st.UserID != user.ID {
		h.refuse(w, r, failed, "This install was started by another operator: only they can finish it.", "")
		return
	}
	if !sameBytes(hash(h.Sessions.GetString(ctx, sessionNonce)), st.NonceHash) {
		h.refuse(w, r, failed, "This install was started in another browser session: start it again here.", "")
		return
	}
	m, err := h.Store.TenantFor(ctx, user, st.TenantSlug)
	if err == nil {
		err = domain.CheckRole(m.Role, domain.RoleOwner)
	}
	if err != nil {
		h.refuse(w, r, failed, "You are no longer an owner of the workspace this install was started for.", "")
		return
	}
	app, err := h.Store.App(ctx, chi.URLParam(r, "app"))
	if err != nil || app.ID != st.AppID {
		h.refuse(w, r, failed, "This install was started for another app.", st.TenantSlug)
		return
	}
	if e := q.Get("error"); e != "" {
		reason := fmt.Sprintf("HubSpot did not grant the install (%.100s).", e)
		if e == "access_denied" {
			reason = "The install was not approved on HubSpot's consent page (access_denied)."
		}
		h.refuse(w, r, failed, reason, st.TenantSlug)
		return
	}
	if q.Get("code") == "" {
		h.refuse(w, r, failed, "HubSpot sent no authorization code.", st.TenantSlug)
		return
	}
	h.install(w, r, app, st, m)
}

// install trades the code for the tokens, reads their portal and installs
// it into the tenant's provider.
func (h Pages) install(w http.ResponseWriter, r *http.Request, app domain.App, st domain.AppOAuthState, m domain.Membership) {
	ctx := r.Context()
	const failed = "HubSpot install refused"
	secrets, err := h.Store.AppSecrets(ctx, app.ID)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	client, err := hubspot.NewClient(hubspot.AppConfig{BaseURL: app.APIBaseURL, ClientID: app.ClientID, ClientSecret: secrets[0],
		AllowPrivate: app.AllowPrivate}, h.Log)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	tok, err := client.ExchangeCode(ctx, r.URL.Query().Get("code"), h.redirectURI(r, app.Name))
	if errors.Is(err, hubspot.ErrCodeRefused) {
		h.refuse(w, r, failed, "HubSpot refused the authorization code (used already, expired or for another app). "+
			"Start the install again.", st.TenantSlug)
		return
	}
	var info hubspot.TokenInfo
	if err == nil {
		info, err = client.TokenInfo(ctx, tok.AccessToken)
	}
	if err != nil {
		h.Log.WarnContext(ctx, "app install: HubSpot's token endpoints failed", "app", app.Name, "tenant", st.TenantSlug, "err", err)
		h.notInstalled(w, r, http.StatusBadGateway, "HubSpot unavailable",
			"HubSpot could not be reached to finish the install, or answered what it does not document. Start the install again.", st.TenantSlug)
		return
	}
	k, err := provider.Get(app.Kind)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	newSecret, newConfig, err := k.Setup("", nil)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	in, err := h.Store.InstallByOAuth(ctx, domain.AppOAuthInstall{AppID: app.ID, TenantID: st.TenantID, PortalID: info.HubID,
		ProviderName: st.ProviderName, NewSecret: newSecret, NewConfig: newConfig,
		Tokens: domain.AppTokens{AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry}})
	switch {
	case domain.ErrorCode(err) == domain.ECONFLICT:
		reason := fmt.Sprintf("HubSpot portal %d is installed elsewhere, or provider %s receives another portal of app %s: "+
			"it was not installed here. An admin can move it.", info.HubID, st.ProviderName, app.Name)
		if h.Console.User(r).IsAdmin {
			reason = domain.ErrorMessage(err) + ": it was not installed here; disconnect it there first (tidemark app disconnect)."
		}
		h.refuse(w, r, failed, reason, st.TenantSlug)
		return
	case domain.ErrorCode(err) == domain.EINVALID:
		h.refuse(w, r, failed, domain.ErrorMessage(err), st.TenantSlug)
		return
	case err != nil:
		h.Console.Error(w, r, err)
		return
	}
	a, _ := domain.ActorFrom(ctx)
	h.Log.InfoContext(ctx, "app installed by OAuth", "tenant", st.TenantSlug, "app", app.Name, "portal", in.PortalID,
		"provider", in.ProviderName, "by", a.Name)
	h.Console.RedirectWithFlash(w, r, "/t/"+m.Tenant.Slug+"/providers/"+url.PathEscape(in.ProviderName), "ok",
		fmt.Sprintf("HubSpot portal %d is installed: its webhooks to app %s arrive at this provider.", in.PortalID, app.Name))
}
