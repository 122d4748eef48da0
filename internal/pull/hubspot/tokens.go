package hubspot

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// RefreshMargin is how long before its expiry an access token is renewed,
// so that a call never starts with a token about to lapse.
const RefreshMargin = 5 * time.Minute

// TokenSource holds an access token and renews it before it expires and
// once after HubSpot refuses it (401). Its methods are safe for concurrent
// use: one renewal at a time, the others wait for its token.
type TokenSource struct {
	renew     func(context.Context) (Token, error)
	onRenewed func(context.Context, Token) error
	onRefused func(context.Context) // after a refused refresh, once
	margin    time.Duration

	mu      sync.Mutex
	current Token
	refused error // a refused refresh: every later call fails with it
}

// InstallTokens is the token source of an install: t as stored (the access
// token may be empty or expired), renewed with its refresh token. After
// each renewal onRenewed gets the new tokens (the refresh token may be the
// same) so that the caller stores them; its error is returned to the call
// that renewed, the new token kept. A refused refresh token makes every
// call fail with an error wrapping ErrRefreshRefused.
func (c *Client) InstallTokens(t Token, onRenewed func(context.Context, Token) error) *TokenSource {
	ts := &TokenSource{current: t, onRenewed: onRenewed, margin: RefreshMargin}
	ts.renew = func(ctx context.Context) (Token, error) { return c.Refresh(ctx, ts.current.RefreshToken) }
	return ts
}

// AppTokens is the app's own token source (client credentials) for the
// Webhooks Journal APIs, asking for scopes.
func (c *Client) AppTokens(scopes ...string) *TokenSource {
	return &TokenSource{margin: RefreshMargin,
		renew: func(ctx context.Context) (Token, error) { return c.ClientCredentials(ctx, scopes) }}
}

// AccessToken returns a token good for at least the margin, renewing it first
// when needed.
func (ts *TokenSource) AccessToken(ctx context.Context) (string, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.refused != nil {
		return "", ts.refused
	}
	if ts.current.AccessToken != "" && time.Until(ts.current.Expiry) > ts.margin {
		return ts.current.AccessToken, nil
	}
	return ts.renewLocked(ctx)
}

// Rejected renews the token after HubSpot refused stale with a 401, unless
// another call renewed it meanwhile, and returns the token to retry with.
func (ts *TokenSource) Rejected(ctx context.Context, stale string) (string, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.refused != nil {
		return "", ts.refused
	}
	if ts.current.AccessToken != stale && ts.current.AccessToken != "" {
		return ts.current.AccessToken, nil
	}
	return ts.renewLocked(ctx)
}

func (ts *TokenSource) renewLocked(ctx context.Context) (string, error) {
	t, err := ts.renew(ctx)
	if err != nil {
		if errors.Is(err, ErrRefreshRefused) {
			ts.refused = err
			if ts.onRefused != nil {
				ts.onRefused(ctx)
			}
		}
		return "", err
	}
	ts.current = t
	if ts.onRenewed != nil {
		if err := ts.onRenewed(ctx, t); err != nil {
			return t.AccessToken, fmt.Errorf("hubspot: store the renewed tokens: %w", err)
		}
	}
	return t.AccessToken, nil
}

// authed sends r with ts's token, renewing it and retrying once on a 401.
func (c *Client) authed(ctx context.Context, ts *TokenSource, r request, out any) error {
	token, err := ts.AccessToken(ctx)
	if err != nil {
		return err
	}
	r.bearer = token
	err = c.send(ctx, r, out)
	if !unauthorized(err) {
		return err
	}
	c.log.Info("hubspot: access token refused, renewing it once", "call", r.what)
	if r.bearer, err = ts.Rejected(ctx, token); err != nil {
		return err
	}
	return c.send(ctx, r, out)
}
