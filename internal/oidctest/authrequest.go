package oidctest

import (
	"net/url"
	"slices"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// authRequest is one authorization request from the op's /authorize until
// its code is exchanged. It implements op.AuthRequest.
type authRequest struct {
	id            string
	clientID      string
	redirectURI   string
	state         string
	nonce         string
	scopes        []string
	responseType  oidc.ResponseType
	responseMode  oidc.ResponseMode
	prompt        []string
	maxAge        *uint // seconds; the op sets 0 for prompt=login
	codeChallenge *oidc.CodeChallenge

	subject  string
	authTime time.Time
	done     bool
}

// copy returns a shallow copy; the slices and pointers are never written after creation.
func (a *authRequest) copy() *authRequest {
	c := *a
	return &c
}

func (a *authRequest) GetID() string                         { return a.id }
func (a *authRequest) GetACR() string                        { return "" }
func (a *authRequest) GetAudience() []string                 { return []string{a.clientID} }
func (a *authRequest) GetAuthTime() time.Time                { return a.authTime }
func (a *authRequest) GetClientID() string                   { return a.clientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge { return a.codeChallenge }
func (a *authRequest) GetNonce() string                      { return a.nonce }
func (a *authRequest) GetRedirectURI() string                { return a.redirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType    { return a.responseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode    { return a.responseMode }
func (a *authRequest) GetScopes() []string                   { return a.scopes }
func (a *authRequest) GetState() string                      { return a.state }
func (a *authRequest) GetSubject() string                    { return a.subject }
func (a *authRequest) Done() bool                            { return a.done }

func (a *authRequest) GetAMR() []string {
	if a.done {
		return []string{"pwd"}
	}
	return nil
}

func (a *authRequest) promptNone() bool {
	return slices.Contains(a.prompt, oidc.PromptNone)
}

// acceptsSession reports whether an IdP session that signed in at authTime
// may answer this request without asking for the password again.
func (a *authRequest) acceptsSession(authTime time.Time) bool {
	return a.maxAge == nil || time.Since(authTime) <= time.Duration(*a.maxAge)*time.Second
}

// opClient presents a Client to the op package: a confidential web client
// using the authorization code flow.
type opClient struct {
	client   Client
	loginURL string
}

func (c opClient) GetID() string                       { return c.client.ID }
func (c opClient) RedirectURIs() []string              { return c.client.RedirectURIs }
func (c opClient) PostLogoutRedirectURIs() []string    { return nil }
func (c opClient) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c opClient) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c opClient) GrantTypes() []oidc.GrantType        { return []oidc.GrantType{oidc.GrantTypeCode} }
func (c opClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeBearer }
func (c opClient) DevMode() bool                       { return false }
func (c opClient) IsScopeAllowed(string) bool          { return true }
func (c opClient) ClockSkew() time.Duration            { return 0 }

// IDTokenUserinfoClaimsAssertion puts email and profile claims in the ID
// token itself, not only behind the userinfo endpoint.
func (c opClient) IDTokenUserinfoClaimsAssertion() bool { return true }

// AuthMethod names basic; the op accepts client_secret_post from such a
// client too, since the provider's config allows it.
func (c opClient) AuthMethod() oidc.AuthMethod { return oidc.AuthMethodBasic }

func (c opClient) LoginURL(authRequestID string) string {
	return c.loginURL + "?authRequestID=" + url.QueryEscape(authRequestID)
}

func (c opClient) IDTokenLifetime() time.Duration {
	if c.client.IDTokenLifetime == 0 {
		return time.Hour
	}
	return c.client.IDTokenLifetime
}

func (c opClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(scopes []string) []string { return scopes }
}

func (c opClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(scopes []string) []string { return scopes }
}
