// Package sso is the console's side of single sign-on, an OpenID Connect
// relying party: the identity provider found by discovery, the
// authorization code flow with PKCE, state and nonce, and the ID token
// verified (signature by the provider's keys, refetched when it rotates
// them; issuer, audience, expiry, nonce) into an identity.SSOIdentity.
package sso

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/identity"
	"github.com/tidemark/tidemark/internal/egress"
)

// callTimeout bounds each call to the identity provider.
const callTimeout = 15 * time.Second

// discoveryTTL is how long a provider's discovery document is reused; its
// keys are refetched sooner, whenever a token names a key it lacks.
const discoveryTTL = time.Hour

// DefaultScopes are asked for unless the setup names others.
var DefaultScopes = []string{oidc.ScopeOpenID, "email", "profile"}

// Flow is one sign-in under way, kept in the browser's session between
// the redirect to the provider and its answer: only that browser can
// finish it, once.
type Flow struct {
	State    string    `json:"state"`
	Nonce    string    `json:"nonce"`
	Verifier string    `json:"verifier"`
	Next     string    `json:"next"`
	Silent   bool      `json:"silent"` // prompt=none: the provider answers without asking
	Started  time.Time `json:"started"`
}

// FlowLifetime is how long a sign-in may take at the provider.
const FlowLifetime = 10 * time.Minute

// NewFlow starts a sign-in that returns to next.
func NewFlow(next string, silent bool, now time.Time) Flow {
	return Flow{State: rand.Text(), Nonce: rand.Text(), Verifier: oauth2.GenerateVerifier(), Next: next,
		Silent: silent, Started: now}
}

// Provider is the identity provider's setup as the relying party uses it.
type Provider struct {
	Config       identity.SSOConfig
	ClientSecret string
	RedirectURL  string // the console's callback
}

// RP is the relying party: it keeps each provider's discovery, per issuer.
type RP struct {
	mu     sync.Mutex
	byKey  map[string]*discovered
	now    func() time.Time
	public *http.Client // refuses private addresses
	any    *http.Client // a provider an operator allowed at a private address
}

type discovered struct {
	provider *oidc.Provider
	at       time.Time
}

// NewRP returns a relying party; now nil means time.Now.
func NewRP(now func() time.Time) *RP {
	if now == nil {
		now = time.Now
	}
	return &RP{byKey: map[string]*discovered{}, now: now,
		public: egress.NewClient(false, callTimeout), any: egress.NewClient(true, callTimeout)}
}

func (rp *RP) client(allowPrivate bool) *http.Client {
	if allowPrivate {
		return rp.any
	}
	return rp.public
}

// Discover reads the issuer's discovery document, refusing private
// addresses unless allowPrivate, and checks that it names the issuer.
func Discover(ctx context.Context, issuer string, allowPrivate bool) error {
	if _, err := egress.CheckURL(ctx, issuer, allowPrivate); err != nil {
		return domain.Errorf(domain.EINVALID, "issuer: %v", err)
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, egress.NewClient(allowPrivate, callTimeout)), callTimeout)
	defer cancel()
	if _, err := oidc.NewProvider(ctx, issuer); err != nil {
		return domain.Errorf(domain.EINVALID, "issuer %s: discovery: %v", issuer, err)
	}
	return nil
}

// provider returns the discovered provider of c, discovering it again
// after discoveryTTL or when the setup changed.
func (rp *RP) provider(ctx context.Context, c identity.SSOConfig) (*oidc.Provider, error) {
	key := fmt.Sprintf("%s\x00%t", c.Issuer, c.AllowPrivate)
	rp.mu.Lock()
	d := rp.byKey[key]
	rp.mu.Unlock()
	if d != nil && rp.now().Sub(d.at) < discoveryTTL {
		return d.provider, nil
	}
	// The provider keeps the context's client for its key set, fetched
	// later with no deadline of this request's.
	dctx, cancel := context.WithTimeout(oidc.ClientContext(context.WithoutCancel(ctx), rp.client(c.AllowPrivate)), callTimeout)
	defer cancel()
	p, err := oidc.NewProvider(dctx, c.Issuer)
	if err != nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "%s could not be reached: %v", c.Name, err)
	}
	rp.mu.Lock()
	rp.byKey[key] = &discovered{provider: p, at: rp.now()}
	rp.mu.Unlock()
	return p, nil
}

func (p Provider) oauth2(endpoint oauth2.Endpoint) *oauth2.Config {
	scopes := DefaultScopes
	if p.Config.GroupsClaim == identity.DefaultGroupsClaim {
		scopes = append(scopes[:len(scopes):len(scopes)], identity.DefaultGroupsClaim)
	}
	return &oauth2.Config{ClientID: p.Config.ClientID, ClientSecret: p.ClientSecret, Endpoint: endpoint,
		RedirectURL: p.RedirectURL, Scopes: scopes}
}

