package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/internal/testdb"
)

const (
	firstKey  = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	secondKey = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA="
)

// serveBriefly runs serve with env until it listens, then stops it. It
// reports whether it listened, and the error it returned otherwise.
func serveBriefly(t *testing.T, env map[string]string) (listened bool, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, nil, &out, &errOut)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(out.String(), "listening on") {
		select {
		case err := <-done:
			return false, errOut.String(), err
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve neither started nor refused:\n%s", errOut.String())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve stopped with %v", err)
	}
	return true, errOut.String(), nil
}

// TestNoKeyWithDatabaseURL: against a database of its own, a command that
// writes a secret refuses to run without TIDEMARK_ENCRYPTION_KEY, says how
// to make one, and makes none; commands that never touch secrets work.
// It changes the working directory, so it cannot run in parallel.
func TestNoKeyWithDatabaseURL(t *testing.T) {
	t.Chdir(t.TempDir())
	env := map[string]string{"DATABASE_URL": testdb.NewURL(t)}

	for _, args := range [][]string{{"migrate"}, {"tenant", "create", "acme"}, {"token", "create", "--tenant", "acme"}, {"cleanup"}} {
		if _, _, err := tidemark(t, env, "", args...); err != nil {
			t.Fatalf("%v without a key: %v", args, err)
		}
	}
	if _, _, err := tidemark(t, env, "pass phrase\n", "user", "create", "--email", "ops@example.com", "--password-stdin"); err != nil {
		t.Fatalf("user create without a key: %v", err)
	}
	for _, args := range [][]string{
		{"provider", "create", "--tenant", "acme", "--name", "crm", "--kind", "standard"},
		{"secrets", "rekey"},
	} {
		_, _, err := tidemark(t, env, "", args...)
		if err == nil || !strings.Contains(err.Error(), "TIDEMARK_ENCRYPTION_KEY is not set") || !strings.Contains(err.Error(), "openssl rand -base64 32") {
			t.Errorf("%v without a key: %v, want a refusal saying how to create the key", args, err)
		}
	}
	if listened, _, err := serveBriefly(t, env); listened || err == nil || !strings.Contains(err.Error(), "TIDEMARK_ENCRYPTION_KEY is not set") {
		t.Errorf("serve without a key: listened %v, %v", listened, err)
	}
	if _, err := os.Stat(keyFile); !os.IsNotExist(err) {
		t.Errorf("%s: %v, want no key file made for a database of its own", keyFile, err)
	}
	if out, _, err := tidemark(t, env, "", "token", "create", "--tenant", "acme"); err != nil || !strings.HasPrefix(lastLine(out), "tmk_") {
		t.Errorf("the refused provider create left a trace: %v", err)
	}
}

// TestServeChecksKeys: serve refuses to start without the key its secrets,
// of providers (their API credentials too) and of destinations, are stored
// under and names it; after
// rekey with both keys, the new key alone serves.
func TestServeChecksKeys(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	env := map[string]string{"DATABASE_URL": url, "TIDEMARK_ENCRYPTION_KEY": firstKey}
	for _, args := range [][]string{{"tenant", "create", "acme"},
		{"provider", "create", "--tenant", "acme", "--name", "crm", "--kind", "standard"},
		{"provider", "create", "--tenant", "acme", "--name", "shop", "--kind", "shippo"},
		{"destination", "create", "--tenant", "acme", "--url", "https://203.0.113.5/hook"},
		{"provider", "create", "--tenant", "acme", "--name", "hub", "--kind", "hubspot", "--secret", "hubspot-client-secret-0123456789"}} {
		if _, _, err := tidemark(t, env, "", args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	// The API credentials' secret is sealed with the same keys.
	if _, _, err := tidemark(t, env, "pat-na1-serve-checks-keys\n", "provider", "update", "--tenant", "acme", "--provider", "hub", "--api-token-stdin"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var stored string
	if err := conn.QueryRow(context.Background(), `SELECT DISTINCT key_id FROM provider_secrets`).Scan(&stored); err != nil {
		t.Fatal(err)
	}

	second := map[string]string{"DATABASE_URL": url, "TIDEMARK_ENCRYPTION_KEY": secondKey}
	listened, _, err := serveBriefly(t, second)
	if listened || err == nil || !strings.Contains(err.Error(), "key id "+stored+" (3 active secrets of 3 providers, 1 active secrets of 1 destinations, 1 API credentials of 1 providers)") {
		t.Fatalf("serve with another key: listened %v, %v; want a refusal naming key id %s", listened, err, stored)
	}

	both := map[string]string{"DATABASE_URL": url, "TIDEMARK_ENCRYPTION_KEY": secondKey + ", " + firstKey}
	for _, want := range []string{"re-encrypted 3 provider secrets and 1 destination secrets\nre-encrypted 1 provider API credentials\n",
		"re-encrypted 0 provider secrets and 0 destination secrets\n"} {
		if out, _, err := tidemark(t, both, "", "secrets", "rekey"); err != nil || out != want {
			t.Fatalf("secrets rekey: %v, %q; want %q", err, out, want)
		}
	}
	if listened, stderr, err := serveBriefly(t, second); !listened {
		t.Fatalf("serve with the new key after rekey: %v\n%s", err, stderr)
	}

	bad := map[string]string{"DATABASE_URL": url, "TIDEMARK_ENCRYPTION_KEY": secondKey + ",not-a-key"}
	if _, _, err := tidemark(t, bad, "", "tenant", "create", "globex"); err == nil || !strings.Contains(err.Error(), "key 2 is not the base64 of 32 bytes") {
		t.Fatalf("a malformed second key: %v", err)
	}
}
