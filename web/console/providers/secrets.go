package providers

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/views"
)

// renderNewSecret shows a new provider's endpoint and secret once. The page
// must not be cached: it is the only place the plaintext ever appears.
func (h Pages) renderNewSecret(w http.ResponseWriter, r *http.Request, p domain.Provider, k provider.Kind, secret string, rotated bool) {
	page := k.SecretPage(h.endpointURL(r, p.Name), secret, p.Config)
	v := views.ProviderSecretView{Name: p.Name, Kind: p.Kind, Rotated: rotated, Settings: providerSettings(k, p.Config),
		EndpointURL: page.EndpointURL, Secret: page.Secret, SecretName: page.SecretName, SecretStored: page.SecretStored,
		URLNote: page.URLNote, Intro: page.Intro, CurlHint: page.CurlHint, CurlExample: page.CurlExample, SendExample: page.SendExample}
	title := "Provider connected"
	if rotated {
		title = "New " + v.SecretName
	}
	w.Header().Set("Cache-Control", "no-store")
	h.Console.Render(w, r, http.StatusOK, views.ProviderSecret(h.Console.Layout(r, title, "providers"), v))
}

// pastedSecret returns k's secret field when the provider issues the
// secret (the field is required), so the console takes a pasted one
// instead of generating it.
func pastedSecret(k provider.Kind) (provider.Field, bool) {
	for _, f := range k.Form().Fields {
		if f.Secret && f.Required {
			return f, true
		}
	}
	return provider.Field{}, false
}

// HandleRotateSecret adds a new secret and answers with it, once.
func (h Pages) HandleRotateSecret(w http.ResponseWriter, r *http.Request) {
	p, k, ok := h.currentProvider(w, r)
	if !ok {
		return
	}
	if !k.HasSecrets() {
		h.Console.RedirectWithFlash(w, r, h.providerURL(r, p.Name), "error",
			fmt.Sprintf("%s providers have no secret to rotate: %s", p.Kind, k.ProviderPage(p.Config).NoRotation))
		return
	}
	var (
		secret string
		err    error
	)
	if _, pasted := pastedSecret(k); pasted {
		// The provider issues the new secret; the operator pastes it.
		secret, _, err = consoleSetup(k, r.PostFormValue("new_secret"), p.Config)
		if err != nil {
			h.Console.RedirectWithFlash(w, r, h.providerURL(r, p.Name), "error", "Cannot rotate: "+formMessage(err))
			return
		}
	} else {
		secret, err = k.NewSecret(p.Config)
	}
	if err != nil {
		h.Console.RedirectWithFlash(w, r, h.providerURL(r, p.Name), "error", "Cannot rotate: "+err.Error())
		return
	}
	if err := h.Store.RotateProviderSecret(r.Context(), h.tenant(r).ID, p.ID, secret); err != nil {
		if domain.ErrorCode(err) == domain.ECONFLICT { // a key the active secrets do not use
			h.Console.RedirectWithFlash(w, r, h.providerURL(r, p.Name), "error", "Cannot rotate: "+domain.ErrorMessage(err))
			return
		}
		h.Console.Error(w, r, err)
		return
	}
	h.Log.InfoContext(r.Context(), "provider secret rotated", "tenant", h.tenant(r).Slug, "provider", p.Name, "by", by(r))
	h.renderNewSecret(w, r, p.Provider, k, secret, true)
}

// HandleRetireSecrets retires every secret but the newest.
func (h Pages) HandleRetireSecrets(w http.ResponseWriter, r *http.Request) {
	p, _, ok := h.currentProvider(w, r)
	if !ok {
		return
	}
	n, err := h.Store.RetireProviderSecrets(r.Context(), h.tenant(r).ID, p.ID)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Log.InfoContext(r.Context(), "provider secrets retired", "tenant", h.tenant(r).Slug, "provider", p.Name, "count", n, "by", by(r))
	msg := "Nothing to retire: only one secret is active."
	if n > 0 {
		msg = fmt.Sprintf("Retired %d old secret(s). Only the newest secret is accepted now.", n)
	}
	h.Console.RedirectWithFlash(w, r, h.providerURL(r, p.Name), "ok", msg)
}

// issuedSecret is the notice of a secret issued at start-up to provider p,
// connected before its kind needed one, until an operator confirms it was
// pasted into the sending system; nil when there is none.
func (h Pages) issuedSecret(r *http.Request, p domain.ProviderSummary, k provider.Kind) (*views.IssuedSecret, error) {
	info, secret, err := h.Store.UnshownProviderSecret(r.Context(), h.tenant(r).ID, p.ID)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	page := k.SecretPage(h.endpointURL(r, p.Name), secret, p.Config)
	v := &views.IssuedSecret{ID: info.ID, EndpointURL: page.EndpointURL, SecretName: page.SecretName,
		Notice: k.ProviderPage(p.Config).IssuedNotice}
	if !page.CopyURL {
		v.Secret = page.Secret
	}
	if v.Notice == "" {
		v.Notice = fmt.Sprintf("Deliveries of this provider now need this %s: Tidemark issued it because the provider had none. "+
			"Paste it into the provider's webhook settings.", page.SecretName)
	}
	return v, nil
}

// HandleSecretShown records that an operator has pasted an issued secret
// into the sending system, so the provider's page stops showing it.
func (h Pages) HandleSecretShown(w http.ResponseWriter, r *http.Request) {
	p, k, ok := h.currentProvider(w, r)
	if !ok {
		return
	}
	id, err := strconv.ParseInt(r.PostFormValue("secret_id"), 10, 64)
	if err != nil {
		h.Console.Error(w, r, domain.Errorf(domain.EINVALID, "secret_id must be a secret's id"))
		return
	}
	t := h.tenant(r)
	if err := h.Store.MarkProviderSecretShown(r.Context(), t.ID, p.ID, id); err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Log.InfoContext(r.Context(), "issued provider secret confirmed", "tenant", t.Slug, "provider", p.Name, "secret", id, "by", by(r))
	name := k.SecretPage(h.endpointURL(r, p.Name), "", p.Config).SecretName
	h.Console.RedirectWithFlash(w, r, h.providerURL(r, p.Name), "ok", "Confirmed: the issued "+name+" is no longer shown. Deliveries without it are refused.")
}
