package hubspot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// OAuth v1 as https://developers.hubspot.com/docs/api/oauth/tokens and the
// spec PublicApiSpecs/Auth/Oauth/Rollouts/155908/v1/oauth.json of
// HubSpot/HubSpot-public-api-spec-collection describe it:
//
//   - POST /oauth/v1/token, a form: grant_type authorization_code (code,
//     redirect_uri), refresh_token (refresh_token) or client_credentials
//     (scope), with client_id and client_secret → AccessTokenResponse
//     {access_token, refresh_token, expires_in, token_type, hub_id, scopes}
//   - GET /oauth/v1/access-tokens/{token} → AccessTokenInfoResponse
//     {hub_id, app_id, scopes, user, user_id, hub_domain, expires_in, token_type}

// ErrRefreshRefused is HubSpot refusing an install's refresh token (400,
// BAD_REFRESH_TOKEN / invalid_grant, or 401): the app was uninstalled or
// the token revoked, and only a new install (reconnect) gives a new one.
var ErrRefreshRefused = errors.New("HubSpot refused the refresh token: the install must be reconnected")

// ErrCodeRefused is HubSpot refusing an authorization code: unknown, used
// already, expired, or issued for another redirect URI or app.
var ErrCodeRefused = errors.New("HubSpot refused the authorization code")

// Token is what the token endpoint grants.
type Token struct {
	AccessToken  string
	RefreshToken string // empty for a client credentials token
	Expiry       time.Time
	HubID        int64    // the portal, when HubSpot says (hub_id)
	Scopes       []string // when HubSpot says
}

// TokenInfo is an access token's metadata: the portal it reads, the app.
type TokenInfo struct {
	HubID     int64
	AppID     int64
	Scopes    []string
	User      string
	UserID    int64
	HubDomain string
	Expiry    time.Time
}

type tokenAnswer struct {
	AccessToken  string   `json:"access_token"`
	RefreshToken string   `json:"refresh_token"`
	ExpiresIn    int64    `json:"expires_in"`
	TokenType    string   `json:"token_type"`
	HubID        int64    `json:"hub_id"`
	Scopes       []string `json:"scopes"`
}

type tokenInfoAnswer struct {
	HubID     int64    `json:"hub_id"`
	AppID     int64    `json:"app_id"`
	Scopes    []string `json:"scopes"`
	User      string   `json:"user"`
	UserID    int64    `json:"user_id"`
	HubDomain string   `json:"hub_domain"`
	ExpiresIn int64    `json:"expires_in"`
}

// ExchangeCode trades the code HubSpot's consent page sent to redirectURI
// for the install's tokens. A refused code is an error wrapping
// ErrCodeRefused.
func (c *Client) ExchangeCode(ctx context.Context, code, redirectURI string) (Token, error) {
	form := url.Values{"grant_type": {"authorization_code"}, "redirect_uri": {redirectURI}, "code": {code}}
	t, err := c.grant(ctx, form, "exchange the authorization code", code)
	if s := statusOf(err); s == http.StatusBadRequest || s == http.StatusUnauthorized {
		return Token{}, fmt.Errorf("hubspot: %w (%d %s)", ErrCodeRefused, s, refusalMessage(err))
	}
	return t, err
}

// Refresh trades an install's refresh token for a new access token. A
// refused refresh token is an error wrapping ErrRefreshRefused.
func (c *Client) Refresh(ctx context.Context, refreshToken string) (Token, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}}
	t, err := c.grant(ctx, form, "refresh the access token", refreshToken)
	if s := statusOf(err); s == http.StatusBadRequest || s == http.StatusUnauthorized {
		return Token{}, fmt.Errorf("hubspot: %w (%d %s)", ErrRefreshRefused, s, refusalMessage(err))
	}
	if err == nil && t.RefreshToken == "" {
		t.RefreshToken = refreshToken // HubSpot may answer without it: the old one stays good
	}
	return t, err
}

// ClientCredentials gets the app's own token (the Webhooks Journal guide's
// "client credentials token") for scopes such as developer.webhooks_journal.read.
func (c *Client) ClientCredentials(ctx context.Context, scopes []string) (Token, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {strings.Join(scopes, " ")}}
	return c.grant(ctx, form, "get a client credentials token")
}

func (c *Client) grant(ctx context.Context, form url.Values, what string, secrets ...string) (Token, error) {
	form.Set("client_id", c.app.ClientID)
	form.Set("client_secret", c.app.ClientSecret)
	var a tokenAnswer
	start := time.Now()
	err := c.send(ctx, request{method: http.MethodPost, url: c.base + "/oauth/v1/token", what: what, form: form, secrets: secrets}, &a)
	if err != nil {
		return Token{}, err
	}
	if a.AccessToken == "" || a.ExpiresIn <= 0 {
		return Token{}, fmt.Errorf("hubspot: %s: the answer has no access_token or expires_in", what)
	}
	return Token{AccessToken: a.AccessToken, RefreshToken: a.RefreshToken, HubID: a.HubID, Scopes: a.Scopes,
		Expiry: start.Add(time.Duration(a.ExpiresIn) * time.Second)}, nil
}

// TokenInfo reads an access token's portal (hub_id), app and scopes.
func (c *Client) TokenInfo(ctx context.Context, accessToken string) (TokenInfo, error) {
	var a tokenInfoAnswer
	start := time.Now()
	err := c.send(ctx, request{method: http.MethodGet, url: c.base + "/oauth/v1/access-tokens/" + url.PathEscape(accessToken),
		what: "read the access token's portal", secrets: []string{accessToken}}, &a)
	if err != nil {
		return TokenInfo{}, err
	}
	if a.HubID == 0 {
		return TokenInfo{}, errors.New("hubspot: read the access token's portal: the answer has no hub_id")
	}
	return TokenInfo{HubID: a.HubID, AppID: a.AppID, Scopes: a.Scopes, User: a.User, UserID: a.UserID,
		HubDomain: a.HubDomain, Expiry: start.Add(time.Duration(a.ExpiresIn) * time.Second)}, nil
}

// refusalMessage is HubSpot's (scrubbed) reason for a refusal.
func refusalMessage(err error) string {
	var refused *apiError
	if errors.As(err, &refused) {
		return refused.Message
	}
	return ""
}
