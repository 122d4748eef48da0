package web

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// providerDeliveriesShown is how many deliveries a provider page lists.
const providerDeliveriesShown = 25

// providerRoutes registers the console pages of providers, their secrets, scopes and deliveries, and API tokens.
func (s *Server) providerRoutes(r chi.Router) {
	r.Get("/providers", s.handleProviders)
	r.Post("/providers", s.handleConnectProvider)
	r.Get("/providers/{name}", s.handleProvider)
	r.Post("/providers/{name}/rotate", s.handleRotateSecret)
	r.Post("/providers/{name}/retire", s.handleRetireSecrets)
	r.Post("/providers/{name}/test", s.handleTestEvent)
	r.Post("/providers/{name}/scopes", s.handleSaveScope)
	r.Get("/tokens", s.handleTokens)
	r.Post("/tokens", s.handleCreateToken)
	r.Post("/tokens/{id}/revoke", s.handleRevokeToken)
}

// formRefusal reports whether err is a refusal the operator can fix in the
// form they submitted, rather than an error page.
func formRefusal(err error) bool {
	code := domain.ErrorCode(err)
	return code == domain.EINVALID || code == domain.ECONFLICT
}

func (s *Server) handleProviders(w http.ResponseWriter, r *http.Request) {
	s.renderProviders(w, r, http.StatusOK, views.ProviderForm{Kind: domain.KindStandard, ShippoAuth: shippoAuthHMAC})
}

func (s *Server) renderProviders(w http.ResponseWriter, r *http.Request, status int, form views.ProviderForm) {
	ps, err := s.providers.ProviderSummaries(r.Context(), currentTenant(r.Context()).ID)
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	v := views.ProvidersView{Providers: ps, Form: form}
	for _, k := range domain.Kinds {
		opt := views.ProviderKindOption{Value: k, Label: k}
		if domain.ValidateConnectableKind(k) != nil {
			opt.Label, opt.Disabled = k+" (coming soon)", true
		}
		v.Kinds = append(v.Kinds, opt)
	}
	s.render(w, r, status, views.Providers(s.layout(r, "Providers", "providers"), v))
}

// setupFlagNames turns the command-line flag names in ProviderSetup's
// messages into the connect form's labels.
var setupFlagNames = strings.NewReplacer(
	"--org-id", "Organization Id",
	"--allowed-networks", "Allowed networks",
	"--revision-field", "Revision field",
	"--auth", "Auth mode",
	"--secret", "Secret",
)

// handleConnectProvider creates a provider and answers with its endpoint
// and secret, which exists in plaintext only in this response. What the kind
// needs is checked and completed by ProviderSetup; only the fields of the
// chosen kind are read.
func (s *Server) handleConnectProvider(w http.ResponseWriter, r *http.Request) {
	t := currentTenant(r.Context())
	form := views.ProviderForm{
		Name:                    strings.TrimSpace(r.PostFormValue("name")),
		Kind:                    r.PostFormValue("kind"),
		ShippoAuth:              r.PostFormValue("shippo_auth"),
		SalesforceOrgID:         strings.TrimSpace(r.PostFormValue("org_id")),
		SalesforceNetworks:      strings.TrimSpace(r.PostFormValue("allowed_networks")),
		SalesforceRevisionField: strings.TrimSpace(r.PostFormValue("revision_field")),
		HubSpotAllowV1:          r.PostFormValue("hubspot_allow_v1") == "true",
	}
	var (
		secret string
		config map[string]string
	)
	err := domain.ValidateSlug("provider", form.Name)
	if err == nil {
		err = domain.ValidateConnectableKind(form.Kind)
	}
	if err == nil {
		var in map[string]string
		var inSecret string
		switch form.Kind {
		case domain.KindShippo:
			in, inSecret = map[string]string{"auth": form.ShippoAuth}, r.PostFormValue("shippo_secret")
		case domain.KindSalesforce:
			in = map[string]string{"org_id": form.SalesforceOrgID, "allowed_networks": form.SalesforceNetworks,
				"revision_field": form.SalesforceRevisionField}
		case domain.KindHubSpot:
			in, inSecret = map[string]string{"allow_v1": strconv.FormatBool(form.HubSpotAllowV1)}, r.PostFormValue("hubspot_secret")
		}
		if form.Kind == domain.KindHubSpot {
			// HubSpot issues the client secret: the console never makes one up.
			secret, config, err = hubspotConsoleSetup(inSecret, in)
		} else {
			secret, config, err = ProviderSetup(form.Kind, inSecret, in)
		}
		if err != nil && domain.ErrorCode(err) != domain.EINVALID {
			err = domain.Errorf(domain.EINVALID, "%s", err.Error())
		}
	}
	var p domain.Provider
	if err == nil {
		p, err = s.providers.ConnectProvider(r.Context(), t.ID, form.Name, form.Kind, secret, config)
	}
	if formRefusal(err) {
		form.Error = setupFlagNames.Replace(domain.ErrorMessage(err))
		s.renderProviders(w, r, http.StatusUnprocessableEntity, form)
		return
	}
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	s.log.Info("provider connected", "tenant", t.Slug, "provider", p.Name, "kind", p.Kind, "by", currentUser(r.Context()).Email)
	s.renderNewSecret(w, r, p, secret, false)
}

