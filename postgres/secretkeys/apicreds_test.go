package secretkeys_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
	"github.com/tidemark/tidemark/postgres/secretkeys"
)

// TestRekeyAPICredentials: the start-up check counts providers' API
// credentials under the old key; rekey moves them under the first key with
// the signing secrets, so that with the old key dropped the backfill still
// reads the token it was given. One it cannot open is left and reported.
func TestRekeyAPICredentials(t *testing.T) {
	t.Parallel()
	ctx := pgtest.AsCLI(context.Background())
	pool := testdb.New(t)
	old, _ := keyStore(t, pool, pgtest.Key)
	p := pgtest.Provider(t, old, "acme", "crm")
	hub, err := old.ConnectProvider(ctx, p.TenantID, "hub", "hubspot", "hubspot-client-secret-0123456789", nil)
	if err != nil {
		t.Fatal(err)
	}
	const token = "pat-na1-rekey-me"
	if err := old.SetAPICredentials(ctx, p.TenantID, hub.ID, pull.Credentials{Token: token, BudgetShare: 0.5}); err != nil {
		t.Fatal(err)
	}

	newOnly, _ := keyStore(t, pool, otherKey)
	err = newOnly.CheckSecrets(ctx)
	if err == nil || !strings.Contains(err.Error(), "key id "+keyID(t, pgtest.Key)+" (2 active secrets of 2 providers, 1 API credentials of 1 providers)") {
		t.Fatalf("check with only the new key: %v, want the old key id with the API credentials counted", err)
	}
	if _, _, err := newOnly.APICredentials(ctx, p.TenantID, hub.ID); err == nil || strings.Contains(err.Error(), token) {
		t.Fatalf("read with only the new key: %v, want an error without the token", err)
	}
	if n, err := newOnly.RekeySecrets(ctx, 10); err == nil || n != (secretkeys.Rekeyed{}) ||
		!strings.Contains(err.Error(), "some provider API secrets were left as they were: 1 under key id "+keyID(t, pgtest.Key)) {
		t.Fatalf("rekey without the old key: %+v, %v", n, err)
	}

	both, _ := keyStore(t, pool, otherKey, pgtest.Key)
	if n, err := both.RekeySecrets(ctx, 1); err != nil || n != (secretkeys.Rekeyed{Providers: 2, APICredentials: 1}) {
		t.Fatalf("rekey: %+v, %v; want 2 provider secrets and 1 API credential", n, err)
	}
	if n, err := both.RekeySecrets(ctx, 1); err != nil || n != (secretkeys.Rekeyed{}) {
		t.Fatalf("second rekey: %+v, %v; want 0", n, err)
	}
	if err := newOnly.CheckSecrets(ctx); err != nil {
		t.Fatalf("check with only the new key after rekey: %v", err)
	}
	got, ok, err := newOnly.APICredentials(ctx, p.TenantID, hub.ID)
	if err != nil || !ok || got.Token != token {
		t.Fatalf("after rekey, with only the new key: ok %v, %v, the token read back %v", ok, err, got.Token == token)
	}
}
