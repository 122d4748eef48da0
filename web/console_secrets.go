package web

import (
	"fmt"
	"net/http"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/provider"
)

// renderNewSecret shows a new provider's endpoint and secret once. The page
// must not be cached: it is the only place the plaintext ever appears.
func (s *Server) renderNewSecret(w http.ResponseWriter, r *http.Request, p domain.Provider, secret string, rotated bool) {
	endpoint := s.endpointURL(r, p.Name)
	v := views.ProviderSecretView{Name: p.Name, Kind: p.Kind, Rotated: rotated, EndpointURL: endpoint, Secret: secret,
		SecretName: "signing secret", Settings: providerSettings(p)}
	if k, ok := provider.Lookup(p.Kind); ok {
		page := k.SecretPage(endpoint, secret, p.Config)
		v.EndpointURL, v.Secret, v.SecretName, v.SecretStored = page.EndpointURL, page.Secret, page.SecretName, page.SecretStored
		v.URLNote, v.Intro, v.CurlHint, v.CurlExample, v.SendExample = page.URLNote, page.Intro, page.CurlHint, page.CurlExample, page.SendExample
	}
	title := "Provider connected"
	if rotated {
		title = "New " + v.SecretName
	}
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, r, http.StatusOK, views.ProviderSecret(s.layout(r, title, "providers"), v))
}

// secretIssued reports whether the provider issues k's secrets (its secret
// field is required), so the console takes a pasted one instead of
// generating it.
func secretIssued(k provider.Kind) bool {
	for _, f := range k.Form().Fields {
		if f.Secret && f.Required {
			return true
		}
	}
	return false
}

// signable refuses secret actions on kinds this version does not know,
// whose secrets it cannot use.
func (s *Server) signable(w http.ResponseWriter, r *http.Request, p domain.ProviderSummary) bool {
	if _, ok := provider.Lookup(p.Kind); ok {
		return true
	}
	s.redirectWithFlash(w, r, s.providerURL(r, p.Name), "error",
		fmt.Sprintf("%s providers are not supported by this version of Tidemark yet.", p.Kind))
	return false
}

// handleRotateSecret adds a new secret and answers with it, once.
func (s *Server) handleRotateSecret(w http.ResponseWriter, r *http.Request) {
	p, ok := s.currentProvider(w, r)
	if !ok || !s.signable(w, r, p) {
		return
	}
	k, _ := provider.Lookup(p.Kind)
	if !k.HasSecrets() {
		s.redirectWithFlash(w, r, s.providerURL(r, p.Name), "error",
			fmt.Sprintf("%s providers have no secret to rotate: %s", p.Kind, k.ProviderPage(p.Config).NoRotation))
		return
	}
	var (
		secret string
		err    error
	)
	if secretIssued(k) {
		// The provider issues the new secret; the operator pastes it.
		secret, _, err = consoleSetup(k, r.PostFormValue("new_secret"), p.Config)
		if err != nil {
			s.redirectWithFlash(w, r, s.providerURL(r, p.Name), "error", "Cannot rotate: "+formMessage(err))
			return
		}
	} else {
		secret, err = k.NewSecret(p.Config)
	}
	if err != nil {
		s.redirectWithFlash(w, r, s.providerURL(r, p.Name), "error", "Cannot rotate: "+err.Error())
		return
	}
	if err := s.providers.RotateProviderSecret(r.Context(), currentTenant(r.Context()).ID, p.ID, secret); err != nil {
		s.consoleError(w, r, err)
		return
	}
	s.log.Info("provider secret rotated", "tenant", currentTenant(r.Context()).Slug, "provider", p.Name, "by", currentUser(r.Context()).Email)
	s.renderNewSecret(w, r, p.Provider, secret, true)
}

func (s *Server) handleRetireSecrets(w http.ResponseWriter, r *http.Request) {
	p, ok := s.currentProvider(w, r)
	if !ok {
		return
	}
	n, err := s.providers.RetireProviderSecrets(r.Context(), currentTenant(r.Context()).ID, p.ID)
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	s.log.Info("provider secrets retired", "tenant", currentTenant(r.Context()).Slug, "provider", p.Name, "count", n, "by", currentUser(r.Context()).Email)
	msg := "Nothing to retire: only one secret is active."
	if n > 0 {
		msg = fmt.Sprintf("Retired %d old secret(s). Only the newest secret is accepted now.", n)
	}
	s.redirectWithFlash(w, r, s.providerURL(r, p.Name), "ok", msg)
}
