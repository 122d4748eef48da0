// Package oidctest runs a real OpenID Connect Provider for tests: the
// certified op package of github.com/zitadel/oidc over an in-memory storage,
// with a password login page, IdP sessions for prompt=none, key rotation and
// knobs for tokens a relying party must refuse.
//
// Only the authorization code flow is served, and only with PKCE S256.
// Refresh tokens, the device flow, token exchange, JWT profile and client
// credentials answer "not supported" errors.
//
// ID tokens carry sub, iss, aud, exp, iat, auth_time, nonce, azp, amr and
// groups (a JSON array, always); email and email_verified (also when false)
// come with the email scope, preferred_username with the profile scope.
//
// Like a real IdP, a browser with a live IdP session is signed in without the
// form, unless the request says prompt=login or a max_age the session is
// older than. SignOut ends a user's sessions.
package oidctest

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// User is an account at the provider.
type User struct {
	Subject       string // the ID token's sub; Username when empty
	Username      string // what the login form asks for
	Password      string
	Email         string
	EmailVerified bool
	Groups        []string
}

// Client is a relying party registered at the provider. It authenticates at
// the token endpoint with client_secret_basic or client_secret_post.
type Client struct {
	ID, Secret   string
	RedirectURIs []string
	// IDTokenLifetime is how long ID tokens live: 0 means an hour, a negative
	// value mints tokens that expired that long ago.
	IDTokenLifetime time.Duration
}

// Option changes what Start builds.
type Option func(*config)

type config struct {
	issuer   string
	audience []string
}

// WithIssuer makes the discovery document and the tokens name issuer rather
// than the served address, for tests of an issuer mismatch. The endpoints in
// the discovery document still point at the served address.
func WithIssuer(issuer string) Option {
	return func(c *config) { c.issuer = issuer }
}

// WithAudience makes ID tokens name aud instead of the client id, for tests
// of a wrong audience.
func WithAudience(aud ...string) Option {
	return func(c *config) { c.audience = aud }
}

// Provider is a running OpenID Connect Provider.
type Provider struct {
	t          testing.TB
	url        string
	issuer     string
	audience   []string
	cookieName string
	op         *op.Provider
	store      *storage

	rotateMu sync.Mutex // one RotateKey at a time, so keys are not lost
}

// Endpoint paths, relative to URL(), as the op package names them.
const (
	loginPath         = "/login"
	authorizePath     = "/authorize"
	tokenPath         = "/oauth/token"
	introspectionPath = "/oauth/introspect"
	userinfoPath      = "/userinfo"
	revocationPath    = "/revoke"
	endSessionPath    = "/end_session"
	keysPath          = "/keys"
)

