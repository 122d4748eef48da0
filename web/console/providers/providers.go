package providers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/httpx"
)

// providerDeliveriesShown is how many deliveries a provider page lists.
const providerDeliveriesShown = 25

// HandleProviders lists the tenant's providers with the connect form: a
// choice of kinds, or with ?kind=NAME that kind's form.
func (h Pages) HandleProviders(w http.ResponseWriter, r *http.Request) {
	kind, status, kindError := r.URL.Query().Get("kind"), http.StatusOK, ""
	if _, ok := provider.Lookup(kind); kind != "" && !ok {
		status, kindError = http.StatusBadRequest, fmt.Sprintf("There is no provider kind %q: choose one below.", kind)
		kind = ""
	}
	h.renderProviders(w, r, status, views.ProvidersView{Form: views.ProviderForm{Kind: kind}, KindError: kindError})
}

// renderProviders shows the providers page with v's connect form: the
// chosen kind's fields with the values entered, or the choice of kinds.
func (h Pages) renderProviders(w http.ResponseWriter, r *http.Request, status int, v views.ProvidersView) {
	ps, err := h.Store.ProviderSummaries(r.Context(), h.tenant(r).ID)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	v.Providers = ps
	if v.Reconnect, err = h.reconnects(r, 0); err != nil {
		h.Console.Error(w, r, err)
		return
	}
	if domain.CheckRole(h.Console.Membership(r).Role, domain.RoleOwner) == nil {
		apps, err := h.Store.Apps(r.Context())
		if err != nil {
			h.Console.Error(w, r, err)
			return
		}
		for _, a := range apps {
			if a.Kind == domain.AppKindHubSpot {
				v.Apps = append(v.Apps, a.Name)
			}
		}
	}
	for _, name := range provider.Names() {
		k, _ := provider.Lookup(name)
		f := k.Form()
		v.Kinds = append(v.Kinds, kindChoice(name, f))
		if name == v.Form.Kind {
			v.Fieldset = connectFieldset(name, f, v.Form.Values)
		}
	}
	h.Console.Render(w, r, status, views.Providers(h.Console.Layout(r, "Providers", "providers"), v))
}

// kindChoice is a kind as the choice step shows it; a kind without a
// title is named by its section's legend.
func kindChoice(name string, f provider.Form) views.ProviderKind {
	title := f.Title
	if title == "" {
		title = strings.TrimPrefix(f.Legend, "For ")
	}
	if title == "" {
		title = name
	}
	return views.ProviderKind{Name: name, Title: title, About: f.About}
}

// connectFieldset is a kind's section of the connect form with the values
// entered; a secret is never shown again, even in a refused form.
func connectFieldset(kind string, f provider.Form, values map[string]string) views.ProviderFieldset {
	fs := views.ProviderFieldset{Kind: kind, Legend: f.Legend}
	for _, field := range f.Fields {
		in := views.ProviderField{Name: field.Name, Label: field.Label, Input: field.Input, Placeholder: field.Placeholder,
			MinLength: field.MinLength, MaxLength: field.MaxLength, Hint: field.Hint, HintID: field.HintID}
		if field.Caption != "" {
			in.Label = field.Caption
		}
		if !field.Secret {
			in.Value = values[field.Name]
		}
		for _, o := range field.Options {
			in.Options = append(in.Options, views.ProviderFieldOption{Value: o.Value, Label: o.Label})
		}
		fs.Fields = append(fs.Fields, in)
	}
	return fs
}

// connectValue reads one connect-form field as the kind's setup takes it:
// text settings trimmed, a checkbox as "true" or "false", a secret as typed.
func connectValue(r *http.Request, f provider.Field) string {
	v := r.PostFormValue(f.Name)
	switch {
	case f.Input == "checkbox":
		return strconv.FormatBool(v == "true")
	case f.Input == "text" && !f.Secret:
		return strings.TrimSpace(v)
	}
	return v
}

// consoleSetup checks and completes a provider of kind entered in the
// console from the kind's fields of the connect form. A field the provider
// issues (such as HubSpot's client secret) is required rather than
// generated.
func consoleSetup(k provider.Kind, secret string, config map[string]string) (string, map[string]string, error) {
	for _, f := range k.Form().Fields {
		if f.Secret && f.Required && strings.TrimSpace(secret) == "" {
			return "", nil, domain.Errorf(domain.EINVALID, "%s is required for %s: %s", f.Label, k.Name(), f.RequiredHint)
		}
	}
	return k.Setup(secret, config)
}

// formMessage is a refusal as the console shows it: a setup refusal names
// its field by the form's label.
func formMessage(err error) string {
	var fe *provider.FieldError
	if errors.As(err, &fe) {
		return fe.FormMessage
	}
	return domain.ErrorMessage(err)
}

// HandleConnectProvider creates a provider and answers with its endpoint
// and secret, which exists in plaintext only in this response. What the kind
// needs is checked and completed by its Setup; only the fields of the
// chosen kind are read, and a refused form shows that kind's form again
// with what was entered.
func (h Pages) HandleConnectProvider(w http.ResponseWriter, r *http.Request) {
	t := h.tenant(r)
	form := views.ProviderForm{
		Name:   strings.TrimSpace(r.PostFormValue("name")),
		Kind:   r.PostFormValue("kind"),
		Values: map[string]string{},
	}
	for _, name := range provider.Names() {
		k, _ := provider.Lookup(name)
		for _, f := range k.Form().Fields {
			if !f.Secret {
				form.Values[f.Name] = connectValue(r, f)
			}
		}
	}
	var (
		k      provider.Kind
		secret string
		config map[string]string
	)
	err := domain.ValidateSlug("provider", form.Name)
	if err == nil {
		if k, err = provider.Get(form.Kind); err == nil {
			in, inSecret := map[string]string{}, ""
			for _, f := range k.Form().Fields {
				if f.Secret {
					inSecret = connectValue(r, f)
				} else {
					in[f.Config] = connectValue(r, f)
				}
			}
			secret, config, err = consoleSetup(k, inSecret, in)
		}
	}
	var p domain.Provider
	if err == nil {
		p, err = h.Store.ConnectProvider(r.Context(), t.ID, form.Name, form.Kind, secret, config)
	}
	if formRefusal(err) {
		form.Error = formMessage(err)
		if _, known := provider.Lookup(form.Kind); !known {
			form.Kind = "" // back to the choice of kinds
		}
		h.renderProviders(w, r, http.StatusUnprocessableEntity, views.ProvidersView{Form: form, KindError: form.Error})
		return
	}
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Log.InfoContext(r.Context(), "provider connected", "tenant", t.Slug, "provider", p.Name, "kind", p.Kind, "by", by(r))
	h.renderNewSecret(w, r, p, k, secret, false)
}

// providerSettings lists a provider's kind-specific settings for display.
func providerSettings(k provider.Kind, config map[string]string) []views.ProviderSetting {
	var out []views.ProviderSetting
	for _, st := range k.Settings(config) {
		out = append(out, views.ProviderSetting{Label: st.Label, Value: st.Value})
	}
	return out
}

// providerLimits lists a provider's limits for display, beside its
// settings; `tidemark provider update` changes them.
func providerLimits(p domain.Provider) []views.ProviderSetting {
	body := domain.FormatByteSize(provider.MaxBody(p))
	if p.MaxBody == 0 {
		body += " (the kind's default)"
	}
	return []views.ProviderSetting{{Label: "Body limit", Value: body},
		{Label: "Future skew allowed", Value: p.MaxFutureSkew.String()}}
}

func (h Pages) endpointURL(r *http.Request, provider string) string {
	return httpx.BaseURL(h.PublicURL, r) + "/webhooks/" + h.tenant(r).Slug + "/" + provider
}

// currentProvider loads the {name} provider of the current tenant and its
// kind; it writes the error page and returns false when there is none. A
// kind this build does not know can only come from a newer version that
// wrote the row, so it is an internal error, not a page to improvise.
func (h Pages) currentProvider(w http.ResponseWriter, r *http.Request) (domain.ProviderSummary, provider.Kind, bool) {
	p, err := h.Store.ProviderSummary(r.Context(), h.tenant(r).ID, chi.URLParam(r, "name"))
	if err != nil {
		h.Console.Error(w, r, err)
		return p, nil, false
	}
	k, ok := provider.Lookup(p.Kind)
	if !ok {
		h.Console.Error(w, r, fmt.Errorf("provider %s has kind %q, which this version of Tidemark does not know", p.Name, p.Kind))
		return p, nil, false
	}
	return p, k, true
}

