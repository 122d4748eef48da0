package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/internal/testdb"
)

// TestProviderSecretsStayUnderTheKeyInUse is the review's M6: `provider
// rotate` with a fresh random key succeeded, stored an active secret that
// no serve could open, and made every serve with the right key refuse to
// start; `provider retire` then kept that undecryptable secret. Rotate and
// create refuse another key unless --new-key is given, and retire keeps
// the newest secret that decrypts.
func TestProviderSecretsStayUnderTheKeyInUse(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	first := map[string]string{"DATABASE_URL": url, "TIDEMARK_ENCRYPTION_KEY": firstKey}
	fresh := map[string]string{"DATABASE_URL": url, "TIDEMARK_ENCRYPTION_KEY": secondKey}
	for _, args := range [][]string{{"tenant", "create", "acme"},
		{"provider", "create", "--tenant", "acme", "--name", "crm", "--kind", "standard"}} {
		if _, _, err := tidemark(t, first, "", args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	activeKeys := func() string {
		t.Helper()
		var keys string
		if err := conn.QueryRow(context.Background(), `SELECT coalesce(string_agg(key_id, ',' ORDER BY id), '')
FROM provider_secrets WHERE retired_at IS NULL`).Scan(&keys); err != nil {
			t.Fatal(err)
		}
		return keys
	}
	inUse := activeKeys()

	for _, args := range [][]string{
		{"provider", "rotate", "--tenant", "acme", "--name", "crm"},
		{"provider", "create", "--tenant", "acme", "--name", "shop", "--kind", "shippo"},
	} {
		out, _, err := tidemark(t, fresh, "", args...)
		if err == nil || !strings.Contains(err.Error(), "key id "+inUse+" (1 active secrets of 1 providers)") ||
			!strings.Contains(err.Error(), "--new-key") || strings.Contains(out, "whsec_") {
			t.Fatalf("%v with another key: %v\n%s; want a refusal naming key id %s and --new-key", args, err, out, inUse)
		}
	}
	if got := activeKeys(); got != inUse {
		t.Fatalf("the refusals stored secrets: active keys %s", got)
	}

	out, _, err := tidemark(t, fresh, "", "provider", "rotate", "--tenant", "acme", "--name", "crm", "--new-key")
	if err != nil || !strings.Contains(out, "whsec_") {
		t.Fatalf("rotate --new-key: %v\n%s", err, out)
	}
	newKey := strings.TrimPrefix(activeKeys(), inUse+",")
	if newKey == inUse || newKey == "" {
		t.Fatalf("rotate --new-key stored under %q", activeKeys())
	}
	// With the key in use, retire keeps the secret that key opens, not the
	// newest one, which it cannot.
	if out, _, err := tidemark(t, first, "", "provider", "retire", "--tenant", "acme", "--name", "crm"); err != nil ||
		!strings.Contains(out, "retired 1 secret(s)") {
		t.Fatalf("retire: %v\n%s", err, out)
	}
	if got := activeKeys(); got != inUse {
		t.Fatalf("retire kept the secret under key %s; want the one under %s, which decrypts", got, inUse)
	}
}

// TestDestinationSecretsStayUnderTheKeyInUse is review 4's M7: `destination
// create` and `destination rotate` sealed with whatever key
// TIDEMARK_ENCRYPTION_KEY held first, so a wrong key succeeded and made
// every serve with the right key refuse to start. They refuse it as the
// provider commands do, unless --new-key, and the check counts destination
// secrets too: with only a destination secret stored, a provider created
// under another key is refused as well.
func TestDestinationSecretsStayUnderTheKeyInUse(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	first := map[string]string{"DATABASE_URL": url, "TIDEMARK_ENCRYPTION_KEY": firstKey}
	fresh := map[string]string{"DATABASE_URL": url, "TIDEMARK_ENCRYPTION_KEY": secondKey}
	for _, args := range [][]string{{"tenant", "create", "acme"},
		{"destination", "create", "--tenant", "acme", "--url", "https://203.0.113.5/hook"}} {
		if out, _, err := tidemark(t, first, "", args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	keys := func() string {
		t.Helper()
		var keys string
		if err := conn.QueryRow(context.Background(), `SELECT coalesce(string_agg(key_id, ',' ORDER BY id), '')
FROM destination_secrets WHERE expires_at IS NULL`).Scan(&keys); err != nil {
			t.Fatal(err)
		}
		return keys
	}
	inUse := keys()

	for _, args := range [][]string{
		{"destination", "rotate", "--tenant", "acme", "--id", "1"},
		{"destination", "create", "--tenant", "acme", "--url", "https://203.0.113.5/other"},
		{"provider", "create", "--tenant", "acme", "--name", "crm", "--kind", "standard"},
	} {
		out, _, err := tidemark(t, fresh, "", args...)
		if err == nil || !strings.Contains(err.Error(), "key id "+inUse+" (1 active secrets of 1 destinations)") ||
			!strings.Contains(err.Error(), "--new-key") || strings.Contains(out, "whsec_") {
			t.Fatalf("%v with another key: %v\n%s; want a refusal naming key id %s and --new-key", args, err, out, inUse)
		}
	}
	if got := keys(); got != inUse {
		t.Fatalf("the refusals stored secrets: keys %s", got)
	}
	out, _, err := tidemark(t, fresh, "", "destination", "rotate", "--tenant", "acme", "--id", "1", "--new-key")
	if err != nil || !strings.Contains(out, "whsec_") {
		t.Fatalf("rotate --new-key: %v\n%s", err, out)
	}
	if got := keys(); got == inUse || got == "" {
		t.Fatalf("rotate --new-key stored under %q", got)
	}
	if out, _, err := tidemark(t, fresh, "", "destination", "create", "--tenant", "acme", "--url", "https://203.0.113.5/other"); err != nil {
		t.Fatalf("create once the new key is in use: %v\n%s", err, out)
	}
}