// Start runs a provider on 127.0.0.1 over plain HTTP until the test ends.
func Start(t testing.TB, opts ...Option) *Provider {
	t.Helper()
	var cfg config
	for _, opt := range opts {
		opt(&cfg)
	}
	srv := httptest.NewUnstartedServer(nil)
	t.Cleanup(srv.Close)
	base := "http://" + srv.Listener.Addr().String()
	store, err := newStorage(base + loginPath)
	if err != nil {
		t.Fatalf("oidctest: %v", err)
	}
	p := &Provider{
		t:        t,
		url:      base,
		issuer:   cmp.Or(cfg.issuer, base),
		audience: cfg.audience,
		// Cookies ignore ports, and the relying party under test shares the host.
		cookieName: "oidctest_session_" + strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port),
		store:      store,
	}
	p.op, err = op.NewProvider(opConfig(), store, op.StaticIssuer(p.issuer),
		op.WithAllowInsecure(),
		// Absolute endpoints keep the served address in the discovery
		// document when WithIssuer names another.
		op.WithCustomEndpoints(
			op.NewEndpointWithURL(authorizePath, base+authorizePath),
			op.NewEndpointWithURL(tokenPath, base+tokenPath),
			op.NewEndpointWithURL(userinfoPath, base+userinfoPath),
			op.NewEndpointWithURL(revocationPath, base+revocationPath),
			op.NewEndpointWithURL(endSessionPath, base+endSessionPath),
			op.NewEndpointWithURL(keysPath, base+keysPath),
		),
		op.WithCustomIntrospectionEndpoint(op.NewEndpointWithURL(introspectionPath, base+introspectionPath)),
	)
	if err != nil {
		t.Fatalf("oidctest: %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc(loginPath, p.serveLogin)
	mux.Handle("/", p.op)
	if len(p.audience) > 0 {
		mux.Handle(tokenPath, p.rewriteAudience(p.op))
	}
	srv.Config.Handler = mux
	srv.Start()
	return p
}

func opConfig() *op.Config {
	c := &op.Config{
		CodeMethodS256:  true,
		AuthMethodPost:  true,
		SupportedClaims: slices.Concat(op.DefaultSupportedClaims, []string{"groups"}),
	}
	// The key encrypts opaque access tokens; a fresh one per provider.
	rand.Read(c.CryptoKey[:])
	return c
}

// Issuer is the issuer the discovery document and the tokens name.
func (p *Provider) Issuer() string { return p.issuer }

// URL is the served address, "http://127.0.0.1:PORT".
func (p *Provider) URL() string { return p.url }

// AddClient registers a relying party, replacing one with the same ID.
func (p *Provider) AddClient(c Client) {
	c.RedirectURIs = slices.Clone(c.RedirectURIs)
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.clients[c.ID] = c
}

// AddUser adds an account, replacing one with the same subject.
func (p *Provider) AddUser(u User) {
	u.Subject = cmp.Or(u.Subject, u.Username)
	u.Groups = slices.Clone(u.Groups)
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.users[u.Subject] = u
	p.store.usernames[u.Username] = u.Subject
}

// SetGroups replaces a user's groups; the next ID token shows them. An
// unknown subject fails the test, so call it from the test's goroutine.
func (p *Provider) SetGroups(subject string, groups ...string) {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	u, ok := p.store.users[subject]
	if !ok {
		p.t.Fatalf("oidctest: SetGroups: no user with subject %q", subject)
	}
	u.Groups = slices.Clone(groups)
	p.store.users[subject] = u
}

// RotateKey makes a new signing key with a new kid. Tokens are signed with
// it from now on; the JWKS serves it and the previous key.
func (p *Provider) RotateKey() {
	p.rotateMu.Lock()
	defer p.rotateMu.Unlock()
	key, err := newSigningKey()
	if err != nil {
		p.t.Fatalf("oidctest: RotateKey: %v", err)
	}
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.keys = []*signingKey{key, p.store.keys[0]}
}

// SignOut ends the user's IdP sessions: prompt=none then answers
// login_required and other requests show the login form.
func (p *Provider) SignOut(subject string) {
	p.store.endSessions(subject)
}

// Logins counts successful submissions of the login form, so a test can tell
// an interactive sign-in from a silent one.
func (p *Provider) Logins() int {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	return p.store.logins
}

// rewriteAudience re-signs the ID token of each token response with the
// configured audience. The op package always adds the client id to aud, so
// a wrong audience can only be made after it answered.
func (p *Provider) rewriteAudience(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if rec.Code == http.StatusOK {
			var err error
			if body, err = p.replaceAudience(body); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		maps.Copy(w.Header(), rec.Header())
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

func (p *Provider) replaceAudience(tokenResponse []byte) ([]byte, error) {
	var resp map[string]any
	if err := json.Unmarshal(tokenResponse, &resp); err != nil {
		return nil, err
	}
	raw, ok := resp["id_token"].(string)
	if !ok {
		return tokenResponse, nil
	}
	jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return nil, err
	}
	var claims map[string]any
	dec := json.NewDecoder(bytes.NewReader(jws.UnsafePayloadWithoutVerification()))
	dec.UseNumber()
	if err := dec.Decode(&claims); err != nil {
		return nil, err
	}
	claims["aud"] = p.audience
	payload, err := json.Marshal(claims)
	if err != nil {
		return nil, err
	}
	key := p.store.signingKey()
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key.private, KeyID: key.id}},
		(&jose.SignerOptions{}).WithType("JWT"),
	)
	if err != nil {
		return nil, err
	}
	signed, err := signer.Sign(payload)
	if err != nil {
		return nil, err
	}
	if resp["id_token"], err = signed.CompactSerialize(); err != nil {
		return nil, fmt.Errorf("oidctest: sign ID token: %w", err)
	}
	return json.Marshal(resp)
}