// providerSettings lists a provider's kind-specific settings for display.
func providerSettings(p domain.Provider) []views.ProviderSetting {
	switch p.Kind {
	case domain.KindShippo:
		return []views.ProviderSetting{{Label: "Auth mode", Value: shippoMode(p)}}
	case domain.KindHubSpot:
		return []views.ProviderSetting{{Label: "Accept legacy v1 signatures (allow_v1)", Value: hubspotAllowV1(p)}}
	case domain.KindSalesforce:
		nets := p.Config["allowed_networks"]
		if nets == "" {
			nets = "any"
		}
		rev := p.Config["revision_field"]
		if rev == "" {
			rev = sfDefaultRevKey
		}
		return []views.ProviderSetting{
			{Label: "Organization Id", Value: p.Config["org_id"]},
			{Label: "Allowed networks", Value: nets},
			{Label: "Revision field", Value: rev},
		}
	}
	return nil
}

func shippoMode(p domain.Provider) string {
	if p.Config["auth"] == shippoAuthToken {
		return shippoAuthToken
	}
	return shippoAuthHMAC
}

// hubspotAllowV1 is a hubspot provider's allow_v1 setting, "true" or "false".
func hubspotAllowV1(p domain.Provider) string {
	return strconv.FormatBool(p.Config["allow_v1"] == "true")
}

// hubspotSecretRequired is the refusal of a hubspot connection or rotation
// without a client secret.
const hubspotSecretRequired = "paste the client secret of your HubSpot app (Settings → Auth)"

// hubspotConsoleSetup checks a hubspot provider entered in the console: the
// client secret is HubSpot's, so it is required rather than generated.
func hubspotConsoleSetup(secret string, config map[string]string) (string, map[string]string, error) {
	if strings.TrimSpace(secret) == "" {
		return "", nil, domain.Errorf(domain.EINVALID, "Client secret is required for hubspot: %s", hubspotSecretRequired)
	}
	out, config, err := ProviderSetup(domain.KindHubSpot, secret, config)
	if err != nil && strings.HasPrefix(domain.ErrorMessage(err), "--secret") {
		err = domain.Errorf(domain.EINVALID, "Client secret must be the HubSpot app's client secret: at least 8 printable characters without surrounding spaces; %s", hubspotSecretRequired)
	}
	return out, config, err
}

const hubspotURLNote = "HubSpot signs this exact URL (X-HubSpot-Signature-v3 covers the method, URL, body and timestamp), so it must be the address HubSpot calls: when Tidemark runs behind a proxy or load balancer, start it with --public-url (or TIDEMARK_PUBLIC_URL) set to its public URL, or every delivery is refused with 401."

// hasSecrets reports whether providers of kind authenticate with secrets,
// so that rotating and retiring apply.
func hasSecrets(kind string) bool { return kind != domain.KindSalesforce }

const salesforceAuthNote = "Salesforce outbound messages carry no signature: deliveries are authenticated by the Organization Id every message carries and, when set, by the sender's network. There is no secret to copy or rotate."

