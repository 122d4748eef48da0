package hubspottest

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// The fake's public app. OAuth follows
// https://developers.hubspot.com/docs/api/oauth/tokens and the spec
// PublicApiSpecs/Auth/Oauth/Rollouts/155908/v1/oauth.json of
// HubSpot/HubSpot-public-api-spec-collection:
//
//   - GET /oauth/authorize?client_id&redirect_uri&scope&state: the consent
//     page, approved at once: 302 to redirect_uri?code=…&state=…
//     (https://developers.hubspot.com/docs/api/oauth-quickstart-guide)
//   - POST /oauth/v1/token (form): authorization_code (codes single-use),
//     refresh_token (revocable), client_credentials → {access_token,
//     refresh_token, expires_in, token_type, hub_id, scopes}
//   - GET /oauth/v1/access-tokens/{token} → {hub_id, app_id, scopes, user, …}
//
// [unverified] The OAuth endpoints' error body {status: BAD_AUTH_CODE |
// BAD_REFRESH_TOKEN | BAD_CLIENT_ID | BAD_REDIRECT_URI, message} is from
// HubSpot's OAuth pages as remembered, not from the spec (whose Error has
// category and message; the fake sends both).

// App is the fake's public app.
type App struct {
	ID           int64
	ClientID     string
	ClientSecret string
}

type appState struct {
	app           App
	consentPortal int64
	accessLife    time.Duration
	fileLife      time.Duration
	fileKey       []byte
	codes         map[string]*grantCode
	access        map[string]*accessToken
	refresh       map[string]*refreshToken
	refreshes     int
	journals      map[int64][]Entry
	nextEvent     int64
	subs          []subscription
	nextSub       int64
	snapshots     map[string]*snapshot
}

type grantCode struct {
	portal      int64
	redirectURI string
	scopes      []string
	used        bool
	expires     time.Time
}

type accessToken struct {
	portal  int64 // 0: the app's client credentials token
	scopes  []string
	expires time.Time
}

type refreshToken struct {
	portal  int64
	scopes  []string
	revoked bool
}

// codeLife is how long a code is good for [unverified: HubSpot does not
// say; codes are single-use and short-lived].
const codeLife = 10 * time.Minute

func newAppState() appState {
	key := make([]byte, 32)
	rand.Read(key)
	return appState{
		app:           App{ID: 4242001, ClientID: uuid.NewString(), ClientSecret: uuid.NewString()},
		consentPortal: 62515,
		accessLife:    30 * time.Minute,
		fileLife:      5 * time.Minute,
		fileKey:       key,
		codes:         map[string]*grantCode{},
		access:        map[string]*accessToken{},
		refresh:       map[string]*refreshToken{},
		journals:      map[int64][]Entry{},
		snapshots:     map[string]*snapshot{},
	}
}

// App is the public app the fake knows (its client secret signs webhooks).
func (s *Server) App() App { return s.app.app }

// AuthorizeURL is the consent page's address (app.hubspot.com's /oauth/authorize).
func (s *Server) AuthorizeURL() string { return s.srv.URL + "/oauth/authorize" }

// SetConsentPortal makes the next consents install the app in portal.
func (s *Server) SetConsentPortal(portal int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.app.consentPortal = portal
}

// SetAccessTokenLife sets the expires_in of the access tokens issued next.
func (s *Server) SetAccessTokenLife(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.app.accessLife = d
}

// ExpireAccessTokens makes every access token issued so far expired: the
// next call with one is a 401.
func (s *Server) ExpireAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.app.access {
		t.expires = time.Now().Add(-time.Second)
	}
}

// Uninstall revokes portal's refresh tokens and access tokens, as removing
// the app from the portal does: a refresh is then refused.
func (s *Server) Uninstall(portal int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.app.refresh {
		if r.portal == portal {
			r.revoked = true
		}
	}
	for tok, a := range s.app.access {
		if a.portal == portal {
			delete(s.app.access, tok)
		}
	}
}

// Refreshes counts the refresh_token grants answered (refused ones too).
func (s *Server) Refreshes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.app.refreshes
}

// InstallTokens installs the app in portal without the consent page and
// returns the install's tokens.
func (s *Server) InstallTokens(portal int64) (access, refresh string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	refresh = newToken("na1-")
	s.app.refresh[refresh] = &refreshToken{portal: portal}
	return s.issueAccess(portal, nil), refresh
}

