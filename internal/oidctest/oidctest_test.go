package oidctest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

var alice = User{
	Subject:       "alice-sub",
	Username:      "alice",
	Password:      "wonderland",
	Email:         "alice@example.com",
	EmailVerified: true,
	Groups:        []string{"admins", "ops"},
}

// relyingParty signs in at the provider the way Tidemark does: code flow with
// PKCE, state and nonce, through a browser-like client that keeps cookies.
type relyingParty struct {
	t        *testing.T
	oauth    oauth2.Config
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
	browser  *http.Client
	callback string
}

func newRelyingParty(t *testing.T, idp *Provider, client Client) *relyingParty {
	t.Helper()
	// The callback answers its query string, so the browser's last page holds code and state.
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.URL.RawQuery)
	}))
	t.Cleanup(cb.Close)
	client.ID = "tidemark"
	client.Secret = "s3cret"
	client.RedirectURIs = []string{cb.URL + "/callback"}
	idp.AddClient(client)

	provider, err := oidc.NewProvider(t.Context(), idp.URL())
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &relyingParty{
		t: t,
		oauth: oauth2.Config{
			ClientID:     client.ID,
			ClientSecret: client.Secret,
			Endpoint:     provider.Endpoint(),
			RedirectURL:  client.RedirectURIs[0],
			Scopes:       []string{oidc.ScopeOpenID, "email", "profile"},
		},
		provider: provider,
		verifier: provider.Verifier(&oidc.Config{ClientID: client.ID}),
		browser:  &http.Client{Jar: jar, Timeout: 30 * time.Second},
		callback: client.RedirectURIs[0],
	}
}

// attempt is one sign-in's secrets, as the relying party keeps them.
type attempt struct {
	state, nonce, verifier string
}

func newAttempt() attempt {
	return attempt{state: oauth2.GenerateVerifier(), nonce: oauth2.GenerateVerifier(), verifier: oauth2.GenerateVerifier()}
}

func (rp *relyingParty) authURL(a attempt, opts ...oauth2.AuthCodeOption) string {
	opts = append(opts, oauth2.S256ChallengeOption(a.verifier), oidc.Nonce(a.nonce))
	return rp.oauth.AuthCodeURL(a.state, opts...)
}

// get fetches url with the browser and returns the final page and its address.
func (rp *relyingParty) get(u string) (*url.URL, string) {
	rp.t.Helper()
	resp, err := rp.browser.Get(u)
	return rp.page(resp, err)
}

func (rp *relyingParty) page(resp *http.Response, err error) (*url.URL, string) {
	rp.t.Helper()
	if err != nil {
		rp.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		rp.t.Fatal(err)
	}
	return resp.Request.URL, string(body)
}

func (rp *relyingParty) atCallback(u *url.URL, body string) (url.Values, bool) {
	rp.t.Helper()
	if !strings.HasPrefix(u.String(), rp.callback) {
		return nil, false
	}
	q, err := url.ParseQuery(body)
	if err != nil {
		rp.t.Fatal(err)
	}
	return q, true
}

// submitLogin posts the login form shown at page.
func (rp *relyingParty) submitLogin(page *url.URL, username, password string) (*url.URL, string) {
	rp.t.Helper()
	resp, err := rp.browser.PostForm(page.Scheme+"://"+page.Host+loginPath, url.Values{
		"authRequestID": {page.Query().Get("authRequestID")},
		"username":      {username},
		"password":      {password},
	})
	return rp.page(resp, err)
}

// signIn follows authURL, fills the login form if one is shown, and
// returns the query the callback received.
func (rp *relyingParty) signIn(authURL, username, password string) url.Values {
	rp.t.Helper()
	page, body := rp.get(authURL)
	if q, ok := rp.atCallback(page, body); ok {
		return q
	}
	if !strings.Contains(body, `id="username"`) {
		rp.t.Fatalf("expected the login form at %s, got:\n%s", page, body)
	}
	page, body = rp.submitLogin(page, username, password)
	q, ok := rp.atCallback(page, body)
	if !ok {
		rp.t.Fatalf("expected the callback after login, got %s:\n%s", page, body)
	}
	return q
}

