package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/internal/testdb"
)

// TestProviderUpdateAPICredentials: provider update sets a HubSpot
// provider's token and a Salesforce provider's client credentials from
// standard input, prints what it set without the secret, stores it sealed,
// clears it, and refuses each wrong or missing piece with a message saying
// which, storing nothing.
func TestProviderUpdateAPICredentials(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	env := map[string]string{"DATABASE_URL": url, "TIDEMARK_ENCRYPTION_KEY": testEncryptionKey}
	for _, args := range [][]string{{"tenant", "create", "acme"},
		{"provider", "create", "--tenant", "acme", "--name", "crm", "--kind", "standard"},
		{"provider", "create", "--tenant", "acme", "--name", "hub", "--kind", "hubspot", "--secret", "hubspot-client-secret-0123456789"},
		{"provider", "create", "--tenant", "acme", "--name", "sf", "--kind", "salesforce", "--org-id", testOrgID}} {
		if _, _, err := tidemark(t, env, "", args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	const token, clientSecret = "pat-na1-cli-token-0123456789", "CLIENTSECRET0123456789ABCDEF"
	var printed strings.Builder
	update := func(stdin, provider string, args ...string) (string, error) {
		t.Helper()
		out, errOut, err := tidemark(t, env, stdin, append([]string{"provider", "update", "--tenant", "acme", "--provider", provider}, args...)...)
		printed.WriteString(out + errOut)
		if err != nil {
			printed.WriteString(err.Error())
		}
		return out, err
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	stored := func() string {
		t.Helper()
		var rows string
		if err := conn.QueryRow(context.Background(), `SELECT coalesce(string_agg(c::text, E'\n'), '') FROM provider_api_credentials c`).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		return rows
	}

	// Refusals first: nothing is stored by any of them.
	for _, tc := range []struct {
		name, provider, stdin string
		args                  []string
		want                  string
	}{
		{"nothing to change", "hub", "", nil, "nothing to change"},
		{"no secret on stdin", "hub", "", []string{"--api-token-stdin"}, "no access token on standard input"},
		{"an empty first line", "hub", "\n" + token, []string{"--api-token-stdin"}, "the first line of standard input is empty"},
		{"both secrets", "hub", token, []string{"--api-token-stdin", "--client-secret-stdin"}, "not both"},
		{"client id without its secret", "sf", "", []string{"--client-id", "3MVG9abc", "--login-url", "https://203.0.113.5"}, "--client-id with --client-secret-stdin"},
		{"a kind without an API", "crm", token, []string{"--api-token-stdin"}, "provider kind standard has no API to pull from"},
		{"a token for salesforce", "sf", token, []string{"--api-token-stdin"}, "take no access token"},
		{"client credentials for hubspot", "hub", clientSecret, []string{"--client-id", "x", "--client-secret-stdin", "--login-url", "https://203.0.113.5"}, "take no client id"},
		{"no login URL", "sf", clientSecret, []string{"--client-id", "3MVG9abc", "--client-secret-stdin"}, "a login URL is required"},
		{"a bad API version", "sf", clientSecret, []string{"--client-id", "3MVG9abc", "--client-secret-stdin", "--login-url", "https://203.0.113.5", "--api-version", "62"}, "API version must look like v62.0"},
		{"a budget over 100%", "hub", token, []string{"--api-token-stdin", "--api-budget", "150"}, "--api-budget: the share of the API budget must be above 0% and at most 100%, got 150%"},
		{"a loopback base URL", "hub", token, []string{"--api-token-stdin", "--api-base-url", "https://127.0.0.1:8443"}, "API base URL: host 127.0.0.1 is a loopback address"},
		{"a private login URL", "sf", clientSecret, []string{"--client-id", "3MVG9abc", "--client-secret-stdin", "--login-url", "https://10.0.0.8"}, "pass --allow-private"},
		{"an http login URL", "sf", clientSecret, []string{"--client-id", "3MVG9abc", "--client-secret-stdin", "--login-url", "http://203.0.113.5"}, "login URL must use https"},
		{"clear with other flags", "hub", "", []string{"--clear-api-credentials", "--api-budget", "20"}, "--clear-api-credentials takes no --api-budget"},
		{"clear when none", "hub", "", []string{"--clear-api-credentials"}, "provider hub has no API credentials to clear"},
		{"an unknown provider", "nothing", token, []string{"--api-token-stdin"}, "not found"},
	} {
		if _, err := update(tc.stdin, tc.provider, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if rows := stored(); rows != "" {
		t.Fatalf("refused updates stored %s", rows)
	}

	out, err := update(token+"\n", "hub", "--api-token-stdin", "--api-base-url", "http://127.0.0.1:8080", "--allow-private", "--api-budget", "25")
	if err != nil || !strings.Contains(out, "set the API credentials of acme/hub: access token; API base URL http://127.0.0.1:8080; "+
		"private addresses allowed; at most 25% of the API budget") {
		t.Fatalf("set hubspot's token: %v\n%s", err, out)
	}
	out, err = update("  "+clientSecret+"  \r\n", "sf", "--client-id", "3MVG9abc", "--client-secret-stdin", "--login-url", "https://203.0.113.5")
	if err != nil || !strings.Contains(out, "set the API credentials of acme/sf: client id 3MVG9abc; client secret; "+
		"login URL https://203.0.113.5; API version v62.0; at most 50% of the API budget") {
		t.Fatalf("set salesforce's client credentials: %v\n%s", err, out)
	}
	// Limits and credentials in one command.
	out, err = update(token, "hub", "--api-token-stdin", "--max-future-skew", "90s")
	if err != nil || !strings.Contains(out, "set the API credentials of acme/hub: access token; at most 50%") || !strings.Contains(out, "max future skew: 1m30s") {
		t.Fatalf("set with a limit: %v\n%s", err, out)
	}
	rows := stored()
	if strings.Count(rows, "\n") != 1 || strings.Contains(rows, token) || strings.Contains(rows, clientSecret) ||
		!strings.Contains(rows, "3MVG9abc") {
		t.Fatalf("stored rows, want two without a secret in clear:\n%s", rows)
	}

	if out, err := update("", "sf", "--clear-api-credentials"); err != nil || !strings.Contains(out, "cleared the API credentials of acme/sf") {
		t.Fatalf("clear: %v\n%s", err, out)
	}
	if rows := stored(); strings.Contains(rows, "3MVG9abc") || strings.Count(rows, "\n") != 0 {
		t.Fatalf("after clearing sf:\n%s", rows)
	}
	if strings.Contains(printed.String(), token) || strings.Contains(printed.String(), clientSecret) {
		t.Fatalf("the command printed a secret:\n%s", printed.String())
	}
}
