package domain

import (
	"slices"
	"strings"
	"testing"
)

// TestNewAppCheck: an app's form takes HubSpot's URLs by default and its
// scopes sorted once each; each malformed field is EINVALID with a
// message naming it, never repeating the secret.
func TestNewAppCheck(t *testing.T) {
	t.Parallel()
	const secret = "3f1c2d3e-4a5b-6c7d-8e9f-0a1b2c3d4e5f"
	valid := NewApp{Kind: AppKindHubSpot, Name: "tidemark", ProviderAppID: 4242, ClientID: "cid", ClientSecret: secret,
		Scopes: []string{"oauth", "crm.objects.contacts.read", "oauth"}}
	got, err := valid.Check()
	if err != nil {
		t.Fatal(err)
	}
	if got.AuthorizeURL != DefaultHubSpotAuthorizeURL || got.APIBaseURL != DefaultHubSpotAPIBaseURL ||
		!slices.Equal(got.Scopes, []string{"crm.objects.contacts.read", "oauth"}) {
		t.Fatalf("checked %+v", got)
	}
	private := valid
	private.AllowPrivate, private.APIBaseURL = true, "http://127.0.0.1:9"
	if _, err := private.Check(); err != nil {
		t.Fatalf("http with private addresses allowed: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*NewApp)
		want   string
	}{
		{"kind", func(n *NewApp) { n.Kind = "zendesk" }, `app kind "zendesk" is not known`},
		{"name", func(n *NewApp) { n.Name = "-x" }, `app "-x" must be 1-63 characters`},
		{"app id", func(n *NewApp) { n.ProviderAppID = 0 }, "the app id must be"},
		{"client id", func(n *NewApp) { n.ClientID = "a b" }, "the client id is required"},
		{"short secret", func(n *NewApp) { n.ClientSecret = "short" }, "the client secret must be one line"},
		{"secret with a space", func(n *NewApp) { n.ClientSecret = secret + " x" }, "the client secret must be one line"},
		{"scope", func(n *NewApp) { n.Scopes = []string{"a b"} }, `scope "a b" must be`},
		{"http", func(n *NewApp) { n.AuthorizeURL = "http://app.example/oauth" }, "the authorize URL must use https"},
		{"relative", func(n *NewApp) { n.APIBaseURL = "/api" }, "the API base URL must be an absolute https URL"},
		{"query", func(n *NewApp) { n.APIBaseURL = "https://api.example/?a=1" }, "must have no user name, password, query or fragment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := valid
			tc.change(&n)
			_, err := n.Check()
			if ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), secret) {
				t.Fatalf("%v, want EINVALID with %q", err, tc.want)
			}
		})
	}
}