type idClaims struct {
	Email         string   `json:"email"`
	EmailVerified *bool    `json:"email_verified"`
	Groups        []string `json:"groups"`
	AuthTime      int64    `json:"auth_time"`
}

// exchange redeems the code from the callback and returns the raw ID token.
func (rp *relyingParty) exchange(q url.Values, a attempt) (string, error) {
	rp.t.Helper()
	if q.Get("error") != "" {
		rp.t.Fatalf("callback got error %q: %s", q.Get("error"), q.Get("error_description"))
	}
	if q.Get("state") != a.state {
		rp.t.Fatalf("state = %q, want %q", q.Get("state"), a.state)
	}
	token, err := rp.oauth.Exchange(rp.t.Context(), q.Get("code"), oauth2.VerifierOption(a.verifier))
	if err != nil {
		return "", err
	}
	raw, ok := token.Extra("id_token").(string)
	if !ok {
		rp.t.Fatal("token response has no id_token")
	}
	return raw, nil
}

// signInAndVerify runs a whole sign-in and returns the verified ID token.
func (rp *relyingParty) signInAndVerify(username, password string, opts ...oauth2.AuthCodeOption) (*oidc.IDToken, idClaims, string) {
	rp.t.Helper()
	a := newAttempt()
	raw, err := rp.exchange(rp.signIn(rp.authURL(a, opts...), username, password), a)
	if err != nil {
		rp.t.Fatalf("exchange: %v", err)
	}
	tok, err := rp.verifier.Verify(rp.t.Context(), raw)
	if err != nil {
		rp.t.Fatalf("verify: %v", err)
	}
	if tok.Nonce != a.nonce {
		rp.t.Fatalf("nonce = %q, want %q", tok.Nonce, a.nonce)
	}
	var c idClaims
	if err := tok.Claims(&c); err != nil {
		rp.t.Fatal(err)
	}
	return tok, c, raw
}