// renderNewSecret shows a new provider's endpoint and secret once. The page
// must not be cached: it is the only place the plaintext ever appears.
func (s *Server) renderNewSecret(w http.ResponseWriter, r *http.Request, p domain.Provider, secret string, rotated bool) {
	endpoint := s.endpointURL(r, p.Name)
	v := views.ProviderSecretView{Name: p.Name, Kind: p.Kind, Rotated: rotated, EndpointURL: endpoint, Secret: secret,
		SecretName: "signing secret", Settings: providerSettings(p)}
	switch p.Kind {
	case domain.KindShippo:
		body := shippoSampleBody("tidemark-test", "ts_example", time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
		if shippoMode(p) == shippoAuthToken {
			v.SecretName = "token"
			v.EndpointURL = endpoint + "?token=" + url.QueryEscape(secret)
			v.Intro = "Shippo authenticates its deliveries with this token, sent back as the token query parameter of the webhook URL. Paste the whole URL below, token included, into Shippo's webhook settings."
			v.CurlHint = "Send a track_updated delivery from a shell (needs curl):"
			v.CurlExample = strings.Join([]string{
				"url=" + shellQuote(v.EndpointURL),
				"body=" + shellQuote(string(body)),
				`curl -sS -X POST "$url" -H 'Content-Type: application/json' -d "$body"`,
			}, "\n")
		} else {
			v.SecretName = "HMAC secret"
			v.Intro = "Shippo signs every delivery with this HMAC secret in the Shippo-Auth-Signature header (t=<unix seconds>,v1=<hex HMAC-SHA256 of t.body>). Paste the URL into Shippo's webhook settings and the secret as its signing secret."
			v.CurlHint = "Send a signed track_updated delivery from a shell (needs openssl and curl):"
			v.CurlExample = strings.Join([]string{
				"secret=" + shellQuote(secret),
				"url=" + shellQuote(endpoint),
				"ts=$(date +%s)",
				"body=" + shellQuote(string(body)),
				`sig=$(printf '%s.%s' "$ts" "$body" | openssl dgst -sha256 -hmac "$secret" -hex | sed 's/^.* //')`,
				`curl -sS -X POST "$url" -H "Shippo-Auth-Signature: t=$ts,v1=$sig" -H 'Content-Type: application/json' -d "$body"`,
			}, "\n")
		}
	case domain.KindHubSpot:
		// The operator pasted the client secret from HubSpot: it is stored,
		// never shown back.
		v.Secret, v.SecretName = "", "client secret"
		v.SecretStored = "The client secret you pasted is stored encrypted; Tidemark does not show it. HubSpot keeps it under your app's Settings → Auth."
		v.URLNote = hubspotURLNote
		v.Intro = "HubSpot signs every delivery with your app's client secret (X-HubSpot-Signature-v3). Paste the URL below into your HubSpot app's webhook settings as the target URL."
		if p.Config["allow_v1"] == "true" {
			v.Intro += " Legacy v1 signatures are accepted too; they carry no timestamp, so they have no replay protection."
		}
	case domain.KindSalesforce:
		v.Intro = salesforceAuthNote + " Paste the URL into the outbound message's Endpoint URL."
		body := salesforceSampleBody(p.Config["org_id"], "04l000000000000AAA", time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
		v.CurlHint = "Send a one-notification outbound message from a shell (needs curl); the answer is the SOAP acknowledgement:"
		v.CurlExample = strings.Join([]string{
			"url=" + shellQuote(endpoint),
			"body=" + shellQuote(string(body)),
			`curl -sS -X POST "$url" -H 'Content-Type: text/xml; charset=utf-8' -H 'SOAPAction: ""' -d "$body"`,
		}, "\n")
	default:
		v.Intro = "Give the provider this endpoint URL and signing secret (" + p.Kind + ", Standard Webhooks signatures)."
		v.CurlHint = "Send a signed contact.snapshot delivery from a shell (needs openssl, curl and od):"
		v.CurlExample = standardCurlExample(endpoint, secret)
		v.SendExample = "tidemark send --url " + shellWord(endpoint) + " --secret " + shellWord(secret)
	}
	title := "Provider connected"
	if rotated {
		title = "New " + v.SecretName
	}
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, r, http.StatusOK, views.ProviderSecret(s.layout(r, title, "providers"), v))
}

func (s *Server) endpointURL(r *http.Request, provider string) string {
	return s.baseURL(r) + "/webhooks/" + currentTenant(r.Context()).Slug + "/" + provider
}

// standardCurlExample is a shell snippet that signs one delivery per
// Standard Webhooks with openssl and posts it with curl.
func standardCurlExample(endpoint, secret string) string {
	body := `{"type":"contact.snapshot","data":{"contact_id":"c-1001","revision":1,"snapshot":{"job_title":"Director"}}}`
	return strings.Join([]string{
		"secret=" + shellQuote(strings.TrimPrefix(secret, "whsec_")),
		"url=" + shellQuote(endpoint),
		"id=msg_$(date +%s); ts=$(date +%s)",
		"body=" + shellQuote(body),
		`sig=$(printf '%s.%s.%s' "$id" "$ts" "$body" | openssl dgst -sha256 -mac HMAC -macopt hexkey:$(printf '%s' "$secret" | base64 -d | od -An -tx1 | tr -d ' \n') -binary | base64)`,
		`curl -sS -X POST "$url" -H "webhook-id: $id" -H "webhook-timestamp: $ts" -H "webhook-signature: v1,$sig" -H 'Content-Type: application/json' -d "$body"`,
	}, "\n")
}

// shellQuote quotes s as one shell word. The endpoint comes from the
// request's Host header, so it is quoted rather than trusted.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellWord leaves s bare when the shell would read it as is.
func shellWord(s string) string {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_-./:@%+=,", c)) {
			return shellQuote(s)
		}
	}
	return s
}

