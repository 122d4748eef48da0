package oidctest

import (
	"html/template"
	"net/http"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html>
<head><meta charset="utf-8"><title>Sign in · oidctest</title></head>
<body>
<h1>Sign in</h1>
{{if .Error}}<p id="error" role="alert">{{.Error}}</p>{{end}}
<form method="post" action="` + loginPath + `">
<input type="hidden" name="authRequestID" value="{{.AuthRequestID}}">
<label for="username">Username</label>
<input id="username" name="username" autocomplete="username" value="{{.Username}}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password">
<button id="submit" type="submit">Sign in</button>
</form>
</body>
</html>
`))

type loginForm struct {
	AuthRequestID, Username, Error string
}

// serveLogin is where the op sends the browser to sign in. A live IdP session
// signs in without the form; prompt=none without one answers login_required.
func (p *Provider) serveLogin(w http.ResponseWriter, r *http.Request) {
	id := r.FormValue("authRequestID")
	ar, ok := p.store.authRequest(id)
	if !ok {
		http.Error(w, "unknown or finished auth request", http.StatusBadRequest)
		return
	}
	switch {
	case ar.done:
		p.finishLogin(w, r, id)
	case r.Method == http.MethodPost:
		p.checkLogin(w, r, id)
	case r.Method != http.MethodGet:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	default:
		p.resumeSession(w, r, ar)
	}
}

func (p *Provider) resumeSession(w http.ResponseWriter, r *http.Request, ar *authRequest) {
	if c, err := r.Cookie(p.cookieName); err == nil {
		if sess, ok := p.store.liveSession(c.Value); ok && ar.acceptsSession(sess.authTime) {
			p.store.completeAuthRequest(ar.id, sess.subject, sess.authTime)
			p.finishLogin(w, r, ar.id)
			return
		}
	}
	if ar.promptNone() {
		_ = p.store.DeleteAuthRequest(r.Context(), ar.id)
		op.AuthRequestError(w, r, ar, oidc.ErrLoginRequired(), p.op)
		return
	}
	p.showForm(w, loginForm{AuthRequestID: ar.id})
}

func (p *Provider) checkLogin(w http.ResponseWriter, r *http.Request, id string) {
	username := r.PostFormValue("username")
	u, ok := p.store.checkPassword(username, r.PostFormValue("password"))
	if !ok {
		p.showForm(w, loginForm{AuthRequestID: id, Username: username, Error: "Wrong username or password."})
		return
	}
	now := time.Now()
	http.SetCookie(w, &http.Cookie{
		Name:     p.cookieName,
		Value:    p.store.startSession(u.Subject, now),
		Path:     "/",
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
	})
	p.store.completeAuthRequest(id, u.Subject, now)
	p.finishLogin(w, r, id)
}

// finishLogin hands the signed-in auth request back to the op, which
// redirects to the client with a code.
func (p *Provider) finishLogin(w http.ResponseWriter, r *http.Request, id string) {
	http.Redirect(w, r, op.AuthCallbackURL(p.op)(r.Context(), id), http.StatusSeeOther)
}

func (p *Provider) showForm(w http.ResponseWriter, form loginForm) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := loginPage.Execute(w, form); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}
