package console

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/alexedwards/scs/v2"

	"github.com/tidemark/tidemark/domain/identity"
	"github.com/tidemark/tidemark/web/httpx"
)

// Console sessions end after SessionIdle without a request from the
// operator (background polling does not count) and SessionLifetime after
// sign-in, whatever happens in between; a single sign-on session ends
// after the setup's session length instead (sso.go).
const (
	SessionIdle     = time.Hour
	SessionLifetime = 12 * time.Hour
)

// Session keys of the session's own clock, in Unix seconds.
const (
	sessionSignedIn = "signed_in_at"
	sessionSeen     = "seen_at"
)

// seenEvery is how stale the last-seen time may be before a request
// writes it again, so that browsing does not write the session store on
// every click.
const seenEvery = time.Minute

// pollHeader marks the console's background refreshes (static/js/app.js).
const pollHeader = "X-Tidemark-Poll"

// maxConsoleBody caps every console form post.
const maxConsoleBody = 64 << 10

// Session cookie names: the __Host- prefix makes the browser insist on
// Secure, path / and no Domain, so no other host can plant or read it.
const (
	cookieName      = "__Host-tidemark_session"
	cookieNamePlain = "tidemark_session"
)

// newSessions keeps sessions in store. The session's deadline is the
// lifetime (the store forgets it then); idleness is judged by
// loadSession, which knows which requests the operator made.
func newSessions(store scs.Store) *scs.SessionManager {
	m := scs.New()
	m.Store = store
	m.Lifetime = max(SessionLifetime, identity.MaxSSOSessionLength)
	return m
}

// loadSession is scs's LoadAndSave with the cookie chosen per request
// (see sessionCookie) and the session ended once idle or too old. Only a
// request the operator made moves the idle deadline: one carrying
// pollHeader leaves the session as it was.
func (h *Handler) loadSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Cookie")
		cookie := h.sessionCookie(r)
		var token string
		if c, err := r.Cookie(cookie.Name); err == nil {
			token = c.Value
		}
		ctx, err := h.sessions.Load(r.Context(), token)
		if err != nil {
			httpx.InternalError(h.log, w, r, err)
			return
		}
		r = r.WithContext(ctx)
		if err := h.expireSession(r); err != nil {
			httpx.InternalError(h.log, w, r, err)
			return
		}
		sw := &sessionWriter{ResponseWriter: w, save: func() { h.saveSession(w, r, cookie) }}
		next.ServeHTTP(sw, r)
		sw.commit()
	})
}

// expireSession destroys a signed-in session past its idle or total limit,
// and otherwise notes the operator's activity.
func (h *Handler) expireSession(r *http.Request) error {
	ctx := r.Context()
	if h.sessions.GetInt64(ctx, sessionUserID) == 0 {
		return nil
	}
	now := h.now()
	signedIn := time.Unix(h.sessions.GetInt64(ctx, sessionSignedIn), 0)
	seen := time.Unix(h.sessions.GetInt64(ctx, sessionSeen), 0)
	sso := h.sessions.GetInt64(ctx, sessionSSOUntil) != 0
	switch {
	case now.Sub(seen) >= SessionIdle || !sso && now.Sub(signedIn) >= SessionLifetime:
		return h.sessions.Destroy(ctx)
	case h.ssoSessionOver(r, now):
		return h.endSSOSession(r)
	case r.Header.Get(pollHeader) == "" && now.Sub(seen) >= seenEvery:
		h.sessions.Put(ctx, sessionSeen, now.Unix())
	}
	return nil
}

// startSession signs operator id in on a new session token, which defeats
// session fixation.
func (h *Handler) startSession(r *http.Request, id int64) error {
	ctx := r.Context()
	if err := h.sessions.RenewToken(ctx); err != nil {
		return err
	}
	now := h.now().Unix()
	h.sessions.Put(ctx, sessionUserID, id)
	h.sessions.Put(ctx, sessionSignedIn, now)
	h.sessions.Put(ctx, sessionSeen, now)
	return nil
}

// saveSession stores a changed session and sends its cookie, or clears
// the cookie of a destroyed one.
func (h *Handler) saveSession(w http.ResponseWriter, r *http.Request, cookie http.Cookie) {
	switch h.sessions.Status(r.Context()) {
	case scs.Modified:
		token, _, err := h.sessions.Commit(r.Context())
		if err != nil {
			h.log.ErrorContext(r.Context(), "save console session", "method", r.Method, "path", r.URL.Path, "err", err)
			return
		}
		cookie.Value = token
	case scs.Destroyed:
		cookie.MaxAge = -1
	default:
		return
	}
	http.SetCookie(w, &cookie)
	w.Header().Add("Cache-Control", `no-cache="Set-Cookie"`)
}

// sessionCookie is the session cookie for r, without its value. It is
// Secure, with the __Host- prefix, unless the console is served over plain
// HTTP on a loopback address (no https public URL, no TLS, no trusted
// proxy saying X-Forwarded-Proto: https, and the connection arrived on a
// loopback address), where a browser could not send a Secure cookie back.
// It lasts as long as the browser session.
func (h *Handler) sessionCookie(r *http.Request) http.Cookie {
	c := http.Cookie{Name: cookieName, Path: "/", HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode}
	if !h.httpsPublic && r.TLS == nil && !httpx.ForwardedHTTPS(r) && arrivedOnLoopback(r) {
		c.Name, c.Secure = cookieNamePlain, false
	}
	return c
}

// arrivedOnLoopback reports whether r came in on a loopback address of
// this host.
func arrivedOnLoopback(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	addr, err := netip.ParseAddrPort(local.String())
	return err == nil && addr.Addr().Unmap().IsLoopback()
}

// sessionWriter saves the session just before the answer's header goes
// out, as scs does, since the cookie is a header.
type sessionWriter struct {
	http.ResponseWriter
	save  func()
	saved bool
}

func (w *sessionWriter) commit() {
	if !w.saved {
		w.saved = true
		w.save()
	}
}

func (w *sessionWriter) WriteHeader(code int) {
	w.commit()
	w.ResponseWriter.WriteHeader(code)
}

func (w *sessionWriter) Write(b []byte) (int, error) {
	w.commit()
	return w.ResponseWriter.Write(b)
}

func (w *sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// limitConsoleBody answers 413 to a console post over maxConsoleBody, and
// parses the form of the others so that no handler reads more.
func limitConsoleBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		tooLarge := func() {
			w.Header().Set("Connection", "close")
			http.Error(w, "The form is larger than 64 KiB.", http.StatusRequestEntityTooLarge)
		}
		if r.ContentLength > maxConsoleBody {
			tooLarge()
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxConsoleBody)
		if err := r.ParseForm(); err != nil {
			if maxErr := (*http.MaxBytesError)(nil); errors.As(err, &maxErr) {
				tooLarge()
				return
			}
			http.Error(w, "The form could not be read.", http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}