// currentProvider loads the {name} provider of the current tenant; it
// writes the error page and returns false when there is none.
func (s *Server) currentProvider(w http.ResponseWriter, r *http.Request) (domain.ProviderSummary, bool) {
	p, err := s.providers.ProviderSummary(r.Context(), currentTenant(r.Context()).ID, chi.URLParam(r, "name"))
	if err != nil {
		s.consoleError(w, r, err)
		return p, false
	}
	return p, true
}

func (s *Server) handleProvider(w http.ResponseWriter, r *http.Request) {
	p, ok := s.currentProvider(w, r)
	if !ok {
		return
	}
	s.renderProvider(w, r, http.StatusOK, p, views.ScopeForm{})
}

// renderProvider shows a provider's page. A refused scope form, when given,
// is shown as submitted in place of the stored scope (or of the empty "add"
// form) with its message.
func (s *Server) renderProvider(w http.ResponseWriter, r *http.Request, status int, p domain.ProviderSummary, refusedScope views.ScopeForm) {
	ctx, tenantID := r.Context(), currentTenant(r.Context()).ID
	secrets, err := s.providers.ProviderSecrets(ctx, tenantID, p.ID)
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	deliveries, err := s.providers.ProviderDeliveries(ctx, tenantID, p.ID, providerDeliveriesShown)
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	scopes, err := s.providers.ProviderScopes(ctx, tenantID, p.ID)
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	_, canSign := receivers[p.Kind]
	v := views.ProviderView{Provider: p, EndpointURL: s.endpointURL(r, p.Name), Secrets: secrets, Deliveries: deliveries,
		CanSign: canSign, HasSecrets: hasSecrets(p.Kind), Settings: providerSettings(p.Provider),
		NewScope: views.ScopeForm{New: true, TTLValue: "7", TTLUnit: "days", IdentifierRule: "event_id", Enabled: true}}
	switch p.Kind {
	case domain.KindShippo:
		v.TestHint = "Sends a track_updated event (shipment tidemark:tidemark-test) authenticated with the newest secret."
		if shippoMode(p.Provider) == shippoAuthToken {
			v.EndpointURL += "?token=…"
			v.URLNote = "Shippo sends the token back as the token query parameter: the URL to paste ends in ?token= and the token, which was shown once when it was created. Tidemark cannot show it again; rotate to get a new one."
		}
	case domain.KindHubSpot:
		v.URLNote = hubspotURLNote
		v.RotateNeedsSecret = true
		v.TestHint = "Sends a one-event batch (contact.propertyChange of tidemark_test on contact 1) signed v3 with the newest client secret over the URL above."
	case domain.KindSalesforce:
		v.AuthNote = salesforceAuthNote
		v.TestHint = "Sends a one-notification outbound message for Contact tidemark-test with the configured Organization Id and a SystemModstamp of now; with allowed networks set, it comes from the first one."
	default:
		v.TestHint = "Signs a contact.snapshot event (contact tidemark-test) with the newest secret."
	}
	for _, sc := range scopes {
		f := scopeForm(sc)
		if refusedScope.Error != "" && !refusedScope.New && sc.ScopeName == (domain.ScopeName{ObjectType: refusedScope.ObjectType, Action: refusedScope.Action}) {
			f = refusedScope
		}
		v.Scopes = append(v.Scopes, f)
	}
	if refusedScope.New {
		v.NewScope = refusedScope
	}
	s.render(w, r, status, views.Provider(s.layout(r, p.Name, "providers"), v))
}