func newToken(prefix string) string {
	var b [20]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func (s *Server) issueAccess(portal int64, scopes []string) string {
	tok := newToken("CO")
	s.app.access[tok] = &accessToken{portal: portal, scopes: scopes, expires: time.Now().Add(s.app.accessLife)}
	return tok
}

// serveApp answers the app's endpoints; false for the CRM ones.
func (s *Server) serveApp(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.Path
	switch {
	case p == "/oauth/authorize":
		s.authorize(w, r)
	case strings.HasPrefix(p, "/journal-files/"):
		s.journalFile(w, r)
	case p == "/oauth/v1/token", strings.HasPrefix(p, "/oauth/v1/access-tokens/"), strings.HasPrefix(p, "/webhooks-journal/"):
		if s.rateLimited(w) {
			return true
		}
		switch {
		case p == "/oauth/v1/token":
			s.grant(w, r)
		case strings.HasPrefix(p, "/oauth/v1/access-tokens/"):
			s.tokenInfo(w, r, strings.TrimPrefix(p, "/oauth/v1/access-tokens/"))
		default:
			s.webhooksJournal(w, r)
		}
	default:
		return false
	}
	return true
}

// rateLimited answers the 429 TooManyRequestsOnce asked for.
func (s *Server) rateLimited(w http.ResponseWriter) bool {
	s.mu.Lock()
	if s.tooMany == 0 {
		s.mu.Unlock()
		return false
	}
	s.tooMany--
	retry := s.retryAfter
	s.mu.Unlock()
	w.Header().Set("Retry-After", strconv.Itoa(retry))
	writeRateLimited(w, "SECONDLY", "You have reached your secondly limit.")
	return true
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if q.Get("client_id") != s.app.app.ClientID || err != nil || !redirect.IsAbs() {
		http.Error(w, "Authorization failed: unknown client_id or bad redirect_uri", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	code := uuid.NewString()
	s.app.codes[code] = &grantCode{portal: s.app.consentPortal, redirectURI: redirect.String(),
		scopes: strings.Fields(q.Get("scope")), expires: time.Now().Add(codeLife)}
	s.mu.Unlock()
	back := redirect.Query()
	back.Set("code", code)
	if state := q.Get("state"); state != "" {
		back.Set("state", state)
	}
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func writeOAuthError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]any{"status": code, "message": message, "category": code,
		"correlationId": "00000000-0000-0000-0000-000000000000"})
}

func (s *Server) grant(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		writeOAuthError(w, http.StatusBadRequest, "BAD_REQUEST", "POST a form (application/x-www-form-urlencoded)")
		return
	}
	if err := r.ParseForm(); err != nil {
		writeOAuthError(w, http.StatusBadRequest, "BAD_REQUEST", err.Error())
		return
	}
	f := r.PostForm
	if f.Get("client_id") != s.app.app.ClientID || f.Get("client_secret") != s.app.app.ClientSecret {
		writeOAuthError(w, http.StatusBadRequest, "BAD_CLIENT_ID", "missing or invalid client_id or client_secret")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var portal int64
	var scopes []string
	refresh := ""
	switch f.Get("grant_type") {
	case "authorization_code":
		c := s.app.codes[f.Get("code")]
		switch {
		case c == nil || c.used || time.Now().After(c.expires):
			writeOAuthError(w, http.StatusBadRequest, "BAD_AUTH_CODE", "missing or unknown auth code")
			return
		case c.redirectURI != f.Get("redirect_uri"):
			writeOAuthError(w, http.StatusBadRequest, "BAD_REDIRECT_URI", "redirect_uri does not match the authorization's")
			return
		}
		c.used = true
		portal, scopes = c.portal, c.scopes
		refresh = newToken("na1-")
		s.app.refresh[refresh] = &refreshToken{portal: portal, scopes: scopes}
	case "refresh_token":
		s.app.refreshes++
		refresh = f.Get("refresh_token")
		t := s.app.refresh[refresh]
		if t == nil || t.revoked {
			writeOAuthError(w, http.StatusBadRequest, "BAD_REFRESH_TOKEN", "missing or unknown refresh token")
			return
		}
		portal, scopes = t.portal, t.scopes
	case "client_credentials":
		scopes = strings.Fields(f.Get("scope"))
	default:
		writeOAuthError(w, http.StatusBadRequest, "BAD_GRANT_TYPE", "unknown grant_type")
		return
	}
	answer := map[string]any{"access_token": s.issueAccess(portal, scopes), "token_type": "bearer",
		"expires_in": int64(s.app.accessLife / time.Second), "scopes": scopes, "token_use": "access"}
	if refresh != "" {
		answer["refresh_token"] = refresh
	}
	if portal != 0 {
		answer["hub_id"] = portal
	}
	writeJSON(w, http.StatusOK, answer)
}

func (s *Server) tokenInfo(w http.ResponseWriter, r *http.Request, token string) {
	s.mu.Lock()
	t := s.app.access[token]
	s.mu.Unlock()
	if r.Method != http.MethodGet || t == nil || t.portal == 0 || time.Now().After(t.expires) {
		writeError(w, http.StatusNotFound, "OBJECT_NOT_FOUND", "The access token is expired or invalid")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"token": token, "user": "owner@example.com", "user_id": 7,
		"hub_domain": "portal-" + strconv.FormatInt(t.portal, 10) + ".hubspot.com", "hub_id": t.portal,
		"app_id": s.app.app.ID, "scopes": t.scopes, "expires_in": int64(time.Until(t.expires) / time.Second),
		"token_type": "access", "is_private_distribution": false})
}

// bearer is the live access token of the request, or a 401 written.
func (s *Server) bearer(w http.ResponseWriter, r *http.Request) (*accessToken, bool) {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	t := s.app.access[tok]
	s.mu.Unlock()
	switch {
	case t == nil:
		writeError(w, http.StatusUnauthorized, "INVALID_AUTHENTICATION", "Authentication credentials not found.")
		return nil, false
	case time.Now().After(t.expires):
		writeError(w, http.StatusUnauthorized, "EXPIRED_AUTHENTICATION", "The OAuth token used to make this call expired.")
		return nil, false
	}
	return t, true
}
