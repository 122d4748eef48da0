package main

import (
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/internal/oidctest"
	"github.com/tidemark/tidemark/internal/testdb"
)

// What the README's "Single sign-on" leaves for its reader to fill in.
const (
	readmeOIDCIssuer = "https://acme.okta.com"
	readmeOIDCClient = "0oa1b2c3d4e5f6g7h8i9"
	readmeConsoleURL = "https://tidemark.acme.example"
)

// TestReadmeSSO runs the README's "Single sign-on" against a real OpenID
// provider (internal/oidctest): each block runs in bash with the
// provider's issuer (with --allow-private) and the server's address filled
// in and prints what the README shows; a person of the mapped group then
// signs in through the provider to the workspace the rule gives, and one
// of no mapped group is refused.
func TestReadmeSSO(t *testing.T) {
	e2e.Require(t, "the go command and bash (the test builds tidemark and runs the README's SSO section)")
	t.Parallel()
	steps := tourSteps(codeBlocks(readmeSection(t, "Single sign-on")))
	if len(steps) != 3 {
		t.Fatalf("the section has %d steps, want sso set and two sso map", len(steps))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addr().String()
	l.Close()
	idp := oidctest.Start(t)
	const secret = "oidc-client-secret-from-the-provider"
	idp.AddClient(oidctest.Client{ID: readmeOIDCClient, Secret: secret, RedirectURIs: []string{base + "/login/sso/callback"}})
	idp.AddUser(oidctest.User{Subject: "ada", Username: "ada", Password: "pw", Email: "ada@acme.example", EmailVerified: true,
		Groups: []string{"revops"}})
	idp.AddUser(oidctest.User{Subject: "bob", Username: "bob", Password: "pw", Email: "bob@acme.example", EmailVerified: true,
		Groups: []string{"sales"}})

	dbURL := testdb.NewURL(t)
	exe := buildTidemark(t)
	dir := t.TempDir()
	env := append(serverEnv(dbURL, testEncryptionKey), "OIDC_CLIENT_SECRET="+secret,
		"PATH="+filepath.Dir(exe)+string(os.PathListSeparator)+os.Getenv("PATH"))
	fill := strings.NewReplacer(readmeOIDCIssuer, idp.Issuer(), readmeConsoleURL, base)
	shell := bashIn(t, dir, env, secret)
	shell("tidemark tenant create acme")
	for i, step := range steps {
		commands := fill.Replace(step.commands)
		if strings.Contains(commands, "sso set") {
			commands += " --allow-private" // a test provider on loopback, as the flag's usage says
		}
		if got, want := shell(commands), fill.Replace(step.printed); printedLines(got) != printedLines(want) {
			t.Errorf("step %d printed another result than the README's:\n%s\ngot:\n%s\nwant:\n%s", i+1, step.commands, got, want)
		}
	}

	startChildIn(t, dir, exe, env, listening, "serve", "--addr", strings.TrimPrefix(base, "http://"), "--metrics-addr", "127.0.0.1:0")
	if at, body := ssoSignIn(t, base, idp, "ada"); at != "/t/acme" {
		t.Errorf("ada of revops ended at %s, want the acme workspace:\n%s", at, body)
	}
	if _, body := ssoSignIn(t, base, idp, "bob"); !strings.Contains(body, "None of your groups gives access") {
		t.Errorf("bob of no mapped group was not refused:\n%s", body)
	}
}

var formRequestID = regexp.MustCompile(`name="authRequestID" value="([^"]+)"`)

// ssoSignIn follows "Sign in with" from the console to the provider's form,
// signs in there as user and follows the redirects back; it returns the
// path it ended at and the page.
func ssoSignIn(t *testing.T, base string, idp *oidctest.Provider, user string) (string, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	read := func(resp *http.Response, err error) (*http.Response, string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	_, form := read(c.Get(base + "/login/sso"))
	m := formRequestID.FindStringSubmatch(form)
	if m == nil {
		t.Fatalf("no sign-in form at the provider:\n%s", form)
	}
	resp, body := read(c.PostForm(idp.URL()+"/login", url.Values{"authRequestID": {m[1]}, "username": {user}, "password": {"pw"}}))
	return resp.Request.URL.Path, body
}