// scopeForm shows a stored scope's TTL in days when it is whole days.
func scopeForm(sc domain.Scope) views.ScopeForm {
	f := views.ScopeForm{ObjectType: sc.ObjectType, Action: sc.Action, IdentifierRule: sc.IdentifierRule.String(), Enabled: sc.Enabled}
	day := 24 * time.Hour
	if sc.TTL%day == 0 {
		f.TTLValue, f.TTLUnit = strconv.FormatInt(int64(sc.TTL/day), 10), "days"
	} else {
		f.TTLValue, f.TTLUnit = strconv.FormatFloat(sc.TTL.Hours(), 'f', -1, 64), "hours"
	}
	return f
}

// parseScopeForm reads a submitted scope; every refusal is EINVALID with a
// message for the form.
func parseScopeForm(f views.ScopeForm) (domain.Scope, error) {
	sc := domain.Scope{ScopeName: domain.ScopeName{ObjectType: f.ObjectType, Action: f.Action}, Enabled: f.Enabled}
	if err := domain.ValidateScopeName(sc.ScopeName); err != nil {
		return sc, err
	}
	n, err := strconv.ParseFloat(f.TTLValue, 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) || n <= 0 {
		return sc, domain.Errorf(domain.EINVALID, "TTL must be a positive number of hours or days, got %q", f.TTLValue)
	}
	unit := map[string]time.Duration{"hours": time.Hour, "days": 24 * time.Hour}[f.TTLUnit]
	if unit == 0 {
		return sc, domain.Errorf(domain.EINVALID, "TTL unit must be hours or days")
	}
	if n*float64(unit) > float64(10*domain.MaxTTL) {
		n = float64(10*domain.MaxTTL) / float64(unit) // beyond any bound, without overflowing a Duration
	}
	sc.TTL = time.Duration(n * float64(unit)).Round(time.Second)
	if err := domain.ValidateTTL(sc.TTL); err != nil {
		return sc, err
	}
	sc.IdentifierRule, err = domain.ParseIdentifierRule(f.IdentifierRule)
	return sc, err
}

func (s *Server) handleSaveScope(w http.ResponseWriter, r *http.Request) {
	p, ok := s.currentProvider(w, r)
	if !ok {
		return
	}
	f := views.ScopeForm{
		ObjectType:     strings.TrimSpace(r.PostFormValue("object_type")),
		Action:         strings.TrimSpace(r.PostFormValue("action")),
		TTLValue:       strings.TrimSpace(r.PostFormValue("ttl")),
		TTLUnit:        r.PostFormValue("ttl_unit"),
		IdentifierRule: strings.TrimSpace(r.PostFormValue("identifier_rule")),
		Enabled:        r.PostFormValue("enabled") != "",
		New:            r.PostFormValue("new") != "",
	}
	sc, err := parseScopeForm(f)
	if err == nil {
		err = s.providers.SaveProviderScope(r.Context(), currentTenant(r.Context()).ID, p.ID, sc)
	}
	if formRefusal(err) {
		f.Error = domain.ErrorMessage(err)
		s.renderProvider(w, r, http.StatusUnprocessableEntity, p, f)
		return
	}
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	state := "enabled"
	if !sc.Enabled {
		state = "disabled"
	}
	saved := scopeForm(sc)
	s.redirectWithFlash(w, r, s.providerURL(r, p.Name), "ok", fmt.Sprintf("Saved scope %s: TTL %s %s, identifier %s, %s.",
		sc.ScopeName, saved.TTLValue, saved.TTLUnit, sc.IdentifierRule, state))
}

func (s *Server) providerURL(r *http.Request, name string) string {
	return "/t/" + currentTenant(r.Context()).Slug + "/providers/" + name
}