// AuthURL is where the browser goes to sign in at the provider.
func (rp *RP) AuthURL(ctx context.Context, p Provider, f Flow) (string, error) {
	op, err := rp.provider(ctx, p.Config)
	if err != nil {
		return "", err
	}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(f.Verifier), oidc.Nonce(f.Nonce)}
	if f.Silent {
		opts = append(opts, oauth2.SetAuthURLParam("prompt", "none"))
	}
	return p.oauth2(op.Endpoint()).AuthCodeURL(f.State, opts...), nil
}

// ErrLoginRequired is a silent sign-in the provider refused to answer
// without asking the person.
var ErrLoginRequired = errors.New("the identity provider asks the person to sign in")

// Answer is the provider's redirect back: its query's code, state and
// error.
type Answer struct {
	Code, State, Error, ErrorDescription string
}

// Finish checks the answer against the flow, exchanges its code (with the
// PKCE verifier) and verifies the ID token.
func (rp *RP) Finish(ctx context.Context, p Provider, f Flow, a Answer) (identity.SSOIdentity, error) {
	var id identity.SSOIdentity
	if f.State == "" || subtle.ConstantTimeCompare([]byte(a.State), []byte(f.State)) != 1 {
		return id, domain.Errorf(domain.EUNAUTHORIZED, "This sign-in was not started in this browser, or was already used. Start again.")
	}
	if rp.now().Sub(f.Started) > FlowLifetime {
		return id, domain.Errorf(domain.EUNAUTHORIZED, "This sign-in took longer than %s. Start again.", FlowLifetime)
	}
	if a.Error != "" {
		if f.Silent && isInteractionError(a.Error) {
			return id, ErrLoginRequired
		}
		return id, domain.Errorf(domain.EUNAUTHORIZED, "%s refused the sign-in: %s %s", p.Config.Name, a.Error, a.ErrorDescription)
	}
	op, err := rp.provider(ctx, p.Config)
	if err != nil {
		return id, err
	}
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, oauth2.HTTPClient, rp.client(p.Config.AllowPrivate)), callTimeout)
	defer cancel()
	token, err := p.oauth2(op.Endpoint()).Exchange(ctx, a.Code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		return id, domain.Errorf(domain.EUNAUTHORIZED, "%s did not accept the sign-in's code: %v", p.Config.Name, err)
	}
	raw, _ := token.Extra("id_token").(string)
	if raw == "" {
		return id, domain.Errorf(domain.EUNAUTHORIZED, "%s answered without an ID token", p.Config.Name)
	}
	verified, err := op.VerifierContext(ctx, &oidc.Config{ClientID: p.Config.ClientID, Now: rp.now}).Verify(ctx, raw)
	if err != nil {
		return id, domain.Errorf(domain.EUNAUTHORIZED, "%s's ID token was refused: %v", p.Config.Name, err)
	}
	if subtle.ConstantTimeCompare([]byte(verified.Nonce), []byte(f.Nonce)) != 1 {
		return id, domain.Errorf(domain.EUNAUTHORIZED, "%s's ID token was refused: its nonce is not this sign-in's", p.Config.Name)
	}
	return identityOf(verified, p.Config.GroupsClaim)
}

// isInteractionError reports whether a prompt=none answer says the person
// must act at the provider (OpenID Connect Core 3.1.2.6).
func isInteractionError(code string) bool {
	switch code {
	case "login_required", "interaction_required", "consent_required", "account_selection_required":
		return true
	}
	return false
}

// identityOf reads who signed in from a verified ID token: email_verified
// may be a bool or, at some providers, a string; the groups claim a list
// or a single string.
func identityOf(t *oidc.IDToken, groupsClaim string) (identity.SSOIdentity, error) {
	var claims map[string]json.RawMessage
	if err := t.Claims(&claims); err != nil {
		return identity.SSOIdentity{}, domain.Errorf(domain.EUNAUTHORIZED, "the ID token's claims cannot be read: %v", err)
	}
	id := identity.SSOIdentity{Subject: t.Subject}
	_ = json.Unmarshal(claims["email"], &id.Email)
	var verified any
	_ = json.Unmarshal(claims["email_verified"], &verified)
	switch v := verified.(type) {
	case bool:
		id.EmailVerified = v
	case string:
		id.EmailVerified = strings.EqualFold(v, "true")
	}
	if raw, ok := claims[groupsClaim]; ok {
		if err := json.Unmarshal(raw, &id.Groups); err != nil {
			var one string
			if json.Unmarshal(raw, &one) != nil {
				return id, domain.Errorf(domain.EUNAUTHORIZED, "the ID token's %q claim is neither a list of groups nor a group", groupsClaim)
			}
			id.Groups = []string{one}
		}
	}
	return id, nil
}
