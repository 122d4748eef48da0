package hubspot

// The fake's OAuth (hubspottest/app.go) follows
// https://developers.hubspot.com/docs/api/oauth/tokens and the spec
// PublicApiSpecs/Auth/Oauth/Rollouts/155908/v1/oauth.json of
// HubSpot/HubSpot-public-api-spec-collection (POST /oauth/v1/token,
// GET /oauth/v1/access-tokens/{token}); the consent redirect follows
// https://developers.hubspot.com/docs/api/oauth-quickstart-guide.

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/pull/hubspot/hubspottest"
)

func appSetup(t *testing.T) (*hubspottest.Server, *Client) {
	t.Helper()
	api := hubspottest.New(t)
	app := api.App()
	c, err := NewClient(AppConfig{BaseURL: api.URL(), ClientID: app.ClientID, ClientSecret: app.ClientSecret, AllowPrivate: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return api, c
}

// consent follows the fake's consent page and returns the code and state
// it redirects back with.
func consent(t *testing.T, api *hubspottest.Server, redirectURI, state string) (code, gotState string) {
	t.Helper()
	q := url.Values{"client_id": {api.App().ClientID}, "redirect_uri": {redirectURI}, "scope": {"oauth crm.objects.contacts.read"}, "state": {state}}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(api.AuthorizeURL() + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize answered %d; want 302", resp.StatusCode)
	}
	back, _ := url.Parse(resp.Header.Get("Location"))
	if !strings.HasPrefix(back.String(), redirectURI) {
		t.Fatalf("redirected to %s; want %s", back, redirectURI)
	}
	return back.Query().Get("code"), back.Query().Get("state")
}

func TestExchangeCodeAndTokenInfo(t *testing.T) {
	api, c := appSetup(t)
	api.SetConsentPortal(777)
	const redirect = "https://tidemark.example/apps/crm/oauth/callback"
	code, state := consent(t, api, redirect, "nonce-1")
	if state != "nonce-1" || code == "" {
		t.Fatalf("code %q state %q", code, state)
	}
	ctx := context.Background()
	tok, err := c.ExchangeCode(ctx, code, redirect)
	if err != nil {
		t.Fatal(err)
	}
	if tok.AccessToken == "" || tok.RefreshToken == "" || time.Until(tok.Expiry) < 29*time.Minute || tok.HubID != 777 {
		t.Fatalf("token %+v", tok)
	}
	info, err := c.TokenInfo(ctx, tok.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	if info.HubID != 777 || info.AppID != api.App().ID || len(info.Scopes) != 2 || info.User == "" {
		t.Fatalf("token info %+v", info)
	}
	// A code is single-use.
	_, err = c.ExchangeCode(ctx, code, redirect)
	if !errors.Is(err, ErrCodeRefused) {
		t.Fatalf("reused code: %v; want ErrCodeRefused", err)
	}
	if strings.Contains(err.Error(), code) || strings.Contains(err.Error(), api.App().ClientSecret) {
		t.Fatalf("the error repeats a secret: %v", err)
	}
	// A code is bound to its redirect URI.
	code, _ = consent(t, api, redirect, "nonce-2")
	if _, err := c.ExchangeCode(ctx, code, "https://elsewhere.example/cb"); !errors.Is(err, ErrCodeRefused) {
		t.Fatalf("other redirect_uri: %v; want ErrCodeRefused", err)
	}
}

func TestRefreshAndRefusedRefresh(t *testing.T) {
	api, c := appSetup(t)
	ctx := context.Background()
	_, refresh := api.InstallTokens(31)
	tok, err := c.Refresh(ctx, refresh)
	if err != nil {
		t.Fatal(err)
	}
	if tok.AccessToken == "" || tok.RefreshToken != refresh {
		t.Fatalf("refreshed %+v", tok)
	}
	api.Uninstall(31)
	_, err = c.Refresh(ctx, refresh)
	if !errors.Is(err, ErrRefreshRefused) {
		t.Fatalf("refresh after uninstall: %v; want ErrRefreshRefused", err)
	}
	if msg := err.Error(); strings.Contains(msg, refresh) || strings.Contains(msg, api.App().ClientSecret) {
		t.Fatalf("the error repeats a secret: %v", err)
	}
}

func TestTokenSourceRenewsBeforeExpiry(t *testing.T) {
	api, c := appSetup(t)
	ctx := context.Background()
	access, refresh := api.InstallTokens(31)
	var stored []Token
	ts := c.InstallTokens(Token{AccessToken: access, RefreshToken: refresh, Expiry: time.Now().Add(time.Minute)},
		func(_ context.Context, t Token) error { stored = append(stored, t); return nil })
	got, err := ts.AccessToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got == access || api.Refreshes() != 1 || len(stored) != 1 || stored[0].RefreshToken != refresh {
		t.Fatalf("a token a minute from expiry was not renewed: refreshes %d, stored %d", api.Refreshes(), len(stored))
	}
	if again, _ := ts.AccessToken(ctx); again != got || api.Refreshes() != 1 {
		t.Fatalf("a fresh token was renewed again")
	}
}

// A 401 from any call renews the token once and retries; concurrent calls
// share one renewal.
func TestTokenSourceRenewsOn401(t *testing.T) {
	api, c := appSetup(t)
	ctx := context.Background()
	access, refresh := api.InstallTokens(31)
	var mu sync.Mutex
	renewed := 0
	ts := c.InstallTokens(Token{AccessToken: access, RefreshToken: refresh, Expiry: time.Now().Add(time.Hour)},
		func(context.Context, Token) error { mu.Lock(); renewed++; mu.Unlock(); return nil })
	api.ExpireAccessTokens()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Journal(ts, 31).Next(ctx, "unknown-offset", 1)
			if !errors.Is(err, ErrOffsetExpired) {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("call after 401: %v", err)
	}
	if api.Refreshes() != 1 || renewed != 1 {
		t.Fatalf("refreshes %d, stored %d; want one renewal", api.Refreshes(), renewed)
	}
}

// A refused refresh fails every later call without asking HubSpot again,
// so that the caller can mark the install as needing a reconnect.
func TestTokenSourceRefusedRefresh(t *testing.T) {
	api, c := appSetup(t)
	ctx := context.Background()
	_, refresh := api.InstallTokens(31)
	api.Uninstall(31)
	ts := c.InstallTokens(Token{RefreshToken: refresh}, nil)
	for range 2 {
		if _, err := c.Subscriptions(ctx, ts); !errors.Is(err, ErrRefreshRefused) {
			t.Fatalf("call with a revoked install: %v; want ErrRefreshRefused", err)
		}
	}
	if api.Refreshes() != 1 {
		t.Fatalf("refreshes %d; want 1", api.Refreshes())
	}
}

func TestOAuthWaitsRetryAfter(t *testing.T) {
	api, c := appSetup(t)
	api.TooManyRequestsOnce(time.Second)
	start := time.Now()
	if _, err := c.ClientCredentials(context.Background(), []string{"developer.webhooks_journal.read"}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("took %s; Retry-After asked for 1 s", took)
	}
}