// signable refuses secret actions on kinds without a receiver, whose
// secrets are not Standard Webhooks secrets.
func (s *Server) signable(w http.ResponseWriter, r *http.Request, p domain.ProviderSummary) bool {
	if _, ok := receivers[p.Kind]; ok {
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
	if !hasSecrets(p.Kind) {
		s.redirectWithFlash(w, r, s.providerURL(r, p.Name), "error",
			fmt.Sprintf("%s providers have no secret to rotate: they are authenticated by Organization Id and, optionally, network.", p.Kind))
		return
	}
	var (
		secret string
		err    error
	)
	if p.Kind == domain.KindHubSpot {
		// HubSpot issues the new client secret; the operator pastes it.
		secret, _, err = hubspotConsoleSetup(r.PostFormValue("new_secret"), p.Config)
		if err != nil {
			s.redirectWithFlash(w, r, s.providerURL(r, p.Name), "error", "Cannot rotate: "+domain.ErrorMessage(err))
			return
		}
	} else {
		secret, err = NewProviderSecret(p.Provider)
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

// consoleTestContact is the contact a console test event writes.
const consoleTestContact = "tidemark-test"

// handleTestEvent sends a sample delivery of the provider's kind, signed
// (or otherwise authenticated) as the provider would, through the real
// receiver in-process, so everything a provider's delivery goes through
// (authentication, parsing, ingest, the delivery log) is exercised; the
// answer is shown as a flash.
func (s *Server) handleTestEvent(w http.ResponseWriter, r *http.Request) {
	p, ok := s.currentProvider(w, r)
	if !ok || !s.signable(w, r, p) {
		return
	}
	t := currentTenant(r.Context())
	var secret string
	if hasSecrets(p.Kind) {
		var err error
		secret, err = s.providers.NewestProviderSecret(r.Context(), t.ID, p.ID)
		if domain.ErrorCode(err) == domain.ENOTFOUND {
			s.redirectWithFlash(w, r, s.providerURL(r, p.Name), "error", "The provider has no active secret to sign with: rotate to create one.")
			return
		}
		if err != nil {
			s.consoleError(w, r, err)
			return
		}
	}
	now := s.now()
	d := inProcessDelivery{tenant: t.Slug, provider: p.Name, headers: map[string]string{}}
	var sfEventID string
	switch p.Kind {
	case domain.KindShippo:
		d.body = shippoSampleBody(consoleTestContact, "console-test-"+uuid.NewString(), now)
		if shippoMode(p.Provider) == shippoAuthToken {
			d.query = "token=" + url.QueryEscape(secret)
		} else {
			d.headers["Shippo-Auth-Signature"] = SignShippo(secret, now.Unix(), d.body)
		}
	case domain.KindSalesforce:
		noteID := "console-test-" + uuid.NewString()
		org := p.Config["org_id"]
		d.body = salesforceSampleBody(org, noteID, now)
		d.contentType = "text/xml; charset=utf-8"
		d.headers["SOAPAction"] = `""`
		sfEventID = org + ":" + noteID
		if nets, err := parseNetworks(p.Config["allowed_networks"]); err == nil && len(nets) > 0 {
			d.remoteAddr = net.JoinHostPort(nets[0].Addr().String(), "443")
		}
	case domain.KindHubSpot:
		d.body = hubspotSampleBody(rand.Int64N(1<<53-1)+1, now)
		// The receiver checks the signature over the public URL, which it
		// derives from the request as for this console request.
		d.host, d.tls = r.Host, r.TLS
		ts := strconv.FormatInt(now.UnixMilli(), 10)
		uri := s.baseURL(r) + "/webhooks/" + t.Slug + "/" + p.Name
		d.headers["X-HubSpot-Signature-v3"] = SignHubSpotV3(secret, http.MethodPost, uri, d.body, ts)
		d.headers["X-HubSpot-Request-Timestamp"] = ts
	default:
		d.body, _ = json.Marshal(map[string]any{
			"type": "contact.snapshot", "timestamp": now.UTC().Format(time.RFC3339),
			"data": map[string]any{"contact_id": consoleTestContact, "revision": now.UnixMilli(),
				"snapshot": map[string]any{"note": "test event from the Tidemark console", "sent_at": now.UTC().Format(time.RFC3339)}},
		})
		id := "console-test-" + uuid.NewString()
		sig, err := SignStandard(secret, id, now.Unix(), d.body)
		if err != nil {
			s.consoleError(w, r, fmt.Errorf("sign test event: %w", err))
			return
		}
		d.headers["webhook-id"], d.headers["webhook-timestamp"], d.headers["webhook-signature"] = id, strconv.FormatInt(now.Unix(), 10), sig
	}
	status, answer := s.deliverInProcess(r.Context(), d)

	kind, msg := "ok", fmt.Sprintf("Test event answered %d %s", status, http.StatusText(status))
	var parsed struct {
		Results []struct {
			Outcome string `json:"outcome"`
		} `json:"results"`
	}
	switch {
	case p.Kind == domain.KindSalesforce && status == http.StatusOK:
		// The answer is the SOAP acknowledgement; the outcome is in the log.
		if bytes.Contains(answer, []byte("<Ack>true</Ack>")) {
			msg += ", Ack true"
		}
		o, err := s.events.EventOutcome(r.Context(), t.ID, p.ID, sfEventID, now.Add(-time.Minute))
		if err == nil {
			msg += ", outcome " + string(o)
		} else {
			s.log.Warn("test event outcome not found", "tenant", t.Slug, "provider", p.Name, "err", err)
		}
	case json.Unmarshal(answer, &parsed) == nil && len(parsed.Results) == 1:
		msg += ", outcome " + parsed.Results[0].Outcome
	}
	if status != http.StatusOK {
		kind = "error"
	}
	s.redirectWithFlash(w, r, s.providerURL(r, p.Name), kind, msg+": "+string(bytes.TrimSpace(answer)))
}

// shippoSampleBody is a track_updated delivery in the shape of Shippo's
// (web/testdata/shippo/track_updated_transit.json), for tracking number
// number with tracking status statusID dated at.
func shippoSampleBody(number, statusID string, at time.Time) []byte {
	date := at.UTC().Format(time.RFC3339Nano)
	status := map[string]any{
		"object_id": statusID, "object_created": date, "object_updated": date,
		"status": "TRANSIT", "status_details": "Test event from the Tidemark console.", "status_date": date,
		"substatus": nil, "location": map[string]any{"city": "San Francisco", "state": "CA", "zip": "94103", "country": "US"},
	}
	body, _ := json.Marshal(map[string]any{
		"event": "track_updated", "test": false,
		"data": map[string]any{
			"carrier": "tidemark", "tracking_number": number, "transaction": nil, "metadata": "Tidemark console test",
			"eta": nil, "original_eta": nil, "servicelevel": map[string]any{"token": "test", "name": "Test"},
			"tracking_status": status, "tracking_history": []any{status}, "messages": []any{},
		},
	})
	return body
}

// salesforceSampleBody is an outbound message with one notification (id
// noteID) for Contact tidemark-test of organization org, modified at.
func salesforceSampleBody(org, noteID string, at time.Time) []byte {
	var b bytes.Buffer
	esc := func(s string) string {
		var e bytes.Buffer
		xml.EscapeText(&e, []byte(s))
		return e.String()
	}
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">`)
	b.WriteString(`<soapenv:Body><notifications xmlns="http://soap.sforce.com/2005/09/outbound">`)
	b.WriteString(`<OrganizationId>` + esc(org) + `</OrganizationId>`)
	b.WriteString(`<Notification><Id>` + esc(noteID) + `</Id>`)
	b.WriteString(`<sObject xsi:type="sf:Contact" xmlns:sf="urn:sobject.enterprise.soap.sforce.com">`)
	b.WriteString(`<sf:Id>` + consoleTestContact + `</sf:Id>`)
	b.WriteString(`<sf:LastName>Tidemark test</sf:LastName>`)
	b.WriteString(`<sf:SystemModstamp>` + at.UTC().Format("2006-01-02T15:04:05.000Z") + `</sf:SystemModstamp>`)
	b.WriteString(`</sObject></Notification></notifications></soapenv:Body></soapenv:Envelope>`)
	return b.Bytes()
}

// hubspotSampleBody is a one-event batch in the shape of HubSpot's
// (web/testdata/hubspot/batch_contact.json): property tidemark_test of
// contact 1 changed to the time at.
func hubspotSampleBody(eventID int64, at time.Time) []byte {
	body, _ := json.Marshal([]map[string]any{{
		"eventId": eventID, "subscriptionId": 1, "portalId": 1, "occurredAt": at.UnixMilli(),
		"subscriptionType": "contact.propertyChange", "attemptNumber": 0, "objectId": 1,
		"propertyName": "tidemark_test", "propertyValue": at.UTC().Format(time.RFC3339Nano), "changeSource": "TIDEMARK_CONSOLE",
	}})
	return body
}

// inProcessDelivery is a delivery handed to the webhook handler directly.
type inProcessDelivery struct {
	tenant, provider string
	query            string // the URL's query, without "?"
	contentType      string // application/json when empty
	remoteAddr       string
	host             string               // the Host the delivery was sent to; empty for none
	tls              *tls.ConnectionState // non-nil when sent over HTTPS
	headers          map[string]string
	body             []byte
}

// deliverInProcess hands a delivery to the webhook handler as the router
// would, and returns its status and body.
func (s *Server) deliverInProcess(ctx context.Context, d inProcessDelivery) (int, []byte) {
	rctx := chi.NewRouteContext()
	rctx.URLParams.Add("tenant", d.tenant)
	rctx.URLParams.Add("provider", d.provider)
	target := "/webhooks/" + d.tenant + "/" + d.provider
	if d.query != "" {
		target += "?" + d.query
	}
	req, _ := http.NewRequestWithContext(context.WithValue(ctx, chi.RouteCtxKey, rctx), http.MethodPost, target, bytes.NewReader(d.body))
	req.RemoteAddr = d.remoteAddr
	req.Host, req.TLS = d.host, d.tls
	if d.contentType == "" {
		d.contentType = "application/json"
	}
	req.Header.Set("Content-Type", d.contentType)
	for k, v := range d.headers {
		req.Header.Set(k, v)
	}
	rec := &capturedResponse{header: http.Header{}, status: http.StatusOK}
	s.handleWebhook(rec, req)
	return rec.status, rec.body.Bytes()
}

// capturedResponse keeps what a handler wrote.
type capturedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
}

func (c *capturedResponse) Header() http.Header { return c.header }

func (c *capturedResponse) WriteHeader(status int) {
	if !c.wrote {
		c.status, c.wrote = status, true
	}
}

func (c *capturedResponse) Write(b []byte) (int, error) {
	c.wrote = true
	return c.body.Write(b)
}

func (s *Server) handleTokens(w http.ResponseWriter, r *http.Request) {
	s.renderTokens(w, r, http.StatusOK, views.TokensView{})
}

func (s *Server) renderTokens(w http.ResponseWriter, r *http.Request, status int, v views.TokensView) {
	tokens, err := s.tokens.APITokens(r.Context(), currentTenant(r.Context()).ID)
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	v.Tokens = tokens
	s.render(w, r, status, views.Tokens(s.layout(r, "API tokens", "tokens"), v))
}

// handleCreateToken creates a token and answers with it, once: only its
// hash is stored.
func (s *Server) handleCreateToken(w http.ResponseWriter, r *http.Request) {
	t := currentTenant(r.Context())
	name := strings.TrimSpace(r.PostFormValue("name"))
	token, err := s.tokens.CreateAPIToken(r.Context(), t.ID, name)
	if formRefusal(err) {
		s.renderTokens(w, r, http.StatusUnprocessableEntity, views.TokensView{Form: views.TokenForm{Name: name, Error: domain.ErrorMessage(err)}})
		return
	}
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	s.log.Info("API token created", "tenant", t.Slug, "name", name, "by", currentUser(r.Context()).Email)
	example := "curl -sS -H " + shellQuote("Authorization: Bearer "+token) + " " + shellWord(s.baseURL(r)+"/api/v1/tenants/"+t.Slug+"/stats")
	w.Header().Set("Cache-Control", "no-store")
	s.renderTokens(w, r, http.StatusOK, views.TokensView{Created: views.NewToken{Name: name, Token: token, APIExample: example}})
}

func (s *Server) handleRevokeToken(w http.ResponseWriter, r *http.Request) {
	t := currentTenant(r.Context())
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		s.consoleError(w, r, domain.Errorf(domain.ENOTFOUND, "API token not found"))
		return
	}
	if err := s.tokens.RevokeAPIToken(r.Context(), t.ID, id); err != nil {
		s.consoleError(w, r, err)
		return
	}
	s.log.Info("API token revoked", "tenant", t.Slug, "id", id, "by", currentUser(r.Context()).Email)
	s.redirectWithFlash(w, r, "/t/"+t.Slug+"/tokens", "ok", "Token revoked: API calls with it are refused from now on.")
}
