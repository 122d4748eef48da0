package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/internal/pull/hubspot/hubspottest"
	"github.com/tidemark/tidemark/internal/testdb"
)

// TestBackfillCommand: with a HubSpot provider's token set, tidemark
// backfill pulls the contacts modified in --since from the API, prints how
// many changes the webhooks had missed and each outcome, and pulled again
// finds only duplicates. Its errors name what is wrong, never the token.
func TestBackfillCommand(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	env := map[string]string{"DATABASE_URL": url, "TIDEMARK_ENCRYPTION_KEY": testEncryptionKey}
	api := hubspottest.New(t)
	for _, args := range [][]string{{"tenant", "create", "acme"},
		{"provider", "create", "--tenant", "acme", "--name", "hub", "--kind", "hubspot", "--secret", "hubspot-client-secret-0123456789"}} {
		if _, _, err := tidemark(t, env, "", args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	_, _, err := tidemark(t, env, "", "backfill", "--tenant", "acme", "--provider", "hub")
	if err == nil || !strings.Contains(err.Error(), "has no API credentials") {
		t.Fatalf("a backfill without credentials: %v", err)
	}
	if _, _, err := tidemark(t, env, api.Token(), "provider", "update", "--tenant", "acme", "--provider", "hub",
		"--api-token-stdin", "--api-base-url", api.URL(), "--allow-private"); err != nil {
		t.Fatal(err)
	}
	// Without a scope there is nothing to pull: said, with nothing printed
	// as if something had been pulled.
	out, _, err := tidemark(t, env, "", "backfill", "--tenant", "acme", "--provider", "hub")
	if err == nil || !strings.Contains(err.Error(), "no scopes yet") || out != "" {
		t.Fatalf("a backfill without scopes: %v, printed %q", err, out)
	}
	// The scope a first webhook would have created.
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `INSERT INTO scopes (tenant_id, provider_id, object_type, action)
		SELECT t.id, p.id, 'contact', 'propertyChange' FROM tenants t JOIN providers p ON p.tenant_id = t.id WHERE t.slug = 'acme'`); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Hour)
	api.Create("contact", at, map[string]string{"email": "ann@example.com"})
	api.Create("contact", at.Add(time.Minute), map[string]string{"email": "bo@example.com"})

	out, errOut, err := tidemark(t, env, "", "backfill", "--tenant", "acme", "--provider", "hub", "--since", "2h")
	if err != nil {
		t.Fatalf("backfill: %v\n%s", err, errOut)
	}
	// Each contact: its creation and its email.
	for _, want := range []string{"pulled 4 events of contact in 1 delivery; 4 changes webhooks had missed\n", "applied            4\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("backfill printed %q, want %q", out, want)
		}
	}
	out, _, err = tidemark(t, env, "", "backfill", "--tenant", "acme", "--provider", "hub", "--since", "2h")
	if err != nil || !strings.Contains(out, "; 0 changes webhooks had missed\nduplicate          4\n") {
		t.Errorf("pulled again: %q, %v; want 4 duplicates", out, err)
	}
	_, errOut, err = tidemark(t, env, "", "backfill", "--tenant", "acme", "--provider", "hub", "--object-type", "deal")
	if err == nil || !strings.Contains(err.Error(), `no scope of object type "deal"; its object types: contact`) {
		t.Errorf("an object type without a scope: %v", err)
	}
	if strings.Contains(out+errOut, api.Token()) {
		t.Error("the token was printed")
	}
}
