// Package apps is the console's OAuth install of a HubSpot app
// (docs/contract/apps.md#the-oauth-install): an owner's "Connect HubSpot"
// on the Providers page (/t/{tenant}/apps/{app}/connect) sends the browser
// to the app's consent page with a state, and the callback
// (/apps/{app}/oauth/callback) takes the state back once, trades the code
// for the install's tokens, reads the portal and installs it. It is a page
// family of web/console, which registers its routes behind the session,
// the tenant and the roles, and hands it the page frame through Console.
package apps

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/console/shell"
	"github.com/tidemark/tidemark/web/httpx"
)

// Store is what the install reads and changes.
type Store interface {
	App(ctx context.Context, name string) (domain.App, error)
	Apps(ctx context.Context) ([]domain.App, error)
	AppSecrets(ctx context.Context, appID int64) ([]string, error)
	domain.AppOAuthService
	// TenantFor checks at the callback that the operator is still an owner.
	TenantFor(ctx context.Context, u domain.User, slug string) (domain.Membership, error)
}

// Sessions is the operator's console session, which keeps the nonce an
// install's state is bound to (*scs.SessionManager).
type Sessions interface {
	GetString(ctx context.Context, key string) string
	Put(ctx context.Context, key string, val any)
}

// Pages serves the OAuth install.
type Pages struct {
	Console   shell.Console
	Store     Store
	Sessions  Sessions
	PublicURL string // the base URL HubSpot sends the browser back to; "" to build it from each request
	Log       *slog.Logger
}

// sessionNonce is the session key of the nonce that binds the session's
// installs under way to it.
const sessionNonce = "app_oauth_nonce"

// CallbackPath is where HubSpot's consent page sends the browser back.
const CallbackPath = "/apps/{app}/oauth/callback"

// redirectURI is the app's callback URL, as given at the authorize step
// and again at the code exchange.
func (h Pages) redirectURI(r *http.Request, app string) string {
	return httpx.BaseURL(h.PublicURL, r) + "/apps/" + url.PathEscape(app) + "/oauth/callback"
}

// random is n random bytes, base64url.
func random(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func hash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// nonce is the session's nonce, made on its first install.
func (h Pages) nonce(ctx context.Context) string {
	n := h.Sessions.GetString(ctx, sessionNonce)
	if n == "" {
		n = random(32)
		h.Sessions.Put(ctx, sessionNonce, n)
	}
	return n
}

// HandleConnect starts an install: it stores a state (256 random bits,
// good for ten minutes and once) bound to the operator, the tenant, the
// app, the provider and the session, and sends the browser to the app's
// consent page. Owners only (the route group).
func (h Pages) HandleConnect(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := h.Console.Membership(r).Tenant
	app, err := h.Store.App(ctx, chi.URLParam(r, "app"))
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	if app.Kind != domain.AppKindHubSpot {
		h.Console.Error(w, r, domain.Errorf(domain.EINVALID, "app %s is not a HubSpot app", app.Name))
		return
	}
	providerName := cmp.Or(strings.TrimSpace(r.URL.Query().Get("provider")), domain.DefaultAppProvider)
	if err := domain.ValidateSlug("provider", providerName); err != nil {
		h.refuse(w, r, "Not a provider name", domain.ErrorMessage(err), t.Slug)
		return
	}
	state := random(32)
	err = h.Store.StartAppOAuth(ctx, domain.AppOAuthStart{StateHash: hash(state), NonceHash: hash(h.nonce(ctx)),
		UserID: h.Console.User(r).ID, TenantID: t.ID, AppID: app.ID, ProviderName: providerName})
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	q := url.Values{"client_id": {app.ClientID}, "redirect_uri": {h.redirectURI(r, app.Name)}, "state": {state}}
	if len(app.Scopes) > 0 {
		q.Set("scope", strings.Join(app.Scopes, " "))
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, app.AuthorizeURL+"?"+q.Encode(), http.StatusFound)
}

// refuse answers 400 with why an install did not happen; tenant names the
// providers page to start again from, when known.
func (h Pages) refuse(w http.ResponseWriter, r *http.Request, heading, reason, tenant string) {
	h.notInstalled(w, r, http.StatusBadRequest, heading, reason, tenant)
}

// notInstalled answers status with why an install did not happen.
func (h Pages) notInstalled(w http.ResponseWriter, r *http.Request, status int, heading, reason, tenant string) {
	v := views.AppInstallRefusedView{Heading: heading, Reason: reason}
	if tenant != "" {
		v.Back = "/t/" + tenant + "/providers"
	}
	w.Header().Set("Cache-Control", "no-store")
	h.Console.Render(w, r, status, views.AppInstallRefused(h.Console.Layout(r, heading, ""), v))
}

// AllowConsentForms lets the pages it wraps (the Providers page, whose
// "Connect HubSpot" forms end at an app's consent page) submit forms that
// redirect to the apps' authorize URLs: browsers hold a form's redirects
// to the page's form-action too.
func (h Pages) AllowConsentForms(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if domain.CheckRole(h.Console.Membership(r).Role, domain.RoleOwner) == nil {
			if apps, err := h.Store.Apps(r.Context()); err == nil {
				var origins []string
				for _, a := range apps {
					if u, err := url.Parse(a.AuthorizeURL); err == nil && u.Host != "" {
						origins = append(origins, u.Scheme+"://"+u.Host)
					}
				}
				if len(origins) > 0 {
					csp := w.Header().Get("Content-Security-Policy")
					w.Header().Set("Content-Security-Policy",
						strings.Replace(csp, "form-action 'self'", "form-action 'self' "+strings.Join(origins, " "), 1))
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// sameBytes compares two hashes in constant time.
func sameBytes(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }
