package secretkeys_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres/internal/pg"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
	"github.com/tidemark/tidemark/postgres/secretkeys"
)

// TestRekeyAppSecrets: apps' client secrets (one in its grace after a
// rotation) and an install's tokens are counted by the start-up check
// under the key they are sealed with, and by the check of a new sealing
// key; rekey moves them under the first key, bound to their app or
// install, so that with the old key dropped every app still verifies with
// its secrets and the tokens still open.
func TestRekeyAppSecrets(t *testing.T) {
	t.Parallel()
	ctx := pgtest.AsCLI(context.Background())
	pool := testdb.New(t)
	old, _ := keyStore(t, pool, pgtest.Key)
	tn, err := old.CreateTenant(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	hub, err := old.ConnectProvider(ctx, tn.ID, "hub", domain.AppKindHubSpot, "hubspot-client-secret-0123456789", nil)
	if err != nil {
		t.Fatal(err)
	}
	create := func(name, secret string) domain.App {
		t.Helper()
		app, err := old.CreateApp(ctx, domain.NewApp{Kind: domain.AppKindHubSpot, Name: name, ProviderAppID: 7,
			ClientID: "client", ClientSecret: secret})
		if err != nil {
			t.Fatal(err)
		}
		return app
	}
	a := create("a", "first-secret-of-a")
	b := create("b", "first-secret-of-b")
	if _, err := old.RotateAppSecret(ctx, "b", "second-secret-of-b"); err != nil {
		t.Fatal(err)
	}
	in, err := old.ConnectPortal(ctx, "a", 1001, tn.ID, hub.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The install flow's tokens (a later part of issue 44), sealed as it
	// will seal them.
	const tokens = `{"refresh_token":"r-0123","access_token":"a-4567"}`
	oldKeys, err := pg.NewKeyring([][]byte{pgtest.Key})
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := oldKeys.SealAppInstallTokens(tn.ID, in.ID, tokens)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE app_installs SET tokens_key_id = $2, tokens_aad_version = $3, tokens_ciphertext = $4
		WHERE id = $1`, in.ID, sealed.KeyID, sealed.AADVersion, sealed.Ciphertext); err != nil {
		t.Fatal(err)
	}

	newOnly, _ := keyStore(t, pool, otherKey)
	err = newOnly.CheckSecrets(ctx)
	if err == nil || !strings.Contains(err.Error(), "key id "+keyID(t, pgtest.Key)+
		" (1 active secrets of 1 providers, 3 client secrets of 2 apps, 1 tokens of 1 app installs)") {
		t.Fatalf("check with only the new key: %v, want the old key id with the apps' and installs' counts", err)
	}
	if _, err := newOnly.CreateApp(ctx, domain.NewApp{Kind: domain.AppKindHubSpot, Name: "c", ProviderAppID: 7,
		ClientID: "client", ClientSecret: "first-secret-of-c"}); domain.ErrorCode(err) != domain.ECONFLICT ||
		!strings.Contains(err.Error(), "3 client secrets of 2 apps") {
		t.Fatalf("an app sealed under a key no secret in use is under: %v, want ECONFLICT counting the apps' secrets", err)
	}
	both, _ := keyStore(t, pool, otherKey, pgtest.Key)
	if n, err := both.RekeySecrets(ctx, 2); err != nil || n != (secretkeys.Rekeyed{Providers: 1, Apps: 3, AppInstalls: 1}) {
		t.Fatalf("rekey: %+v, %v; want 1 provider secret, 3 app secrets and 1 install's tokens", n, err)
	}
	if n, err := both.RekeySecrets(ctx, 2); err != nil || n != (secretkeys.Rekeyed{}) {
		t.Fatalf("second rekey: %+v, %v; want 0", n, err)
	}
	if err := newOnly.CheckSecrets(ctx); err != nil {
		t.Fatalf("check with only the new key after rekey: %v", err)
	}
	for _, tc := range []struct {
		id   int64
		want []string
	}{{a.ID, []string{"first-secret-of-a"}}, {b.ID, []string{"second-secret-of-b", "first-secret-of-b"}}} {
		got, err := newOnly.AppSecrets(ctx, tc.id)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Fatalf("app %d after rekey, with only the new key: %d secrets (%v), want the %d it was given", tc.id, len(got), err, len(tc.want))
		}
	}
	newKeys, err := pg.NewKeyring([][]byte{otherKey})
	if err != nil {
		t.Fatal(err)
	}
	var s pg.SealedSecret
	if err := pool.QueryRow(ctx, `SELECT tenant_id, id, id, tokens_key_id, tokens_aad_version, tokens_ciphertext FROM app_installs`).
		Scan(&s.TenantID, &s.ProviderID, &s.ID, &s.KeyID, &s.AADVersion, &s.Ciphertext); err != nil {
		t.Fatal(err)
	}
	if got, err := newKeys.Open(s); err != nil || got != tokens {
		t.Fatalf("the install's tokens after rekey, with only the new key: %v", err)
	}
}
