package providers

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/egress"
	"github.com/tidemark/tidemark/internal/provider"
	pullapi "github.com/tidemark/tidemark/internal/pull"
	"github.com/tidemark/tidemark/views"
)

// apiCredentialsView is the API credentials section of provider p's page,
// with refused as the form when it was just refused; nil for a kind
// without an API. The secret is never read: only what may be shown.
func (h Pages) apiCredentialsView(r *http.Request, p domain.ProviderSummary, refused *views.APICredentialsForm) (*views.ProviderAPIView, error) {
	api := provider.PullAPI(p.Kind)
	if api == pull.NoAPI {
		return nil, nil
	}
	info, set, err := h.Store.APICredentialsInfo(r.Context(), h.tenant(r).ID, p.ID)
	if err != nil {
		return nil, err
	}
	v := &views.ProviderAPIView{Set: set, Info: info, ClientCredentials: api == pull.ClientCredentialsAPI,
		Form: views.APICredentialsForm{ClientID: info.ClientID, LoginURL: info.LoginURL, APIVersion: info.APIVersion,
			Budget: strconv.FormatFloat(pull.DefaultBudgetShare*100, 'f', -1, 64)}}
	if set {
		v.Form.Budget = strconv.FormatFloat(info.BudgetShare*100, 'f', -1, 64)
	}
	if refused != nil {
		v.Form = *refused
	}
	return v, nil
}

// HandleSetAPICredentials sets the provider's API credentials from the
// form, replacing any, and confirms what it set without the secret. The
// console never allows private addresses: that is the command line's
// choice alone. A refusal shows the form again as entered, the secret
// excepted.
func (h Pages) HandleSetAPICredentials(w http.ResponseWriter, r *http.Request) {
	p, k, ok := h.currentProvider(w, r)
	if !ok {
		return
	}
	if provider.PullAPI(p.Kind) == pull.NoAPI {
		h.Console.RedirectWithFlash(w, r, h.providerURL(r, p.Name), "error", "Cannot set API credentials: provider kind "+p.Kind+" has no API to pull from.")
		return
	}
	form := views.APICredentialsForm{ClientID: strings.TrimSpace(r.PostFormValue("client_id")),
		LoginURL: strings.TrimSpace(r.PostFormValue("login_url")), APIVersion: strings.TrimSpace(r.PostFormValue("api_version")),
		Budget: strings.TrimSpace(r.PostFormValue("budget"))}
	c := pull.Credentials{Token: strings.TrimSpace(r.PostFormValue("token")), ClientID: form.ClientID,
		ClientSecret: strings.TrimSpace(r.PostFormValue("client_secret")), LoginURL: form.LoginURL, APIVersion: form.APIVersion}
	percent, err := strconv.ParseFloat(form.Budget, 64)
	if err != nil {
		err = domain.Errorf(domain.EINVALID, "the API budget must be a percentage above 0 and at most 100, such as 50")
	}
	if err == nil {
		c.BudgetShare, err = pull.ShareFromPercent(percent)
	}
	if err == nil {
		c, err = pullapi.CheckCredentials(r.Context(), p.Kind, c)
		if d := egress.Detail(err); d != "" { // what the owner is not told
			h.Log.InfoContext(r.Context(), "API credentials URL refused", "provider", p.Name, "detail", d)
		}
	}
	t := h.tenant(r)
	if err == nil {
		err = h.Store.SetAPICredentials(r.Context(), t.ID, p.ID, c)
	}
	if formRefusal(err) {
		form.Error = "Cannot save the API credentials: " + domain.ErrorMessage(err)
		h.renderProvider(w, r, http.StatusUnprocessableEntity, p, k, refusedForm{api: &form})
		return
	}
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Log.InfoContext(r.Context(), "provider API credentials set", "tenant", t.Slug, "provider", p.Name, "by", by(r))
	h.Console.RedirectWithFlash(w, r, h.providerURL(r, p.Name)+"#api-credentials", "ok", "Saved the API credentials: "+c.Summary()+".")
}

// HandleClearAPICredentials deletes the provider's API credentials.
func (h Pages) HandleClearAPICredentials(w http.ResponseWriter, r *http.Request) {
	p, _, ok := h.currentProvider(w, r)
	if !ok {
		return
	}
	t := h.tenant(r)
	err := h.Store.ClearAPICredentials(r.Context(), t.ID, p.ID)
	if domain.ErrorCode(err) == domain.ENOTFOUND { // the provider exists: it has none
		h.Console.RedirectWithFlash(w, r, h.providerURL(r, p.Name), "error", "Nothing to clear: "+domain.ErrorMessage(err)+".")
		return
	}
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Log.InfoContext(r.Context(), "provider API credentials cleared", "tenant", t.Slug, "provider", p.Name, "by", by(r))
	h.Console.RedirectWithFlash(w, r, h.providerURL(r, p.Name)+"#api-credentials", "ok",
		"Cleared the API credentials: backfill no longer pulls from this provider.")
}
