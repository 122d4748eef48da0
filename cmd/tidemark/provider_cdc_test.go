package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/internal/testdb"
)

// TestProviderUpdateCDC: provider update turns a Salesforce provider's
// Change Data Capture on (its connected app set first) and off, keeping
// the channel and address it does not change; it refuses another kind, a
// provider without a connected app, contradicting flags, a bad channel and
// a private Pub/Sub address without --allow-private; every change is
// audited as provider_update.
func TestProviderUpdateCDC(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	env := map[string]string{"DATABASE_URL": url, "TIDEMARK_ENCRYPTION_KEY": testEncryptionKey}
	for _, args := range [][]string{{"tenant", "create", "acme"},
		{"provider", "create", "--tenant", "acme", "--name", "crm", "--kind", "standard"},
		{"provider", "create", "--tenant", "acme", "--name", "sf", "--kind", "salesforce", "--org-id", testOrgID}} {
		if _, _, err := tidemark(t, env, "", args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	update := func(provider string, args ...string) (string, error) {
		t.Helper()
		out, _, err := tidemark(t, env, "", append([]string{"provider", "update", "--tenant", "acme", "--provider", provider}, args...)...)
		return out, err
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	stream := func() string {
		t.Helper()
		var row string
		err := conn.QueryRow(context.Background(), `SELECT coalesce(string_agg(format('%s %s %s %s', enabled, channel,
			coalesce(pubsub_address, '-'), allow_private), E'\n'), '') FROM cdc_streams`).Scan(&row)
		if err != nil {
			t.Fatal(err)
		}
		return row
	}
	for _, tc := range []struct {
		name, provider string
		args           []string
		want           string
	}{
		{"another kind", "crm", []string{"--cdc"}, "Change Data Capture is Salesforce's"},
		{"no connected app", "sf", []string{"--cdc"}, "no connected app credentials"},
		{"on and off", "sf", []string{"--cdc", "--no-cdc"}, "not both"},
		{"a channel without --cdc", "sf", []string{"--no-cdc", "--cdc-channel", "/data/ChangeEvents"}, "go with --cdc"},
		{"a bad channel", "sf", []string{"--cdc", "--cdc-channel", "/event/Thing__e"}, "the channel must be"},
		{"an address without a port", "sf", []string{"--cdc", "--pubsub-url", "pubsub.example.com"}, "host:port"},
	} {
		if _, err := update(tc.provider, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if got := stream(); got != "" {
		t.Fatalf("refusals stored %q", got)
	}
	if _, _, err := tidemark(t, env, "CLIENTSECRET0123456789ABCDEF\n", "provider", "update", "--tenant", "acme", "--provider", "sf",
		"--client-id", "3MVG9abc", "--client-secret-stdin", "--login-url", "http://127.0.0.1:9", "--allow-private"); err != nil {
		t.Fatal(err)
	}
	if _, err := update("sf", "--cdc", "--pubsub-url", "127.0.0.1:7443"); err == nil || !strings.Contains(err.Error(), "pass --allow-private") {
		t.Fatalf("a private Pub/Sub address: %v", err)
	}
	out, err := update("sf", "--cdc", "--cdc-channel", "/data/Sales__chn", "--pubsub-url", "127.0.0.1:7443", "--allow-private")
	if err != nil || out != "Change Data Capture on for acme/sf: channel /data/Sales__chn at 127.0.0.1:7443\n" {
		t.Fatalf("on: %q, %v", out, err)
	}
	if out, err := update("sf", "--no-cdc"); err != nil || out != "Change Data Capture off for acme/sf\n" {
		t.Fatalf("off: %q, %v", out, err)
	}
	if _, err := update("sf", "--cdc"); err != nil {
		t.Fatal(err)
	}
	if got := stream(); got != "t /data/Sales__chn 127.0.0.1:7443 t" {
		t.Fatalf("stream %q: on again with its channel and address", got)
	}
	var audited int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE action = 'provider_update'
		AND summary LIKE 'Change Data Capture%'`).Scan(&audited); err != nil || audited != 3 {
		t.Fatalf("%d provider_update entries of CDC, want 3: %v", audited, err)
	}
}
