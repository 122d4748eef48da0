package pull_test

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
)

const (
	token  = "pat-na1-11111111-2222-3333-4444-555555555555"
	secret = "9F8E7D6C5B4A3210FEDCBA9876543210"
)

// TestCheckCompletes: what each API takes is accepted and completed with
// the defaults (API version, half the budget).
func TestCheckCompletes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		api  pull.API
		in   pull.Credentials
		want pull.Credentials
	}{
		{"token", pull.TokenAPI, pull.Credentials{Token: token},
			pull.Credentials{Token: token, BudgetShare: 0.5}},
		{"token at a test server", pull.TokenAPI, pull.Credentials{Token: token, BaseURL: " http://127.0.0.1:8080 ", AllowPrivate: true, BudgetShare: 0.2},
			pull.Credentials{Token: token, BaseURL: "http://127.0.0.1:8080", AllowPrivate: true, BudgetShare: 0.2}},
		{"client credentials", pull.ClientCredentialsAPI,
			pull.Credentials{ClientID: " 3MVG9abc ", ClientSecret: secret, LoginURL: "https://acme.my.salesforce.com"},
			pull.Credentials{ClientID: "3MVG9abc", ClientSecret: secret, LoginURL: "https://acme.my.salesforce.com", APIVersion: "v62.0", BudgetShare: 0.5}},
		{"client credentials, another version, all the budget", pull.ClientCredentialsAPI,
			pull.Credentials{ClientID: "3MVG9abc", ClientSecret: secret, LoginURL: "https://acme.my.salesforce.com", APIVersion: "v59.0", BudgetShare: 1},
			pull.Credentials{ClientID: "3MVG9abc", ClientSecret: secret, LoginURL: "https://acme.my.salesforce.com", APIVersion: "v59.0", BudgetShare: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.in.Check("crm", tc.api)
			if err != nil || got != tc.want {
				t.Fatalf("Check: %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestCheckRefuses: each missing or misplaced piece is refused as invalid
// with a message naming it, and never with a secret's value.
func TestCheckRefuses(t *testing.T) {
	t.Parallel()
	sf := pull.Credentials{ClientID: "3MVG9abc", ClientSecret: secret, LoginURL: "https://acme.my.salesforce.com"}
	with := func(edit func(*pull.Credentials)) pull.Credentials {
		c := sf
		edit(&c)
		return c
	}
	for _, tc := range []struct {
		name string
		api  pull.API
		in   pull.Credentials
		want string
	}{
		{"a kind without an API", pull.NoAPI, pull.Credentials{Token: token}, "provider kind crm has no API to pull from"},
		{"no token", pull.TokenAPI, pull.Credentials{}, "the access token is required"},
		{"a token with a space", pull.TokenAPI, pull.Credentials{Token: token + " x"}, "one line without spaces"},
		{"a token with client fields", pull.TokenAPI, pull.Credentials{Token: token, ClientID: "x"}, "take no client id"},
		{"a token with an API version", pull.TokenAPI, pull.Credentials{Token: token, APIVersion: "v62.0"}, "take no client id, client secret, login URL or API version"},
		{"a base URL over http", pull.TokenAPI, pull.Credentials{Token: token, BaseURL: "http://api.example.com"}, "API base URL must use https"},
		{"a relative base URL", pull.TokenAPI, pull.Credentials{Token: token, BaseURL: "api.example.com"}, "API base URL must be an absolute https URL"},
		{"a base URL with a password", pull.TokenAPI, pull.Credentials{Token: token, BaseURL: "https://u:p@api.example.com"}, "must not contain a user name or password"},
		{"no client id", pull.ClientCredentialsAPI, with(func(c *pull.Credentials) { c.ClientID = "" }), "a client id is required"},
		{"no client secret", pull.ClientCredentialsAPI, with(func(c *pull.Credentials) { c.ClientSecret = "" }), "the client secret is required"},
		{"no login URL", pull.ClientCredentialsAPI, with(func(c *pull.Credentials) { c.LoginURL = "" }), "a login URL is required"},
		{"a login URL over http", pull.ClientCredentialsAPI, with(func(c *pull.Credentials) { c.LoginURL = "http://acme.my.salesforce.com" }), "login URL must use https"},
		{"a bad API version", pull.ClientCredentialsAPI, with(func(c *pull.Credentials) { c.APIVersion = "62" }), `API version must look like v62.0, got "62"`},
		{"a token with client credentials", pull.ClientCredentialsAPI, with(func(c *pull.Credentials) { c.Token = token }), "take no access token or API base URL"},
		{"a base URL with client credentials", pull.ClientCredentialsAPI, with(func(c *pull.Credentials) { c.BaseURL = "https://x.example.com" }), "take no access token or API base URL"},
		{"a negative budget", pull.ClientCredentialsAPI, with(func(c *pull.Credentials) { c.BudgetShare = -0.1 }), "above 0% and at most 100%, got -10%"},
		{"more than the budget", pull.TokenAPI, pull.Credentials{Token: token, BudgetShare: 1.5}, "got 150%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.in.Check("crm", tc.api)
			if domain.ErrorCode(err) != domain.EINVALID || !strings.Contains(domain.ErrorMessage(err), tc.want) {
				t.Fatalf("Check: %v, want invalid with %q", err, tc.want)
			}
			if msg := err.Error(); strings.Contains(msg, token) || strings.Contains(msg, secret) {
				t.Fatalf("the refusal repeats a secret: %q", msg)
			}
		})
	}
}

// TestSummaryWithoutSecrets: the summary the audit log and the command
// line show names the secret, never its value.
func TestSummaryWithoutSecrets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   pull.Credentials
		want string
	}{
		{pull.Credentials{Token: token, BaseURL: "http://127.0.0.1:9", AllowPrivate: true, BudgetShare: 0.25},
			"access token; API base URL http://127.0.0.1:9; private addresses allowed; at most 25% of the API budget"},
		{pull.Credentials{ClientID: "3MVG9abc", ClientSecret: secret, LoginURL: "https://acme.my.salesforce.com", APIVersion: "v62.0"},
			"client id 3MVG9abc; client secret; login URL https://acme.my.salesforce.com; API version v62.0; at most 50% of the API budget"},
	} {
		if got := tc.in.Summary(); got != tc.want {
			t.Errorf("Summary %q, want %q", got, tc.want)
		}
	}
}

func TestShareFromPercent(t *testing.T) {
	t.Parallel()
	if got, err := pull.ShareFromPercent(50); err != nil || got != 0.5 {
		t.Errorf("50%%: %v, %v", got, err)
	}
	for _, p := range []float64{0, -5, 100.5} {
		if _, err := pull.ShareFromPercent(p); domain.ErrorCode(err) != domain.EINVALID {
			t.Errorf("%v%%: %v, want invalid", p, err)
		}
	}
}