// HandleProvider shows one provider's page.
func (h Pages) HandleProvider(w http.ResponseWriter, r *http.Request) {
	p, k, ok := h.currentProvider(w, r)
	if !ok {
		return
	}
	h.renderProvider(w, r, http.StatusOK, p, k, refusedForm{})
}

// refusedForm is a form of the provider page just refused, shown as
// submitted with its message in place of the stored values.
type refusedForm struct {
	scope views.ScopeForm
	api   *views.APICredentialsForm
}

// renderProvider shows a provider's page. A refused scope form, when given,
// is shown as submitted in place of the stored scope (or of the empty "add"
// form) with its message; a refused API credentials form likewise.
func (h Pages) renderProvider(w http.ResponseWriter, r *http.Request, status int, p domain.ProviderSummary, k provider.Kind, refused refusedForm) {
	refusedScope := refused.scope
	ctx, tenantID := r.Context(), h.tenant(r).ID
	secrets, err := h.Store.ProviderSecrets(ctx, tenantID, p.ID)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	deliveries, err := h.Store.ProviderDeliveries(ctx, tenantID, p.ID, providerDeliveriesShown)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	scopes, err := h.Store.ProviderScopes(ctx, tenantID, p.ID)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	backfill, err := h.backfillSection(r, p, scopes)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	page := k.ProviderPage(p.Config)
	v := views.ProviderView{Provider: p, EndpointURL: h.endpointURL(r, p.Name) + page.EndpointSuffix, Secrets: secrets,
		Deliveries: deliveries, HasSecrets: k.HasSecrets(), Settings: append(providerSettings(k, p.Config), providerLimits(p.Provider)...),
		URLNote: page.URLNote, AuthNote: page.AuthNote, TestHint: page.TestHint,
		NewScope: views.ScopeForm{New: true, TTLValue: "7", TTLUnit: "days", IdentifierRule: "event_id", Enabled: true},
		Backfill: backfill}
	if f, ok := pastedSecret(k); ok {
		v.RotatePasted = &views.PastedSecret{Label: "New " + strings.ToLower(f.Label[:1]) + f.Label[1:],
			Hint: strings.ToUpper(f.RequiredHint[:1]) + f.RequiredHint[1:]}
	}
	if v.Reconnect, err = h.reconnects(r, p.ID); err != nil {
		h.Console.Error(w, r, err)
		return
	}
	if v.API, err = h.apiCredentialsView(r, p, refused.api); err != nil {
		h.Console.Error(w, r, err)
		return
	}
	if v.CDC, err = h.cdcView(r, p); err != nil {
		h.Console.Error(w, r, err)
		return
	}
	// Only owners see secrets, an issued one included.
	if k.HasSecrets() && h.Console.Membership(r).Role.Allows(domain.RoleOwner) {
		if v.Issued, err = h.issuedSecret(r, p, k); err != nil {
			h.Console.Error(w, r, err)
			return
		}
		if v.Issued != nil {
			w.Header().Set("Cache-Control", "no-store") // the page holds a secret's plaintext
		}
	}
	saved := r.URL.Query().Get("saved") // the scope just saved, to mark
	for _, sc := range scopes {
		f := scopeForm(sc)
		f.Saved = saved == sc.ScopeName.String()
		if refusedScope.Error != "" && !refusedScope.New && sc.ScopeName == (domain.ScopeName{ObjectType: refusedScope.ObjectType, Action: refusedScope.Action}) {
			f = refusedScope
		}
		v.Scopes = append(v.Scopes, f)
	}
	if refusedScope.New {
		v.NewScope = refusedScope
	}
	h.Console.Render(w, r, status, views.Provider(h.Console.Layout(r, p.Name, "providers"), v))
}

func (h Pages) providerURL(r *http.Request, name string) string {
	return "/t/" + h.tenant(r).Slug + "/providers/" + name
}
