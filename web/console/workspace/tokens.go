package workspace

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/httpx"
)

// The create form's defaults: the safer choices. A post without the fields
// gets the CLI's defaults (read-write, no expiry) instead.
const (
	defaultFormAccess  = domain.TokenRead
	defaultFormExpires = "90d"
)

// HandleTokens lists the workspace's API tokens with the form that
// creates one.
func (h Pages) HandleTokens(w http.ResponseWriter, r *http.Request) {
	h.renderTokens(w, r, http.StatusOK, views.TokensView{Form: views.TokenForm{Access: defaultFormAccess, Expires: defaultFormExpires}})
}

func (h Pages) renderTokens(w http.ResponseWriter, r *http.Request, status int, v views.TokensView) {
	tokens, err := h.Store.APITokens(r.Context(), h.tenant(r).ID)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	v.Tokens = tokens
	h.Console.Render(w, r, status, views.Tokens(h.Console.Layout(r, "API tokens", "tokens"), v))
}

// HandleCreateToken creates a token and answers with it, once: only its
// hash is stored.
func (h Pages) HandleCreateToken(w http.ResponseWriter, r *http.Request) {
	t := h.tenant(r)
	form := views.TokenForm{Name: strings.TrimSpace(r.PostFormValue("name")), Access: domain.TokenAccess(r.PostFormValue("access")),
		Expires: r.PostFormValue("expires")}
	if form.Access == "" {
		form.Access = domain.TokenWrite
	}
	lifetime, err := domain.ParseTokenLifetime(form.Expires)
	var token string
	if err == nil {
		token, err = h.Store.CreateAPIToken(r.Context(), t.ID, domain.NewAPIToken{Name: form.Name, Access: form.Access,
			Lifetime: lifetime, CreatedBy: h.Console.User(r).ID})
	}
	if formRefusal(err) {
		form.Error = domain.ErrorMessage(err)
		h.renderTokens(w, r, http.StatusUnprocessableEntity, views.TokensView{Form: form})
		return
	}
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Log.InfoContext(r.Context(), "API token created", "tenant", t.Slug, "name", form.Name, "access", form.Access, "by", h.Console.User(r).Email)
	example := "curl -sS -H " + provider.ShellQuote("Authorization: Bearer "+token) + " " + provider.ShellWord(httpx.BaseURL(h.PublicURL, r)+"/api/v1/tenants/"+t.Slug+"/stats")
	w.Header().Set("Cache-Control", "no-store")
	h.renderTokens(w, r, http.StatusOK, views.TokensView{Created: views.NewToken{Name: form.Name, Access: form.Access, Token: token, APIExample: example},
		Form: views.TokenForm{Access: defaultFormAccess, Expires: defaultFormExpires}})
}

// HandleRevokeToken revokes an API token at once.
func (h Pages) HandleRevokeToken(w http.ResponseWriter, r *http.Request) {
	t := h.tenant(r)
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		h.Console.Error(w, r, domain.Errorf(domain.ENOTFOUND, "API token not found"))
		return
	}
	if err := h.Store.RevokeAPIToken(r.Context(), t.ID, id); err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Log.InfoContext(r.Context(), "API token revoked", "tenant", t.Slug, "id", id, "by", h.Console.User(r).Email)
	h.Console.RedirectWithFlash(w, r, "/t/"+t.Slug+"/tokens", "ok", "Token revoked: API calls with it are refused from now on.")
}

// formRefusal reports whether err is a refusal the operator can fix in the
// form they submitted, rather than an error page.
func formRefusal(err error) bool {
	code := domain.ErrorCode(err)
	return code == domain.EINVALID || code == domain.ECONFLICT
}
