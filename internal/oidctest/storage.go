package oidctest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/subtle"
	"errors"
	"slices"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

const accessTokenLifetime = time.Hour

// errNotSupported answers the grants and endpoints this provider leaves out.
var errNotSupported = errors.New("oidctest: not supported")

// storage is the provider's whole state: the op.Storage the op package
// reads, plus the users, IdP sessions and login count the login page uses.
type storage struct {
	loginURL string // where op sends the browser to sign in

	mu           sync.Mutex
	clients      map[string]Client
	users        map[string]User   // by subject
	usernames    map[string]string // username to subject
	keys         []*signingKey     // keys[0] signs; the rest are still published
	authRequests map[string]*authRequest
	codes        map[string]string // code to auth request id
	accessTokens map[string]accessToken
	sessions     map[string]session // by cookie value
	logins       int
}

type accessToken struct {
	subject string
	scopes  []string
	expires time.Time
}

// session is a browser's sign-in at the IdP, named by its cookie.
type session struct {
	subject  string
	authTime time.Time
}

func newStorage(loginURL string) (*storage, error) {
	key, err := newSigningKey()
	if err != nil {
		return nil, err
	}
	return &storage{
		loginURL:     loginURL,
		clients:      map[string]Client{},
		users:        map[string]User{},
		usernames:    map[string]string{},
		keys:         []*signingKey{key},
		authRequests: map[string]*authRequest{},
		codes:        map[string]string{},
		accessTokens: map[string]accessToken{},
		sessions:     map[string]session{},
	}, nil
}

func (s *storage) CreateAuthRequest(_ context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	// The op checks a code_verifier only when a challenge was sent, so
	// refusing requests without one is what makes PKCE mandatory.
	if req.CodeChallenge == "" || req.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return nil, oidc.ErrInvalidRequest().WithDescription("PKCE with code_challenge_method S256 is required")
	}
	ar := &authRequest{
		id:           rand.Text(),
		clientID:     req.ClientID,
		redirectURI:  req.RedirectURI,
		state:        req.State,
		nonce:        req.Nonce,
		scopes:       slices.Clone(req.Scopes),
		responseType: req.ResponseType,
		responseMode: req.ResponseMode,
		prompt:       slices.Clone(req.Prompt),
		maxAge:       req.MaxAge,
		codeChallenge: &oidc.CodeChallenge{
			Challenge: req.CodeChallenge,
			Method:    req.CodeChallengeMethod,
		},
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authRequests[ar.id] = ar
	return ar.copy(), nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	ar, ok := s.authRequest(id)
	if !ok {
		return nil, errors.New("oidctest: unknown auth request")
	}
	return ar, nil
}

func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	id, ok := s.codes[code]
	s.mu.Unlock()
	if !ok {
		return nil, errors.New("oidctest: unknown or used code")
	}
	return s.AuthRequestByID(ctx, id)
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

// DeleteAuthRequest runs once the code was exchanged, which makes codes single use.
func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.authRequests, id)
	for code, requestID := range s.codes {
		if requestID == id {
			delete(s.codes, code)
		}
	}
	return nil
}

func (s *storage) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	id := rand.Text()
	expires := time.Now().Add(accessTokenLifetime)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accessTokens[id] = accessToken{subject: req.GetSubject(), scopes: req.GetScopes(), expires: expires}
	return id, expires, nil
}

func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, oidc.ErrUnsupportedGrantType().WithDescription("refresh tokens are not supported")
}

func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, oidc.ErrUnsupportedGrantType().WithDescription("refresh tokens are not supported")
}

// TerminateSession serves the end_session endpoint: the user's IdP sessions end.
func (s *storage) TerminateSession(_ context.Context, userID, _ string) error {
	s.endSessions(userID)
	return nil
}

func (s *storage) RevokeToken(_ context.Context, tokenOrTokenID, _, _ string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.accessTokens, tokenOrTokenID)
	return nil
}

func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	return s.signingKey(), nil
}

func (s *storage) signingKey() *signingKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[0]
}

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]op.Key, len(s.keys))
	for i, k := range s.keys {
		keys[i] = publicKey{k}
	}
	return keys, nil
}