func keyID(t *testing.T, raw string) string {
	t.Helper()
	header, err := base64.RawURLEncoding.DecodeString(strings.Split(raw, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	var h struct{ Kid string }
	if err := json.Unmarshal(header, &h); err != nil {
		t.Fatal(err)
	}
	return h.Kid
}

func TestCodeFlowWithPKCE(t *testing.T) {
	for name, style := range map[string]oauth2.AuthStyle{
		"client_secret_basic": oauth2.AuthStyleInHeader,
		"client_secret_post":  oauth2.AuthStyleInParams,
	} {
		t.Run(name, func(t *testing.T) {
			idp := Start(t)
			idp.AddUser(alice)
			rp := newRelyingParty(t, idp, Client{})
			rp.oauth.Endpoint.AuthStyle = style

			a := newAttempt()
			form, _ := rp.get(rp.authURL(a))
			_, body := rp.submitLogin(form, "alice", "wrong")
			if !strings.Contains(body, `id="error"`) || !strings.Contains(body, `id="submit"`) {
				t.Fatalf("a wrong password should show the form with an error, got:\n%s", body)
			}
			if idp.Logins() != 0 {
				t.Fatalf("Logins = %d after a wrong password, want 0", idp.Logins())
			}
			page, body := rp.submitLogin(form, "alice", "wonderland")
			q, ok := rp.atCallback(page, body)
			if !ok {
				t.Fatalf("expected the callback, got %s:\n%s", page, body)
			}
			raw, err := rp.exchange(q, a)
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			tok, err := rp.verifier.Verify(t.Context(), raw)
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			var c idClaims
			if err := tok.Claims(&c); err != nil {
				t.Fatal(err)
			}
			if tok.Issuer != idp.Issuer() || tok.Subject != alice.Subject || tok.Nonce != a.nonce {
				t.Errorf("iss, sub, nonce = %q, %q, %q", tok.Issuer, tok.Subject, tok.Nonce)
			}
			if c.Email != alice.Email || c.EmailVerified == nil || !*c.EmailVerified {
				t.Errorf("email, email_verified = %q, %v", c.Email, c.EmailVerified)
			}
			if !slices.Equal(c.Groups, alice.Groups) {
				t.Errorf("groups = %q, want %q", c.Groups, alice.Groups)
			}
			if c.AuthTime == 0 || time.Until(tok.Expiry) < 50*time.Minute {
				t.Errorf("auth_time = %d, exp in %v", c.AuthTime, time.Until(tok.Expiry))
			}
			if idp.Logins() != 1 {
				t.Errorf("Logins = %d, want 1", idp.Logins())
			}
			// The code is single use.
			if _, err := rp.oauth.Exchange(t.Context(), q.Get("code"), oauth2.VerifierOption(a.verifier)); err == nil {
				t.Error("a code was redeemed twice")
			}
		})
	}
}

func TestUnverifiedEmailIsSaidFalse(t *testing.T) {
	idp := Start(t)
	bob := User{Username: "bob", Password: "pw", Email: "bob@example.com"}
	idp.AddUser(bob)
	rp := newRelyingParty(t, idp, Client{})
	tok, c, _ := rp.signInAndVerify("bob", "pw")
	if tok.Subject != "bob" || c.EmailVerified == nil || *c.EmailVerified || c.Groups == nil || len(c.Groups) != 0 {
		t.Errorf("sub %q, email_verified %v, groups %#v; want bob, false, []", tok.Subject, c.EmailVerified, c.Groups)
	}
}

func TestUserinfo(t *testing.T) {
	idp := Start(t)
	idp.AddUser(alice)
	rp := newRelyingParty(t, idp, Client{})
	a := newAttempt()
	q := rp.signIn(rp.authURL(a), "alice", "wonderland")
	token, err := rp.oauth.Exchange(t.Context(), q.Get("code"), oauth2.VerifierOption(a.verifier))
	if err != nil {
		t.Fatal(err)
	}
	info, err := rp.provider.UserInfo(t.Context(), oauth2.StaticTokenSource(token))
	if err != nil {
		t.Fatal(err)
	}
	if info.Subject != alice.Subject || info.Email != alice.Email || !info.EmailVerified {
		t.Errorf("userinfo = %+v", info)
	}
}

func TestPKCEIsEnforced(t *testing.T) {
	idp := Start(t)
	idp.AddUser(alice)
	rp := newRelyingParty(t, idp, Client{})

	a := newAttempt()
	q := rp.signIn(rp.authURL(a), "alice", "wonderland")
	_, err := rp.oauth.Exchange(t.Context(), q.Get("code"), oauth2.VerifierOption(oauth2.GenerateVerifier()))
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
		t.Fatalf("exchange with a wrong verifier: %v, want invalid_grant", err)
	}

	// An authorization request without a code challenge is refused outright.
	page, body := rp.get(rp.oauth.AuthCodeURL("st", oidc.Nonce("n")))
	q, ok := rp.atCallback(page, body)
	if !ok || q.Get("error") != "invalid_request" || q.Get("state") != "st" {
		t.Fatalf("no PKCE: got %s %s, want invalid_request at the callback", page, body)
	}
}

func TestRotateKey(t *testing.T) {
	idp := Start(t)
	idp.AddUser(alice)
	rp := newRelyingParty(t, idp, Client{})
	_, _, before := rp.signInAndVerify("alice", "wonderland")

	idp.RotateKey()
	_, _, after := rp.signInAndVerify("alice", "wonderland")
	if keyID(t, before) == keyID(t, after) {
		t.Fatalf("kid %q did not change after RotateKey", keyID(t, after))
	}
	// The previous key is still published, so earlier tokens still verify.
	if _, err := rp.verifier.Verify(t.Context(), before); err != nil {
		t.Fatalf("a token signed before the rotation: %v", err)
	}
}

func TestPromptNone(t *testing.T) {
	idp := Start(t)
	idp.AddUser(alice)
	rp := newRelyingParty(t, idp, Client{})
	promptNone := oauth2.SetAuthURLParam("prompt", "none")

	loginRequired := func(when string) {
		t.Helper()
		a := newAttempt()
		page, body := rp.get(rp.authURL(a, promptNone))
		q, ok := rp.atCallback(page, body)
		if !ok || q.Get("error") != "login_required" || q.Get("state") != a.state {
			t.Fatalf("%s: prompt=none got %s %s, want login_required with the state", when, page, body)
		}
	}
	loginRequired("before any login")

	_, first, _ := rp.signInAndVerify("alice", "wonderland")
	tok, silent, _ := rp.signInAndVerify("", "", promptNone)
	if tok.Subject != alice.Subject || idp.Logins() != 1 {
		t.Fatalf("silent sign-in: sub %q, Logins %d; want %q, 1", tok.Subject, idp.Logins(), alice.Subject)
	}
	if silent.AuthTime != first.AuthTime {
		t.Errorf("auth_time %d of a silent sign-in, want the session's %d", silent.AuthTime, first.AuthTime)
	}

	// prompt=login asks for the password despite the session.
	rp.signInAndVerify("alice", "wonderland", oauth2.SetAuthURLParam("prompt", "login"))
	if idp.Logins() != 2 {
		t.Fatalf("Logins = %d after prompt=login, want 2", idp.Logins())
	}

	idp.SignOut(alice.Subject)
	loginRequired("after SignOut")
}

func TestSetGroupsShowsInTheNextToken(t *testing.T) {
	idp := Start(t)
	idp.AddUser(alice)
	rp := newRelyingParty(t, idp, Client{})
	rp.signInAndVerify("alice", "wonderland")

	idp.SetGroups(alice.Subject, "readers")
	_, c, _ := rp.signInAndVerify("alice", "wonderland")
	if !slices.Equal(c.Groups, []string{"readers"}) {
		t.Fatalf("groups = %q, want [readers]", c.Groups)
	}
}

func TestExpiredIDToken(t *testing.T) {
	idp := Start(t)
	idp.AddUser(alice)
	rp := newRelyingParty(t, idp, Client{IDTokenLifetime: -time.Minute})
	a := newAttempt()
	raw, err := rp.exchange(rp.signIn(rp.authURL(a), "alice", "wonderland"), a)
	if err != nil {
		t.Fatal(err)
	}
	_, err = rp.verifier.Verify(t.Context(), raw)
	var expired *oidc.TokenExpiredError
	if !errors.As(err, &expired) {
		t.Fatalf("verify: %v, want a TokenExpiredError", err)
	}
}

func TestWithAudience(t *testing.T) {
	idp := Start(t, WithAudience("someone-else"))
	idp.AddUser(alice)
	rp := newRelyingParty(t, idp, Client{})
	a := newAttempt()
	raw, err := rp.exchange(rp.signIn(rp.authURL(a), "alice", "wonderland"), a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rp.verifier.Verify(t.Context(), raw); err == nil || !strings.Contains(err.Error(), "audience") {
		t.Fatalf("verify: %v, want an audience error", err)
	}
	// Only the audience is wrong: the signature and the rest still hold.
	tok, err := rp.provider.Verifier(&oidc.Config{SkipClientIDCheck: true}).Verify(t.Context(), raw)
	if err != nil {
		t.Fatalf("verify without the audience check: %v", err)
	}
	if !slices.Equal(tok.Audience, []string{"someone-else"}) || tok.Nonce != a.nonce {
		t.Errorf("aud %q, nonce %q", tok.Audience, tok.Nonce)
	}
}

func TestWithIssuer(t *testing.T) {
	idp := Start(t, WithIssuer("http://issuer.invalid"))
	if idp.Issuer() != "http://issuer.invalid" || idp.URL() == idp.Issuer() {
		t.Fatalf("Issuer %q, URL %q", idp.Issuer(), idp.URL())
	}
	if _, err := oidc.NewProvider(t.Context(), idp.URL()); err == nil || !strings.Contains(err.Error(), "issuer") {
		t.Fatalf("discovery: %v, want an issuer mismatch", err)
	}
}