func (s *storage) GetClientByClientID(_ context.Context, clientID string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[clientID]
	if !ok {
		return nil, errors.New("oidctest: unknown client")
	}
	return opClient{client: c, loginURL: s.loginURL}, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, clientID, clientSecret string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[clientID]
	if !ok || subtle.ConstantTimeCompare([]byte(c.Secret), []byte(clientSecret)) != 1 {
		return errors.New("oidctest: unknown client or wrong secret")
	}
	return nil
}

// SetUserinfoFromScopes is left empty as the op package asks;
// SetUserinfoFromRequest fills the ID token instead.
func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

// SetUserinfoFromRequest fills the ID token's user claims when it is minted,
// so a SetGroups shows in the next token.
func (s *storage) SetUserinfoFromRequest(_ context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	return s.setUserinfo(info, req.GetSubject(), scopes)
}

// SetUserinfoFromToken serves the userinfo endpoint.
func (s *storage) SetUserinfoFromToken(_ context.Context, info *oidc.UserInfo, tokenID, subject, _ string) error {
	s.mu.Lock()
	token, ok := s.accessTokens[tokenID]
	s.mu.Unlock()
	if !ok || token.subject != subject || time.Now().After(token.expires) {
		return errors.New("oidctest: unknown or expired access token")
	}
	return s.setUserinfo(info, subject, token.scopes)
}

func (s *storage) setUserinfo(info *oidc.UserInfo, subject string, scopes []string) error {
	s.mu.Lock()
	u, ok := s.users[subject]
	s.mu.Unlock()
	if !ok {
		return errors.New("oidctest: unknown user")
	}
	info.Subject = u.Subject
	if slices.Contains(scopes, oidc.ScopeEmail) {
		info.Email = u.Email
		// oidc.UserInfo omits a false email_verified; an RP must see it said.
		info.AppendClaims("email_verified", u.EmailVerified)
	}
	if slices.Contains(scopes, oidc.ScopeProfile) {
		info.PreferredUsername = u.Username
	}
	info.AppendClaims("groups", append([]string{}, u.Groups...))
	return nil
}

func (s *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errNotSupported
}

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errNotSupported
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errNotSupported
}

func (s *storage) Health(context.Context) error { return nil }

// authRequest returns a copy of the auth request, so the op reads a value
// the login page cannot change under it.
func (s *storage) authRequest(id string) (*authRequest, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ar, ok := s.authRequests[id]
	if !ok {
		return nil, false
	}
	return ar.copy(), true
}

// completeAuthRequest marks the auth request signed in by subject.
func (s *storage) completeAuthRequest(id, subject string, authTime time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ar, ok := s.authRequests[id]; ok {
		ar.subject, ar.authTime, ar.done = subject, authTime, true
	}
}

// checkPassword returns the user with this username and password.
func (s *storage) checkPassword(username, password string) (User, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[s.usernames[username]]
	if !ok || subtle.ConstantTimeCompare([]byte(u.Password), []byte(password)) != 1 {
		return User{}, false
	}
	return u, true
}

// startSession records a successful interactive login and returns the
// session's cookie value.
func (s *storage) startSession(subject string, authTime time.Time) string {
	id := rand.Text()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[id] = session{subject: subject, authTime: authTime}
	s.logins++
	return id
}

// liveSession returns the session named by the cookie value if its user still exists.
func (s *storage) liveSession(id string) (session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[id]
	if !ok {
		return session{}, false
	}
	_, known := s.users[sess.subject]
	return sess, known
}

func (s *storage) endSessions(subject string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, sess := range s.sessions {
		if sess.subject == subject {
			delete(s.sessions, id)
		}
	}
}

// signingKey is an RSA key; it signs as op.SigningKey and is published through publicKey.
type signingKey struct {
	id      string
	private *rsa.PrivateKey
}

func newSigningKey() (*signingKey, error) {
	private, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return &signingKey{id: rand.Text(), private: private}, nil
}

func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *signingKey) Key() any                                    { return k.private }
func (k *signingKey) ID() string                                  { return k.id }

type publicKey struct{ *signingKey }

func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.private.PublicKey }
